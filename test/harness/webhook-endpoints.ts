import type { Sql } from "postgres";
import { type Answer, type Received, startWebhookReceiver } from "./webhook-receiver";

/**
 * H7's guards off for the test's receivers, which are on loopback over http; each file adds its
 * own retry schedule and timeout.
 */
export const loopbackWebhooks = { WEBHOOK_ALLOW_HTTP: "1", WEBHOOK_ALLOW_PRIVATE: "1" };

/** What an endpoint's creation answered: a 201's body carries the new endpoint's id. */
export type Created = { status: number; json?: any };

/** The body of `POST /api/webhook-endpoints`. */
export type EndpointBody = { url: string; events: string[]; description?: string };

/** A new endpoint as the 201 shows it, with its secret. */
export type Subscribed = { id: number; secret: string; url: string };

/**
 * The webhook endpoints and receivers a test file makes, so that it leaves none behind: an
 * endpoint left enabled in a shared database gets a delivery of every order any later test moves,
 * and those deliveries pile up and are claimed by other test processes' dispatchers.
 *
 * Every endpoint made goes through it: `subscribe` (through `create`, the api's
 * `POST /api/webhook-endpoints`), `kept` (any answer of such a POST: a 201 is remembered, so an
 * endpoint a test expected refused is deleted too when it was not), `url` (a unique url, before
 * the POST) or `add` (an id inserted by SQL). `clear()` deletes them all and closes the
 * receivers. Call it in an `afterEach`, or in the `afterAll` that stops the api or stack, before it
 * stops: hooks run whether the tests passed or not, but a file's `afterAll` hooks run in the order
 * they were registered, so one of its own after `apiForFile`'s would find the connection closed.
 */
export function webhookEndpoints(
  sql: () => Sql<any>,
  create?: (body: EndpointBody) => Promise<Created>,
) {
  const made = new Set<number>();
  const urls = new Set<string>();
  const receivers: { close(): Promise<void> }[] = [];

  /** Remembers the endpoint a creation made (a 201), to delete it; returns the answer. */
  const kept = <T extends Created>(answer: T): T => {
    if (answer.status === 201 && answer.json?.id !== undefined) made.add(Number(answer.json.id));
    return answer;
  };

  return {
    kept,

    /** Remembers an endpoint made another way (an SQL insert), to delete it; returns its id. */
    add<Id extends number | string>(id: Id): Id {
      made.add(Number(id));
      return id;
    },

    /**
     * Remembers a url of its own (unique) an endpoint is about to be made for, so it goes even if
     * the test stops before it sees the creation's answer; returns the url.
     */
    url(url: string) {
      urls.add(url);
      return url;
    },

    /** Whether endpoint `id` is one of those made here. */
    has: (id: number) => made.has(id),

    /** A receiver on loopback (startWebhookReceiver), closed by `clear()`. */
    async receiver(answer?: (request: Received, n: number) => Answer) {
      const started = await startWebhookReceiver(answer);
      receivers.push(started);
      return started;
    },

    /** An endpoint for `url` through `create`; anything but a 201 fails the test. */
    async subscribe(url: string, events = ["*"], description?: string): Promise<Subscribed> {
      if (!create) throw new Error("webhookEndpoints: subscribe needs `create`");
      const answer = kept(await create({ url, events, description }));
      if (answer.status !== 201)
        throw new Error(`subscribe failed: ${answer.status} ${JSON.stringify(answer.json)}`);
      return answer.json as Subscribed;
    },

    /** Deletes every endpoint made (their deliveries go with them) and closes every receiver. */
    async clear() {
      const [ids, named] = [[...made], [...urls]];
      made.clear();
      urls.clear();
      if (ids.length || named.length)
        await sql()`
          delete from api.webhook_endpoints where id = any(${ids}) or url = any(${named})`;
      for (const receiver of receivers.splice(0)) await receiver.close();
    },
  };
}

export type WebhookEndpoints = ReturnType<typeof webhookEndpoints>;
