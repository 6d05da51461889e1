import { Elysia } from "elysia";
import faviconPath from "swagger-ui-dist/favicon-32x32.png" with { type: "file" };
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
// Bun embeds each of these files in the compiled binary and gives back its path (D2: no CDN).
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };

const assetsBase = "/swagger/assets";

/** The page's own start-up script: a file, not inline, so a strict Content-Security-Policy fits. */
const initializer = (specPath: string) => `window.onload = () => {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(specPath)},
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    validatorUrl: null,
  });
};
`;

const page = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${title.replace(/[<&"]/g, "")}</title>
  <link rel="icon" type="image/png" href="${assetsBase}/favicon-32x32.png" />
  <link rel="stylesheet" href="${assetsBase}/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${assetsBase}/swagger-ui-bundle.js"></script>
  <script src="${assetsBase}/swagger-initializer.js"></script>
</body>
</html>
`;

/**
 * N13: what every Swagger UI response carries. The page runs only its own scripts and talks only
 * to its own service; no other site may frame it (clickjacking a pasted admin token) and no
 * browser guesses a type other than the one sent.
 */
export const swaggerSecurityHeaders = {
  "content-security-policy": [
    "default-src 'none'",
    "script-src 'self'",
    // Swagger UI sets style attributes as it renders.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
} as const;

/**
 * Swagger UI at `/swagger` (and `/swagger/`), every asset served by the service itself from the
 * pinned swagger-ui-dist, so the page works with no internet access. Paths are absolute, so the
 * page finds its document whichever of the two addresses it was opened at. A pasted token lives
 * as long as the tab (N13: no `persistAuthorization`, which kept it in localStorage).
 */
export function swaggerUi({ title, specPath }: { title: string; specPath: string }) {
  const html = page(title);
  const script = initializer(specPath);
  const asset = (path: string, type: string) => () =>
    new Response(Bun.file(path), {
      headers: {
        "content-type": type,
        "cache-control": "public, max-age=86400",
        ...swaggerSecurityHeaders,
      },
    });
  const hidden = { detail: { hide: true } };
  const pageResponse = () =>
    new Response(html, {
      headers: { "content-type": "text/html; charset=utf-8", ...swaggerSecurityHeaders },
    });
  return new Elysia({ name: "swagger-ui" })
    .get("/swagger", pageResponse, hidden)
    .get("/swagger/", pageResponse, hidden)
    .get(
      `${assetsBase}/swagger-ui-bundle.js`,
      asset(bundlePath, "text/javascript; charset=utf-8"),
      hidden,
    )
    .get(`${assetsBase}/swagger-ui.css`, asset(cssPath, "text/css; charset=utf-8"), hidden)
    .get(`${assetsBase}/favicon-32x32.png`, asset(faviconPath, "image/png"), hidden)
    .get(
      `${assetsBase}/swagger-initializer.js`,
      () =>
        new Response(script, {
          headers: { "content-type": "text/javascript; charset=utf-8", ...swaggerSecurityHeaders },
        }),
      hidden,
    );
}
