import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "@commerce/shared/platform/logger";
import { NatsLink } from "@commerce/shared/platform/nats";
import { testNatsUrl, unique } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { AppliedAnswerer } from "./applied-answer";

const quiet = createLogger("error", {}, () => {});
let api: ApiHarness;
let nats: NatsLink;
let answerer: AppliedAnswerer;

beforeAll(async () => {
  api = await startApi();
  nats = new NatsLink(testNatsUrl, "applied-answer-test", quiet);
  await nats.start();
  answerer = new AppliedAnswerer({ sql: api.sql, topology: api.deps.topology, logger: quiet });
  answerer.listen(nats.nc);
});
afterAll(async () => {
  answerer.stop();
  await nats.close();
  await api.close();
});

/** Asks as payments does, and reads the answer. */
async function ask(question: unknown) {
  const reply = await nats.nc?.request(
    api.deps.topology.appliedQuery,
    typeof question === "string" ? question : JSON.stringify(question),
    { timeout: 5_000 },
  );
  return reply?.json<Record<string, unknown>>();
}

describe("the api's answer to payments' anti-entropy question", () => {
  test("B2: the api names the asked notifications it recorded as processed, whatever their outcome, and only those", async () => {
    const [paid, reviewed, never] = [unique("n"), unique("n"), unique("n")];
    await api.sql`
      insert into api.processed_notifications (notification_id, order_id, outcome)
      values (${paid}, 1, 'paid'), (${reviewed}, 1, 'unknown_order')`;
    const answer = await ask({ ids: [paid, reviewed, never] });
    const applied = (answer?.applied ?? []) as string[];
    expect(applied.sort()).toEqual([paid, reviewed].sort());
  });

  test("B2: a malformed question gets an error, never an empty list that would read as nothing applied", async () => {
    for (const question of ["not json", {}, { ids: [] }, { ids: [""] }, { ids: [1] }])
      expect(await ask(question)).toEqual({ error: "malformed question" });
    const tooMany = Array.from({ length: 501 }, (_, i) => `n${i}`);
    expect(await ask({ ids: tooMany })).toEqual({ error: "malformed question" });
  });
});
