import type { Sql } from "@commerce/shared/database";

/**
 * drizzle's postgres-js driver sends every query with `prepare: false`, so postgres.js parses it
 * anew and, having parameters, describes it first: two round trips per query. This wraps a client
 * (and the clients of its transactions) so that drizzle's queries become named prepared
 * statements, to measure what preparing them (drizzle's `.prepare()`) would save.
 */
export function preparing(sql: Sql): Sql {
  return new Proxy(sql, {
    get(target, property, receiver) {
      if (property === "unsafe")
        return (query: string, params?: unknown[], options?: object) =>
          target.unsafe(query, params as never, { ...options, prepare: true });
      if (property === "begin")
        return (...args: unknown[]) => {
          const body = args.pop() as (tx: Sql) => unknown;
          return (target.begin as (...a: unknown[]) => unknown)(...args, (tx: Sql) =>
            body(preparing(tx)),
          );
        };
      return Reflect.get(target, property, receiver);
    },
  });
}
