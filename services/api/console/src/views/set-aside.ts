import { h } from "../dom";
import { time } from "../format";
import { answerOf, api, payments } from "../services";
import { empty, table } from "../ui";

type DeadRow = {
  id: number;
  subject: string;
  message_id: string;
  attempts: number;
  last_error: string | null;
  created_at: string;
  dead_at: string;
};

/** U7: the health line's "Set aside": both services' outbox rows that cannot be published (N10). */
export async function setAsideView() {
  const client = payments();
  const [fromApi, fromPayments] = await Promise.all([
    answerOf(api().api.outbox.dead.get(), "Listing the api's outbox rows set aside"),
    client
      ? answerOf(client.api.outbox.dead.get(), "Listing the payments outbox rows set aside")
      : Promise.resolve(undefined),
  ]);
  const rows = [
    ...fromApi.items.map((row: DeadRow) => ({ ...row, service: "api" })),
    ...(fromPayments?.items ?? []).map((row: DeadRow) => ({ ...row, service: "payments" })),
  ];
  return [
    h("h1", {}, "Messages set aside"),
    h(
      "p",
      { class: "muted" },
      "Outbox messages whose publication failed for a reason that will not change. They are kept, not sent; the runbook (docs/operations.md) says how to repair them.",
    ),
    rows.length
      ? table(
          ["Service", "Subject", "Message", "Attempts", "Error", "Created", "Set aside"],
          rows.map((row) => [
            row.service,
            h("code", {}, row.subject),
            h("code", {}, row.message_id),
            String(row.attempts),
            row.last_error ?? "—",
            time(row.created_at),
            time(row.dead_at),
          ]),
          "Outbox messages set aside",
        )
      : empty("No message is set aside."),
  ];
}
