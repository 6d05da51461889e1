import { deadOutboxController } from "@commerce/shared/platform/outbox/dead-outbox";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";

/** N10: the api outbox's rows set aside (orders.* messages that cannot be published), for admins. */
export const outboxController = ({ verifyToken, deadOutbox }: ApiDeps) =>
  deadOutboxController(auth(verifyToken), deadOutbox, "Status");
