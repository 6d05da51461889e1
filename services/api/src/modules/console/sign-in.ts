import { named, problems } from "@commerce/shared/platform/openapi";
import { clientIp, rateLimitKey } from "@commerce/shared/platform/rate-limit";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";
import { createSignInCode, exchangeSignInCode } from "./sign-in-codes";

const signInCode = named(
  "ConsoleSignInCode",
  t.Object({
    code: t.String({ description: "Works once, until expires_at, at POST /console/session" }),
    expires_at: t.String({ format: "date-time" }),
  }),
  { description: "A one-time code that signs the console in as the admin who asked for it" },
);

const bearer = /^Bearer ([^\s]+)$/i;

/**
 * N16: the console's sign-in link carries a one-time code, never the token. An admin (`npm start`)
 * asks for a code standing for their own token; the console's page exchanges it once, within
 * 10 minutes, for the token it keeps in sessionStorage (U2).
 */
export const signInController = ({ db, verifyToken, rejectedLimiter, trustProxy }: ApiDeps) =>
  new Elysia({ name: "console-sign-in" })
    .use(auth(verifyToken))
    .post(
      "/api/console/sign-in-codes",
      async ({ request, set }) => {
        // The auth plugin verified this very header; the code stands for it.
        const token = request.headers.get("authorization")?.match(bearer)?.[1] ?? "";
        set.status = 201;
        return createSignInCode(db, token);
      },
      {
        auth: "admin",
        response: { 201: signInCode, ...problems(401, 403, 429) },
        detail: {
          tags: ["Status"],
          operationId: "createConsoleSignInCode",
          summary: "Make a one-time sign-in code for the console",
          description:
            "A code that signs the operator console in as the caller, once, within 10 minutes " +
            "(`/console#code=<code>`): the link carries no credential that outlives its first " +
            "use. Admin bearer token only.",
        },
      },
    )
    .post("/console/session", ({ body }) => exchangeSignInCode(db, body.code), {
      parse: "json",
      // N21: each exchange, good or bad, costs its address a token of the budget every request
      // without a valid token has (N11), so codes cannot be guessed at speed: 429 when spent.
      transform: ({ request, server }) =>
        rejectedLimiter.take(
          rateLimitKey(clientIp(request, server?.requestIP(request)?.address, trustProxy)),
        ),
      body: t.Object(
        { code: t.String({ minLength: 1, maxLength: 200 }) },
        {
          additionalProperties: false,
          examples: [{ code: "q8W1rZx0cK3mJ5vT9yB2nL6pD4fH7sA0eG1iU3oR5tY" }],
        },
      ),
      response: {
        200: t.Object({ token: t.String() }),
        ...problems(400, 401, 413, 415, 429),
      },
      detail: {
        tags: ["Status"],
        operationId: "exchangeConsoleSignInCode",
        summary: "Exchange a console sign-in code for its token",
        description:
          "The code is the credential (no bearer token): it works once, within 10 minutes of " +
          "its making; else 401. Each exchange counts against the address's request budget " +
          "(RATE_LIMIT_RPS, RATE_LIMIT_BURST): 429 when spent.",
        security: [],
      },
    });
