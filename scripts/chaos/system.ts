import { messageTopology } from "@commerce/shared/contract/messages";
import { jwtSecret, webhookSecret } from "@commerce/testing/basics";
import { ServiceProcess, serviceCommand } from "@commerce/testing/launch";
import { PrivateNats } from "@commerce/testing/nats-server";
import { PatroniCluster } from "@commerce/testing/patroni-cluster";
import { providersEnv } from "@commerce/testing/provider-requests";
import { type AdyenApi, startAdyenApi } from "@commerce/testing/providers/adyen-api";
import { type AdyenReports, startAdyenReports } from "@commerce/testing/providers/adyen-reports";
import { type StripeApi, startStripeApi } from "@commerce/testing/providers/stripe-api";
import { connect } from "nats";
import postgres from "postgres";

/** X5 (v5): a message deleted from the payments stream after JetStream acknowledged it. */
export type LostMessage = {
  seq: number;
  notificationId: string;
  orderId: number;
  /** When JetStream stored it (its publication). */
  publishedAt: number;
};

/**
 * X5: the whole system on loopback, every port fixed from `base` (the run's own range): a Patroni
 * cluster (base..base+30), a three-node NATS cluster (base+50..), two api replicas and payments
 * (base+60..), each a real process that the chaos run may SIGKILL and start again; (v5) the local
 * Stripe and Adyen API servers (`test/harness/providers/`, on free ports) as payments'
 * STRIPE_API_URL and ADYEN_CHECKOUT_URL, for the refunds the shop asks for (section 19), and
 * the local server of Adyen's report files under ADYEN_REPORT_URL_PREFIX (B1).
 */
export class ChaosSystem {
  readonly cluster: PatroniCluster;
  readonly nats: PrivateNats[] = [];
  readonly apis: ServiceProcess[] = [];
  payments!: ServiceProcess;
  stripeApi!: StripeApi;
  adyenApi!: AdyenApi;
  adyenReports!: AdyenReports;
  readonly prefix = `chaos${Date.now().toString(36)}`;

  constructor(
    private readonly base: number,
    private readonly logDir: string,
  ) {
    this.cluster = new PatroniCluster(base);
  }

  get natsUrl(): string {
    return this.nats.map((node) => node.url).join(",");
  }

  /** The services' database: every node, the driver picking the primary (X2). */
  get databaseUrl(): string {
    return this.cluster.multiHostUrl("chaos");
  }

  async start(): Promise<void> {
    await this.cluster.start();
    const admin = postgres(this.cluster.multiHostUrl(), { max: 1, onnotice: () => {} });
    await admin.unsafe("create database chaos");
    await admin.end({ timeout: 1 });
    await this.startNats();
    this.stripeApi = await startStripeApi();
    // Adyen retries a notification for days; here for as long as the run drains.
    this.adyenApi = await startAdyenApi({ notifyForMs: 300_000 });
    // B1: Adyen's payment accounting reports, downloaded under ADYEN_REPORT_URL_PREFIX.
    this.adyenReports = await startAdyenReports();
    const env = {
      DATABASE_URL: this.databaseUrl,
      NATS_URL: this.natsUrl,
      NATS_PREFIX: this.prefix,
      STREAM_REPLICAS: "3",
      AUTH_JWT_SECRET: jwtSecret,
      PAYMENT_WEBHOOK_SECRETS: webhookSecret,
      ...providersEnv,
      // F2 (section 19): refunds through the providers' APIs, the local servers.
      STRIPE_API_KEY: this.stripeApi.apiKey,
      STRIPE_API_URL: this.stripeApi.url,
      ADYEN_API_KEY: this.adyenApi.apiKey,
      ADYEN_CHECKOUT_URL: this.adyenApi.checkoutUrl,
      ...this.adyenReports.env,
      // B1: Stripe's events and objects compared every 20 s (default 5 min).
      RECONCILE_INTERVAL_SECONDS: "20",
      RATE_LIMIT_RPS: "0",
      HOLD_MAX_ORDERS: "0",
      HOLD_MAX_UNITS: "0",
      // L3: some orders are left unpaid; they expire within the run.
      ORDER_TTL_SECONDS: "90",
      // H3: a delivery that failed while the api was down is tried again soon, not in 5 min.
      WEBHOOK_RETRY_SCHEDULE: "2,5,10,20,30,60,60,60,60,60",
      WEBHOOK_ALLOW_HTTP: "1",
      WEBHOOK_ALLOW_PRIVATE: "1",
      LOG_LEVEL: "warn",
    };
    const service = (name: "api" | "payments", label: string, port: number) =>
      new ServiceProcess({
        name: label,
        port,
        command: serviceCommand(name, false),
        env,
        output: { dir: this.logDir },
        readyTimeoutMs: 60_000,
      });
    // One replica first: it applies the migrations alone.
    this.apis.push(
      service("api", "api-1", this.base + 60),
      service("api", "api-2", this.base + 61),
    );
    this.payments = service("payments", "payments", this.base + 62);
    this.adyenApi.webhookUrl = `${this.payments.url}/api/webhooks/adyen`;
    await this.apis[0].start();
    await Promise.all([this.apis[1].start(), this.payments.start()]);
  }

