import {
  AckPolicy,
  connect,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from "nats";
import { type NatsCredentials, natsServers } from "./config";
import { describeError, type Logger } from "./logger";

export type StreamSpec = {
  name: string;
  subjects: string[];
  /** JetStream replicas (X1, `STREAM_REPLICAS`); default 1. */
  replicas?: number;
};
export type ConsumerSpec = {
  stream: string;
  durable: string;
  filterSubject: string;
  ackWaitMs: number;
};

const setupRetryMaxMs = 30_000;

/**
 * A NATS connection that keeps trying forever: the service starts and serves while NATS is away,
 * and `onConnect` (streams, consumers) runs again after each reconnect, and again with back-off
 * until it succeeds (e.g. a cluster still electing its JetStream leader).
 */
export class NatsLink {
  private connection?: NatsConnection;
  private jetstreamClient?: JetStreamClient;
  private connected = false;
  /** Counts (re)connections, so a retry of an older connection's setup gives way. */
  private setupRound = 0;
  private setupRetry?: ReturnType<typeof setTimeout>;

  constructor(
    /** One URL, or a cluster's comma-separated list (X1). */
    private readonly url: string,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly onConnect: (link: NatsLink) => Promise<void> = async () => {},
    /** User and password or token (N1); `url` never carries them, so logging it is safe. */
    private readonly credentials?: NatsCredentials,
    /**
     * N1: the subject prefix of this connection's reply inboxes (`_INBOX_api`), so that the NATS
     * permissions can let each user receive its own replies and no one else's.
     */
    private readonly inboxPrefix?: string,
  ) {}

  /** Resolves once the first connection is made (or never, if NATS never answers). */
  async start(): Promise<void> {
    this.connection = await connect({
      servers: natsServers(this.url),
      name: this.name,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 5000,
      ...this.credentials,
      ...(this.inboxPrefix ? { inboxPrefix: this.inboxPrefix } : {}),
    });
    this.connected = true;
    this.logger.info("nats connected", { server: this.connection.getServer() });
    await this.runOnConnect();
    void this.watch(this.connection);
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") {
        this.connected = false;
        this.logger.warn("nats disconnected");
      }
      // E.g. a permissions violation (N1): the connection stays up, the refused publish is lost.
      if (status.type === "error")
        this.logger.error("nats error", {
          code: status.data,
          ...status.permissionContext,
        });
      if (status.type === "reconnect") {
        this.connected = true;
        this.logger.info("nats reconnected", { server: nc.getServer() });
        await this.runOnConnect();
      }
    }
  }

  /** Runs `onConnect`; when it fails, logs why and tries again later while still connected. */
  private async runOnConnect(attempt = 0): Promise<void> {
    if (attempt === 0) {
      this.setupRound++;
      clearTimeout(this.setupRetry);
    }
    const round = this.setupRound;
    try {
      await this.onConnect(this);
    } catch (error) {
      const retryInMs = Math.min(setupRetryMaxMs, 1000 * 2 ** attempt);
      this.logger.error("nats setup failed", { ...describeError(error), retry_in_ms: retryInMs });
      this.setupRetry = setTimeout(() => {
        if (round === this.setupRound && this.isUp) void this.runOnConnect(attempt + 1);
      }, retryInMs);
    }
  }

  get isUp(): boolean {
    return this.connected && !!this.connection && !this.connection.isClosed();
  }

  get nc(): NatsConnection | undefined {
    return this.connection;
  }

  /** The connection's JetStream client, made once: making one parses its options each time. */
  jetstream(): JetStreamClient | undefined {
    if (!this.isUp || !this.connection) return undefined;
    this.jetstreamClient ??= this.connection.jetstream();
    return this.jetstreamClient;
  }

  async manager(): Promise<JetStreamManager> {
    if (!this.connection) throw new Error("nats is not connected");
    return this.connection.jetstreamManager();
  }

  /** Drains subscriptions and pending publishes, then closes (O7). */
  async close(): Promise<void> {
    this.connected = false;
    clearTimeout(this.setupRetry);
    const nc = this.connection;
    if (!nc || nc.isClosed()) return;
    await nc.drain().catch(() => nc.close());
  }
}

