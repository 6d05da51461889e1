import { hasBody } from "@commerce/shared/platform/http/body";
import {
  maxPage,
  maxPerPage,
  type PageRequest,
  pageRequestOf,
} from "@commerce/shared/platform/http/paging";
import { problemAnswer, problemOf } from "@commerce/shared/platform/http/problems";
import { headerBytes, headerLimitBytes } from "@commerce/shared/platform/http/request-limits";
import { beginRequest, endRequest } from "@commerce/shared/platform/http/request-log";
import { requestTarget } from "@commerce/shared/platform/http/url-text";
import type { ApiDeps } from "../../deps";
import { maxProductId } from "../../lib/ids";
import { rememberedCallers } from "../auth";
import { getProduct, listProducts } from "./service";

type HotReadDeps = Pick<
  ApiDeps,
  "db" | "verifyToken" | "rateLimiter" | "logger" | "metrics" | "tracer" | "migrated"
>;
/** Where a request this lane does not take goes: the app's own `fetch`. */
type Fallback = (request: Request) => Response | Promise<Response>;

/** A plain decimal integer, as a URL writes it: no sign, no leading zero, no escape. */
const plainInt = /^[1-9][0-9]{0,9}$/;
/** A category that is clean text (N9) without any decoding: unreserved URL characters only. */
const plainText = /^[A-Za-z0-9._~-]{1,100}$/;

const intWithin = (text: string, max: number) => {
  if (!plainInt.test(text)) return undefined;
  const value = Number(text);
  return value <= max ? value : undefined;
};

/** The list's numeric query fields, their limits (`pageQuery`, `productAfter`) and their place. */
const listNumbers: Record<string, { max: number; key: keyof PageRequest } | undefined> = {
  page: { max: maxPage, key: "page" },
  per_page: { max: maxPerPage, key: "perPage" },
  after: { max: maxProductId, key: "after" },
};

/**
 * A list page's query when it is plain: only `category`, `page`, `per_page` and `after`, each at
 * most once, with values valid as they are. Anything else, valid or not, is left to the app.
 */
function plainListQuery(query: string | undefined) {
  let category: string | undefined;
  const paging = pageRequestOf({});
  const seen = new Set<string>();
  for (const pair of query ? query.split("&") : []) {
    const equals = pair.indexOf("=");
    const name = pair.slice(0, equals);
    const value = pair.slice(equals + 1);
    if (equals < 0 || seen.has(name)) return undefined;
    seen.add(name);
    if (name === "category") {
      if (!plainText.test(value)) return undefined;
      category = value;
      continue;
    }
    const field = listNumbers[name];
    const number = field && intWithin(value, field.max);
    if (!number) return undefined;
    paging[field.key] = number;
  }
  return { category, paging };
}

/**
 * The catalogue's two hot reads, one product (P1) and a page of products (P1, P4), answered as
 * Bun routes without Elysia's per-request pipeline, its hooks and the promises between them
 * (issue 30: about a tenth of a product read's CPU, as shipped).
 *
 * Only a plain request takes this lane: the migrations applied, a URL a parser reads (E5),
 * headers within their limit, no body, a path or query whose values are valid as written (no
 * escape to decode), and a token verified before and still remembered (A5). Any other request, valid or not, goes to the app
 * before this lane has done anything, and is answered there as before (400, 401, 431, 503 ...).
 * A request this lane takes meets the same functions the app runs: its id and span (O5, O8), its
 * caller's budget and quota headers (N11, 429), the route's own read, its problem+json errors
 * (404, 503) and its log line and metric sample (O3, O6).
 */
export function hotReads(deps: HotReadDeps, fallback: Fallback) {
  const callers = rememberedCallers(deps.verifyToken, deps.rateLimiter);

  const serve = async (
    request: Request,
    route: string,
    read: () => Promise<unknown>,
  ): Promise<Response> => {
    const principal = callers.find(request);
    if (
      !principal ||
      !deps.migrated() ||
      !URL.canParse(request.url) ||
      hasBody(request) ||
      headerBytes(request.headers) > headerLimitBytes
    )
      return fallback(request);
    const headers: Record<string, string> = {};
    beginRequest(deps.tracer, request, headers);
    let response: Response;
    try {
      callers.admit(request, headers, principal);
      response = Response.json(await read(), { headers });
    } catch (error) {
      response = problemAnswer(problemOf(error, undefined, request, deps), request, headers);
    }
    endRequest(deps, request, route, response.status);
    return response;
  };

  return {
    "/api/products/:id": {
      GET(request: Request) {
        const { path, query } = requestTarget(request.url);
        const id = intWithin(path.slice("/api/products/".length), maxProductId);
        if (query !== undefined || id === undefined) return fallback(request);
        return serve(request, "/api/products/:id", () => getProduct(deps.db, id));
      },
    },
    "/api/products": {
      GET(request: Request) {
        const { path, query } = requestTarget(request.url);
        const list = path === "/api/products" ? plainListQuery(query) : undefined;
        if (!list) return fallback(request);
        return serve(request, "/api/products", () =>
          listProducts(deps.db, list.category, list.paging),
        );
      },
    },
  };
}
