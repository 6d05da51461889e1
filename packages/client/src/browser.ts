import type { App } from "@commerce/api/app";
import type { App as PaymentsApp } from "@commerce/payments/app";
import { treaty } from "@elysiajs/eden";

/**
 * The typed clients that also run in a browser (the console): nothing here needs Node or Bun.
 * Paths, bodies, answers and errors are typed from the apps' own route schemas, so a route change
 * that breaks a caller fails the type check.
 * `apiClient(url, token).api.orders.post({ product_id: 1, qty: 2 })`.
 */
export const apiClient = (baseUrl: string, token?: string) =>
  encodingPathParameters(
    treaty<App>(baseUrl, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
  );

export type ApiClient = ReturnType<typeof apiClient>;

/** The payments service's operator routes (V3), with an admin token. */
export const paymentsClient = (baseUrl: string, token?: string) =>
  encodingPathParameters(
    treaty<PaymentsApp>(baseUrl, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
  );

export type PaymentsClient = ReturnType<typeof paymentsClient>;

/** Eden's own names for the request a path ends in; anything else called is a path parameter. */
const requestMethods = new Set([
  "get",
  "post",
  "put",
  "delete",
  "patch",
  "options",
  "head",
  "connect",
  "subscribe",
]);

/**
 * D3: Eden Treaty writes a path parameter into the URL as given, so
 * `orders({ order_id: "21/../../cart" })` read the cart. This wraps its proxy so every path
 * parameter is percent-encoded as one segment (`21%2F..%2F..%2Fcart`, which the api refuses as
 * not an order id); request calls (`.get()`, `.post(body)`, ...) pass through unchanged. A
 * parameter of `.` or `..` (or empty) is refused with a TypeError: no encoding survives URL
 * parsing there (`%2E%2E` is a dot segment too), and `notifications({ id: "." })` called the
 * list route.
 */
function encodingPathParameters<T extends object>(client: T, last?: string): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const next = Reflect.get(target, property, receiver);
      if (typeof property !== "string" || (typeof next !== "function" && typeof next !== "object"))
        return next;
      return next === null ? next : encodingPathParameters(next, property);
    },
    apply(target, thisArg, args: unknown[]) {
      const [params] = args;
      const isPathParameter =
        !(last && requestMethods.has(last)) &&
        args.length === 1 &&
        typeof params === "object" &&
        params !== null &&
        !Array.isArray(params) &&
        Object.keys(params).length === 1;
      if (!isPathParameter) return Reflect.apply(target as () => unknown, thisArg, args);
      const [[name, value]] = Object.entries(params);
      if (["", ".", ".."].includes(String(value)))
        throw new TypeError(`path parameter ${name} may not be "${String(value)}"`);
      const encoded = { [name]: encodeURIComponent(String(value)) };
      return encodingPathParameters(
        Reflect.apply(target as () => unknown, thisArg, [encoded]) as object,
      );
    },
  });
}
