import { MethodNotAllowedError, NotFoundError } from "@commerce/shared/platform/errors";
import { Elysia } from "elysia";
import type { ConsoleAssets } from "../../../console/build";
import { prebuiltConsole } from "./prebuilt";

let assets: Promise<ConsoleAssets> | undefined;

/** The console's files: embedded in the binary, else bundled once from its sources. */
const consoleAssets = () => {
  assets ??= prebuiltConsole
    ? Promise.resolve(prebuiltConsole)
    : import("../../../console/build").then(({ buildConsole }) => buildConsole());
  return assets;
};

/**
 * U1: no inline script or style, nothing from another host; the browser may talk to the api and
 * to the payments service's operator routes (PAYMENTS_PUBLIC_URL) only.
 */
export const consolePolicy = (paymentsOrigin?: string) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self'${paymentsOrigin ? ` ${paymentsOrigin}` : ""}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");

const escapeAttribute = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

/**
 * The operator console at /console (U1-U5): one page for every address under /console (the
 * console routes in the browser) but /console/assets/, its script and style sheet. The page tells the script where
 * the payments service is.
 */
export function consoleController({ paymentsPublicUrl }: { paymentsPublicUrl?: string }) {
  const paymentsOrigin = paymentsPublicUrl ? new URL(paymentsPublicUrl).origin : undefined;
  const paymentsUrl = paymentsPublicUrl?.replace(/\/+$/, "") ?? "";
  const headers = {
    "content-security-policy": consolePolicy(paymentsOrigin),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  const page = async () =>
    new Response(
      (await consoleAssets()).html.replace(
        '<meta name="payments-url" content="" />',
        `<meta name="payments-url" content="${escapeAttribute(paymentsUrl)}" />`,
      ),
      {
        headers: {
          ...headers,
          "content-type": "text/html; charset=utf-8",
          "cache-control": "no-store",
        },
      },
    );
  const asset = (pick: (assets: ConsoleAssets) => string, type: string) => async () =>
    new Response(pick(await consoleAssets()), {
      headers: { ...headers, "content-type": type, "cache-control": "no-cache" },
    });
  const hidden = { detail: { hide: true } };
  return (
    new Elysia({ name: "console" })
      .get(
        "/console/assets/console.js",
        asset((a) => a.js, "text/javascript; charset=utf-8"),
        hidden,
      )
      .get(
        "/console/assets/console.css",
        asset((a) => a.css, "text/css; charset=utf-8"),
        hidden,
      )
      // A file the console does not have is 404 problem+json, not the page (a stale or mistyped
      // script address would otherwise load HTML as a script).
      .get(
        "/console/assets/*",
        ({ params }) => {
          throw new NotFoundError(`The console has no asset ${params["*"]}`);
        },
        hidden,
      )
      // E4: the sign-in exchange (sign-in.ts) takes only POST; it is no page of the console.
      .get(
        "/console/session",
        ({ request }) => {
          throw new MethodNotAllowedError(request.method, ["POST"]);
        },
        hidden,
      )
      .get("/console", page, hidden)
      .get("/console/*", page, hidden)
  );
}
