import {
  AckPolicy,
  connect,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
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