/**
 * The server refused the stream's replica count (X1): more replicas than a single server (1) or
 * the cluster's JetStream servers can hold. `kept` is the count an existing stream keeps (it
 * works as before); undefined when the stream could not be created.
 */
export class StreamReplicasError extends Error {
  constructor(
    readonly stream: string,
    readonly replicas: number,
    readonly kept: number | undefined,
    cause: unknown,
  ) {
    const now =
      kept === undefined
        ? "it was not created, so nothing is published to it"
        : `it keeps ${kept} replica(s)`;
    super(
      `stream ${stream}: NATS refused STREAM_REPLICAS=${replicas} (${reason(cause)}); ${now}. ` +
        "More than 1 replica needs a NATS cluster with at least that many JetStream servers",
    );
    this.name = "StreamReplicasError";
  }
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));
const notFound = (error: unknown) =>
  (error as { code?: string }).code === "404" || /not found/i.test(String(error));

/**
 * Creates the stream, or updates it to this configuration: safe on every start-up. The replica
 * count is part of it, so raising `STREAM_REPLICAS` on an existing stream (R1 to R3 in a cluster)
 * is an update the server carries out, copying the stream to the new peers.
 */
export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<void> {
  const replicas = spec.replicas ?? 1;
  const config = {
    name: spec.name,
    subjects: spec.subjects,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(30 * 24 * 3600 * 1000),
    duplicate_window: nanos(24 * 3600 * 1000),
    num_replicas: replicas,
  };
  let existing: StreamInfo | undefined;
  try {
    existing = await jsm.streams.info(spec.name);
  } catch (error) {
    if (!notFound(error)) throw error;
  }
  // A server outside a cluster (no `cluster` in the answer) refuses to create an R3 stream but
  // takes an update to R3 (2.9), leaving one copy that claims three: keep it honest at 1.
  if (existing && !existing.cluster && replicas > 1) {
    await jsm.streams.update(spec.name, { ...config, num_replicas: 1 });
    throw new StreamReplicasError(spec.name, replicas, 1, "the server is not in a cluster");
  }
  try {
    if (existing) await jsm.streams.update(spec.name, config);
    else await jsm.streams.add(config);
  } catch (error) {
    const kept = existing?.config.num_replicas;
    if ((kept ?? 1) === replicas) throw error;
    throw new StreamReplicasError(spec.name, replicas, kept, error);
  }
}

/** Creates or updates a durable pull consumer with explicit acks. */
export async function ensureConsumer(jsm: JetStreamManager, spec: ConsumerSpec): Promise<void> {
  const config = {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: spec.filterSubject,
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: -1,
    max_ack_pending: 1000,
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    await jsm.consumers.update(spec.stream, spec.durable, config);
  } catch (error) {
    if ((error as { code?: string }).code !== "404" && !/not found/i.test(String(error)))
      throw error;
    await jsm.consumers.add(spec.stream, config);
  }
}

export type HeldPullOptions = {
  nats: NatsLink;
  stream: string;
  /** The durable pull consumer's name. */
  consumer: string;
  logger: Logger;
  /** Names the loop in its log lines ("payment consumer", "refund request consumer"). */
  name: string;
  /** Applies one message and settles it (ack, nak or term); its promise ends when it is done. */
  handle: (message: JsMsg) => Promise<void>;
  /** Messages taken in and not yet handled, at most (M5); each fetch asks for the free places. */
  maxInFlight: number;
  /**
   * B2: declares the durable consumer (or what it needs) again when it is gone: deleted, its
   * stream re-created, or not made yet. Without it a missing consumer is retried every second.
   */
  declare?: () => Promise<void>;
  /** How long a fetch's pull request stays open at JetStream (default 2 s). */
  pullExpiresMs?: number;
};

