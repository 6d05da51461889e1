/**
 * E4: which methods a path is served with, from the app's own routes, so that a known path asked
 * with another method answers 405 with `Allow` instead of 404. Read from the app once, on the
 * first request that needs it (every route is registered by then).
 */
export class RouteMethods {
  private table?: Array<{ pattern: RegExp; methods: Set<string> }>;
  private source: () => ReadonlyArray<{ method: string; path: string }> = () => [];

  /** Where the routes come from: the finished app's `routes`. */
  readFrom(source: () => ReadonlyArray<{ method: string; path: string }>) {
    this.source = source;
    this.table = undefined;
  }

  /** The methods that serve `pathname` (raw, as in the request), sorted; empty for an unknown path. */
  allowed(pathname: string): string[] {
    this.table ??= this.build();
    const methods = new Set<string>();
    for (const { pattern, methods: served } of this.table)
      if (pattern.test(pathname)) for (const method of served) methods.add(method);
    return [...methods].sort();
  }

  private build() {
    const byPath = new Map<string, Set<string>>();
    for (const { method, path } of this.source()) {
      if (method === "ALL" || method === "WS") continue;
      const methods = byPath.get(path) ?? new Set<string>();
      methods.add(method.toUpperCase());
      // The server answers HEAD wherever GET is served.
      if (method.toUpperCase() === "GET") methods.add("HEAD");
      byPath.set(path, methods);
    }
    return [...byPath].map(([path, methods]) => ({ pattern: patternOf(path), methods }));
  }
}

/**
 * An Elysia path (`/api/orders/:id`, `/swagger/*`) as a regular expression of raw paths; a group's
 * root route is kept as `/api/payment-reviews/` and served without the slash too.
 */
function patternOf(path: string): RegExp {
  const source = path
    .replace(/(.)\/$/, "$1")
    .split("/")
    .map((segment) => {
      if (segment === "*") return ".*";
      if (segment.startsWith(":")) return "[^/]+";
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return new RegExp(`^${source}/?$`);
}
