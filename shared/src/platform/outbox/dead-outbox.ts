import { Elysia, t } from "elysia";
import type { bearerAuth } from "../auth/bearer-auth";
import { integer } from "../http/fields";
import { named, problems } from "../openapi";
import type { DeadOutboxRow } from "./relay";

/** N10: the operator listing of outbox rows set aside (`GET /api/outbox/dead` on each service). */
export const deadOutboxList = t.Object(
  {
    items: t.Array(
      t.Object({
        id: integer({ description: "The outbox row's id" }),
        subject: t.String({ description: "The NATS subject it was to be published on" }),
        message_id: t.String({ description: "Its Nats-Msg-Id" }),
        attempts: integer({ description: "Publications that failed for the same reason" }),
        last_error: t.Nullable(t.String({ description: "The failure's code, e.g. BAD_HEADER" })),
        created_at: t.String({ format: "date-time" }),
        dead_at: t.String({ format: "date-time", description: "When it was set aside" }),
      }),
    ),
  },
  {
    examples: [
      {
        items: [
          {
            id: 812,
            subject: "payments.order.paid",
            message_id: "evt_3PkR2",
            attempts: 3,
            last_error: "BAD_HEADER",
            created_at: "2026-11-23T20:41:07.112Z",
            dead_at: "2026-11-23T20:41:09.530Z",
          },
        ],
      },
    ],
  },
);

export const deadOutboxDetail = {
  operationId: "listDeadOutboxMessages",
  summary: "List outbox messages set aside",
  description:
    "Messages whose publication failed for a reason that will not change (a malformed header, " +
    "a subject NATS refuses) are set aside after 3 tries, so the rest still go out; newest " +
    "first, at most 100. Admin bearer token only (scope `admin`); a customer token is 403.",
};

// D5: the document's named components.
named("DeadOutboxMessage", deadOutboxList.properties.items.items, {
  description:
    "An outbox message set aside: its publication failed for a reason that will not change",
});
named("DeadOutboxList", deadOutboxList);

export type DeadOutboxSource = (limit?: number) => Promise<DeadOutboxRow[]>;

/**
 * N10: `GET /api/outbox/dead`, admin only, on either service: `guard` is the service's own bearer
 * auth (it brings the `auth` macro), `source` reads its outbox.
 */
export const deadOutboxController = (
  guard: ReturnType<typeof bearerAuth>,
  source: DeadOutboxSource,
  tag: string,
) =>
  new Elysia({ prefix: "/api/outbox", detail: { tags: [tag] } })
    .use(guard)
    .get("/dead", async () => ({ items: await source() }), {
      auth: "admin",
      response: { 200: deadOutboxList, ...problems(401, 403, 429, 503) },
      detail: deadOutboxDetail,
    });
