import { deadOutboxDetail, deadOutboxList } from "@commerce/shared/platform/dead-outbox";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia } from "elysia";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";

/** N10: the api outbox's rows set aside (orders.* messages that cannot be published), for admins. */
export const outboxController = ({ verifyToken, deadOutbox }: ApiDeps) =>
  new Elysia({ prefix: "/api/outbox", detail: { tags: ["Payment reviews"] } })
    .use(auth(verifyToken))
    .get("/dead", async () => ({ items: await deadOutbox() }), {
      auth: "admin",
      response: { 200: deadOutboxList, ...problems(401, 403, 429, 503) },
      detail: deadOutboxDetail,
    });