  private async startNats(): Promise<void> {
    const names = ["n1", "n2", "n3"];
    const port = (i: number, offset: number) => this.base + 50 + offset + i;
    const routes = names.map((_, i) => `nats://127.0.0.1:${port(i, 3)}`).join(",");
    for (const [i, name] of names.entries())
      this.nats.push(
        new PrivateNats({
          port: port(i, 0),
          args: [
            "--server_name",
            name,
            "--cluster_name",
            this.prefix,
            "--cluster",
            `nats://127.0.0.1:${port(i, 3)}`,
            "--routes",
            routes,
          ],
        }),
      );
    await Promise.all(this.nats.map((node) => node.start()));
    // JetStream needs its meta leader before a stream of three replicas can be made.
    await Bun.sleep(3_000);
  }

  /**
   * X5 (v5): messages JetStream acknowledged to the payments relay, deleted from the stream before
   * the api's consumer was handed them (as a stream that lost them would): up to `count`, the
   * newest not yet delivered, looked for over at most 10 s. Returns what was deleted.
   */
  async loseRecentPaymentMessages(count: number): Promise<LostMessage[]> {
    const topology = messageTopology(this.prefix);
    const nc = await connect({ servers: this.nats.map((node) => node.url), timeout: 3_000 });
    try {
      const jsm = await nc.jetstreamManager();
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const stream = await jsm.streams.info(topology.payments.stream);
        const consumer = await jsm.consumers.info(
          topology.payments.stream,
          topology.paymentEventsConsumer,
        );
        const last = stream.state.last_seq;
        const delivered = consumer.delivered.stream_seq;
        if (last > delivered) {
          const lost: LostMessage[] = [];
          for (let seq = last; seq > delivered && lost.length < count; seq--) {
            const message = await jsm.streams
              .getMessage(topology.payments.stream, { seq })
              .catch(() => undefined);
            const payload = message?.json<{ notification_id?: string; order_id?: number }>();
            // Payments and refunds whose notification the api applies (B2 compares those).
            if (!message || !payload?.notification_id) continue;
            if (
              await jsm.streams
                .deleteMessage(topology.payments.stream, seq, false)
                .catch(() => false)
            )
              lost.push({
                seq,
                notificationId: payload.notification_id,
                orderId: Number(payload.order_id),
                publishedAt: message.time.getTime(),
              });
          }
          return lost.reverse();
        }
        await Bun.sleep(20);
      }
      return [];
    } finally {
      await nc.close();
    }
  }

  /** A counter or gauge of payments' /metrics (summed over its labels); undefined when down. */
  async paymentsMetric(name: string): Promise<number | undefined> {
    try {
      const response = await fetch(`${this.payments.url}/metrics`, {
        signal: AbortSignal.timeout(5_000),
      });
      if (!response.ok) return undefined;
      let sum = 0;
      for (const line of (await response.text()).split("\n"))
        if (line.startsWith(`${name} `) || line.startsWith(`${name}{`))
          sum += Number(line.slice(line.lastIndexOf(" ") + 1));
      return sum;
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.apis, this.payments].map((s) => s?.stop("SIGKILL")));
    await Promise.all(this.nats.map((node) => node.dispose()));
    await this.cluster.stop();
    await this.stripeApi?.stop();
    await this.adyenApi?.stop();
    await this.adyenReports?.stop();
  }
}