/** How long after its `expires` a pull request is surely over at JetStream too. */
const requestEndMarginMs = 500;

/**
 * O7 (v5), M5, B2: reads a durable pull consumer in short fetches, one pull request at a time,
 * each for as many messages as there are free places, and hands each message to `handle`, many at
 * once. It holds only what it fetched, so a stop gives everything back promptly:
 *
 * JetStream delivers to a pull request until the request is filled or expires; one whose
 * subscriber has gone is noticed only on its next pass over the waiting requests, and a message
 * sent there before that waits for the consumer's ack wait (30 s) to be handed out again. A nak
 * while the request is still open does not help either: the message is sent again at once, to
 * that same request. (`consume()` keeps such requests open all the time and buffers ahead, which
 * is why a stopping `consume()` delayed messages by the ack wait.) So after `stop` the loop starts
 * no new fetch; what the current one still brings is held, not handled, until JetStream has ended
 * the request (at most `pullExpiresMs`), then given back (nak): JetStream hands it at once to
 * another replica, or to this service after its restart.
 *
 * A consumer that is not found is declared again with `declare` (B2). Any other failure (NATS
 * away, the consumer's leader lost) is logged and the loop pulls again a second later; a fetch's
 * idle heartbeats and its end after `pullExpiresMs` bound how soon it notices (X1).
 */
export class HeldPull {
  private running?: Promise<void>;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly pullExpiresMs: number;

  constructor(private readonly options: HeldPullOptions) {
    this.pullExpiresMs = options.pullExpiresMs ?? 2_000;
  }

  /** Starts pulling (once); safe to call again after every reconnect. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Messages taken in and not yet handled. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Stops pulling, gives back what the last fetch still brings (see the class), and waits for
   * the messages being handled, so a shutdown cuts none off midway (O7).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    // The loop has ended, so nothing joins the set any more.
    await Promise.all(this.inFlight);
  }

  private async loop(): Promise<void> {
    const { nats, stream, consumer: name, logger, maxInFlight } = this.options;
    while (!this.stopped) {
      try {
        const js = nats.jetstream();
        if (!js) throw new Error("nats is not connected");
        const consumer = await js.consumers.get(stream, name).catch(async (error) => {
          if (!this.options.declare || !notFound(error)) throw error;
          logger.warn(`${this.options.name} not found; declaring it again`, describeError(error));
          await this.options.declare();
          return js.consumers.get(stream, name);
        });
        while (!this.stopped) {
          // A quarter of the places free at least, so a busy consumer pulls in batches.
          while (maxInFlight - this.inFlight.size < Math.max(1, maxInFlight / 4))
            await Promise.race(this.inFlight);
          if (this.stopped) break;
          const requestEnds = Date.now() + this.pullExpiresMs + requestEndMarginMs;
          const fetched = await consumer.fetch({
            max_messages: maxInFlight - this.inFlight.size,
            expires: this.pullExpiresMs,
          });
          const held: JsMsg[] = [];
          try {
            for await (const message of fetched) {
              if (this.stopped) {
                held.push(message);
                continue;
              }
              const handled = this.options
                .handle(message)
                .catch((error) =>
                  logger.warn(
                    `${this.options.name}: a message was not handled; JetStream will redeliver it`,
                    { subject: message.subject, ...describeError(error) },
                  ),
                )
                .finally(() => this.inFlight.delete(handled));
              this.inFlight.add(handled);
            }
          } finally {
            // The fetch usually ends on JetStream's word, but also on nats.js's own timer
            // (expires × 1.05), which can fire first on a busy event loop: wait until the request
            // has expired at the server as well.
            if (held.length > 0) await Bun.sleep(Math.max(0, requestEnds - Date.now()));
            for (const message of held) message.nak();
          }
        }
      } catch (error) {
        if (!this.stopped) logger.warn(`${this.options.name} restarting`, describeError(error));
      }
      if (!this.stopped) await Bun.sleep(1000);
    }
  }
}
