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
} from "nats";
import type { NatsCredentials } from "./config";
import { describeError, type Logger } from "./logger";

export type StreamSpec = { name: string; subjects: string[] };
export type ConsumerSpec = {
  stream: string;
  durable: string;
  filterSubject: string;
  ackWaitMs: number;
};

/**
 * A NATS connection that keeps trying forever: the service starts and serves while NATS is away,
 * and `onConnect` (streams, consumers) runs again after each reconnect.
 */
export class NatsLink {
  private connection?: NatsConnection;
  private connected = false;

  constructor(
    private readonly url: string,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly onConnect: (link: NatsLink) => Promise<void> = async () => {},
    /** User and password or token (N1); `url` never carries them, so logging it is safe. */
    private readonly credentials?: NatsCredentials,
  ) {}

  /** Resolves once the first connection is made (or never, if NATS never answers). */
  async start(): Promise<void> {
    this.connection = await connect({
      servers: this.url,
      name: this.name,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 5000,
      ...this.credentials,
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
        this.logger.info("nats reconnected");
        await this.runOnConnect();
      }
    }
  }

  private async runOnConnect(): Promise<void> {
    try {
      await this.onConnect(this);
    } catch (error) {
      this.logger.error("nats setup failed", describeError(error));
    }
  }

  get isUp(): boolean {
    return this.connected && !!this.connection && !this.connection.isClosed();
  }

  get nc(): NatsConnection | undefined {
    return this.connection;
  }

  jetstream(): JetStreamClient | undefined {
    return this.isUp ? this.connection?.jetstream() : undefined;
  }

  async manager(): Promise<JetStreamManager> {
    if (!this.connection) throw new Error("nats is not connected");
    return this.connection.jetstreamManager();
  }

  /** Drains subscriptions and pending publishes, then closes (O7). */
  async close(): Promise<void> {
    this.connected = false;
    const nc = this.connection;
    if (!nc || nc.isClosed()) return;
    await nc.drain().catch(() => nc.close());
  }
}

/** Creates the stream, or updates it to this configuration: safe on every start-up. */
export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<void> {
  const config = {
    name: spec.name,
    subjects: spec.subjects,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(30 * 24 * 3600 * 1000),
    duplicate_window: nanos(24 * 3600 * 1000),
    num_replicas: 1,
  };
  try {
    await jsm.streams.info(spec.name);
    await jsm.streams.update(spec.name, config);
  } catch (error) {
    if ((error as { code?: string }).code !== "404" && !/not found/i.test(String(error)))
      throw error;
    await jsm.streams.add(config);
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
