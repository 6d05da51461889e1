import { describe, expect, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { deleteOldOutboxRows } from "./retention";

const { api } = await apiForFile();

describe("outbox retention (H3)", () => {
  test("H3: published order events older than the retention go, in batches; younger, unpublished and set-aside rows stay", async () => {
    const subject = api.deps.topology.orders.event("paid");
    const id = unique("keep");
    const rows = [
      ["old-published", "31 days", true, false],
      ["old-published-2", "40 days", true, false],
      ["young-published", "29 days", true, false],
      ["old-unpublished", "31 days", false, false],
      ["old-dead", "31 days", false, true],
    ] as const;
    for (const [name, age, published, dead] of rows)
      await api.sql`
        insert into api.outbox (subject, message_id, payload, created_at, published_at, dead_at)
        values (${subject}, ${`${id}-${name}`}, '{}'::jsonb, now() - ${age}::interval,
          case when ${published} then now() - ${age}::interval end,
          case when ${dead} then now() end)`;
    // A batch of 1: the sweep goes on until a batch comes back short.
    expect(await deleteOldOutboxRows(api.sql, 30, 1)).toBeGreaterThanOrEqual(2);
    const left = await api.sql<{ message_id: string }[]>`
      select message_id from api.outbox where message_id like ${`${id}-%`} order by message_id`;
    expect(left.map((row) => row.message_id.slice(id.length + 1))).toEqual([
      "old-dead",
      "old-unpublished",
      "young-published",
    ]);
  });
});
