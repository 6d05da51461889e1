import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { FallbackPoll } from "@commerce/shared/platform/fallback-poll";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { refundKeyOf } from "../providers";
import { type RefundAnswer, type RefundClient, refundIdempotencyKey } from "../providers/provider";
import { ProviderCircuit } from "./circuit";
import {
  adyenRefundNotified,
  awaitingOutcome,
  claimDue,
  type RefundRow,
  recordStep,
  type Step,
} from "./ledger";

export type RefundWorkerOptions = {
  /** How often due refunds are looked for besides a kick (default 1 s). */
  intervalMs?: number;
  /** F3: the first wait after an attempt without a definite answer; it doubles (default 1 s). */
  retryBaseMs?: number;
  /** F3: the longest wait between attempts (default 5 min). */
  retryMaxMs?: number;
  /** F7: refunds in flight at once per process, so one slow provider never holds many (default 8). */
  concurrency?: number;
  /** How long a claimed refund is this worker's (longer than a call's timeout; default 60 s). */
  leaseMs?: number;
  /** F7: calls in a row without a definite answer that open a provider's circuit (default 5). */
  circuitThreshold?: number;
  /** F7: how long an open circuit keeps calls away from its provider (default 30 s). */
  circuitCoolDownMs?: number;
};

export type RefundWorkerDeps = {
  sql: Sql;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** F2: a client of each provider API that has its key. */
  clients: Map<string, RefundClient>;
  /** F3: how long a refund without a definite answer is asked again (REFUND_GIVE_UP_HOURS). */
  giveUpAfterMs: number;
  outboxWritten: () => void;
};

/**
 * F2, F3: asks the providers for the refunds recorded in `payments.refunds`, a claimed batch at a
 * time (the transactional outbox's pattern: the schedule is data, a lease makes replicas share
 * it). Every attempt of a refund uses its key `refund-<refund_id>`. A definite answer settles it;
 * no definite answer is asked again with the same key after a back-off, until
 * REFUND_GIVE_UP_HOURS, when it is `unknown` and the api opens a `refund_unknown` review. A
 * refund the provider only took (`pending`) is looked at again: Stripe's status is read from its
 * API, Adyen's is the `REFUND` notification stored by the intake.
 */
export class RefundWorker {
  private readonly poll: FallbackPoll;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private readonly options: Required<RefundWorkerOptions>;
  private readonly attempts;
  private readonly settled;
  private readonly circuits = new Map<string, ProviderCircuit>();
  private readonly inFlight = new Set<Promise<void>>();
  /** F7: each provider's attempts in flight. */
  private readonly busy = new Map<string, number>();

  constructor(
    private readonly deps: RefundWorkerDeps,
    options: RefundWorkerOptions = {},
  ) {
    this.options = {
      intervalMs: options.intervalMs ?? 1000,
      retryBaseMs: options.retryBaseMs ?? 1000,
      retryMaxMs: options.retryMaxMs ?? 300_000,
      concurrency: options.concurrency ?? 8,
      leaseMs: options.leaseMs ?? 60_000,
      circuitThreshold: options.circuitThreshold ?? 5,
      circuitCoolDownMs: options.circuitCoolDownMs ?? 30_000,
    };
    // Issue 38: the poll is a fallback (a request wakes the worker, and its own retries wake it at
    // their time): idle, it waits up to 8 polls' time.
    this.poll = new FallbackPoll(
      () => this.kick(),
      this.options.intervalMs,
      8 * this.options.intervalMs,
    );
    for (const provider of deps.clients.keys())
      this.circuits.set(
        provider,
        new ProviderCircuit(
          provider,
          this.options.circuitThreshold,
          this.options.circuitCoolDownMs,
        ),
      );
    deps.metrics.gauge(
      "provider_circuits_open",
      "F7: payment providers whose API circuit is open (calls held back after repeated failures)",
      () => [...this.circuits.values()].filter((circuit) => circuit.open).length,
    );
    this.attempts = deps.metrics.counter(
      "refund_attempts_total",
      "F6: calls to a provider for a refund, by provider and what it answered (pending, succeeded, failed, unknown)",
      ["provider", "outcome"],
    );
    this.settled = deps.metrics.counter(
      "refunds_total",
      "F6: refunds the shop asked for, by provider and how they ended (succeeded, failed, unknown)",
      ["provider", "outcome"],
    );
    const waiting = () => awaitingOutcome(deps.sql);
    deps.metrics.gauge(
      "refunds_awaiting_outcome",
      "F6: refunds asked for and not yet succeeded, failed or given up (unknown)",
      async () => (await waiting()).count,
    );
    deps.metrics.gauge(
      "refund_oldest_awaiting_outcome_seconds",
      "F6: how long the oldest refund without an outcome has waited (0: none)",
      async () => (await waiting()).oldestSeconds,
    );
  }

  start(): void {
    this.poll.start();
    this.kick();
  }

  /** Looks for due refunds now (a new request arrived); a round already running goes again. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.rounds().finally(() => {
      this.running = undefined;
    });
  }

  /**
   * F7: whether calls to `provider`'s API are held back now (its circuit open, within the
   * cool-down); B4: reconciliation does not ask it meanwhile either.
   */
  circuitOpen(provider: string): boolean {
    return this.circuits.get(provider)?.allows().allowed === false;
  }

  /** F7: each provider's circuit as /ready's detail names it while open. */
  notes() {
    return [...this.circuits.values()].map((circuit) => ({
      name: `${circuit.provider}_api`,
      note: () => circuit.note(),
    }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.poll.stop();
    await this.running;
    // O7: a call in flight is finished and recorded before the database closes.
    await Promise.all(this.inFlight);
  }

  /**
   * Claims as many due refunds as there are free places and starts each; a finished attempt
   * frees its place and looks again, so a slow provider holds only its own places (F7), never
   * the others' refunds.
   */
  private async rounds(): Promise<void> {
    do {
      this.again = false;
      const free = this.options.concurrency - this.inFlight.size;
      if (free <= 0) return;
      try {
        const { sql, topology } = this.deps;
        const subject = topology.orders.event("refund_requested");
        // F7: one provider may hold at most half the places, so a slow one never stops the other.
        const perProvider = Math.max(1, Math.floor(this.options.concurrency / 2));
        const room = Object.fromEntries(
          [...this.busy].map(([provider, n]) => [provider, Math.max(0, perProvider - n)]),
        );
        const due = await claimDue(sql, subject, free, this.options.leaseMs, {
          perProvider: room,
          fresh: perProvider,
        });
        for (const row of due) {
          this.busy.set(row.provider, (this.busy.get(row.provider) ?? 0) + 1);
          const attempt: Promise<void> = this.attempt(row).finally(() => {
            this.inFlight.delete(attempt);
            this.busy.set(row.provider, (this.busy.get(row.provider) ?? 1) - 1);
            this.kick();
          });
          this.inFlight.add(attempt);
        }
        if (due.length > 0) this.poll.busy();
        if (due.length === free) this.again = true;
      } catch (error) {
        this.deps.logger.warn("refund round failed", describeError(error));
      }
    } while (this.again && !this.stopped);
  }

  private async attempt(row: RefundRow): Promise<void> {
    const { logger, clients } = this.deps;
    const client = clients.get(row.provider);
    const circuit = this.circuits.get(row.provider);
    const allowed = circuit?.allows() ?? { allowed: true };
    if (!allowed.allowed) {
      // F7: the provider's circuit is open: no call; the refund waits, its lease given back,
      // unless its time is up (F3), which an open circuit does not extend.
      const step = this.stepOf(row, { outcome: "unknown", reason: "circuit open" });
      const untilGiveUp = row.received_at.getTime() + this.deps.giveUpAfterMs - Date.now();
      await this.record(row, {
        ...step,
        retryInMs: Math.max(0, Math.min(allowed.waitMs, untilGiveUp)),
      });
      return;
    }
    const started = performance.now();
    const answer = client ? await this.ask(client, row) : unconfigured(row.provider);
    // Only a call to the provider counts: an Adyen refund waiting for its notification makes none.
    const called =
      client !== undefined &&
      (row.status === "requested" || !row.provider_refund_id || client.check !== undefined);
    const change = called ? circuit?.record(answer.outcome !== "unknown") : undefined;
    if (change)
      logger[change === "opened" ? "warn" : "info"](`provider circuit ${change}`, {
        provider: row.provider,
        ...(change === "opened" ? { cool_down_ms: this.options.circuitCoolDownMs } : {}),
      });
    const step = this.stepOf(row, answer);
    this.attempts.inc({ provider: row.provider, outcome: answer.outcome });
    // F7: one line per call, with the provider's request id; never the key.
    logger.info("refund attempt", {
      refund_id: row.refund_id,
      order_id: row.order_id,
      provider: row.provider,
      attempt: row.attempts,
      idempotency_key: refundIdempotencyKey(row.refund_id),
      outcome: answer.outcome,
      status: step.status,
      provider_request_id: answer.requestId ?? null,
      provider_refund_id: step.providerRefundId ?? row.provider_refund_id,
      reason: "reason" in answer ? answer.reason : undefined,
      duration_ms: Math.round(performance.now() - started),
    });
    await this.record(row, step);
  }

  /** Records a step; a failure leaves the lease to expire, and the refund is asked again. */
  private async record(row: RefundRow, step: Step): Promise<void> {
    try {
      if (await recordStep(this.deps.sql, this.deps.topology, row, step)) {
        this.deps.outboxWritten();
        // F3: a refund still without its outcome is asked again when its retry is due.
        if (step.status !== "succeeded" && step.status !== "failed" && step.status !== "unknown")
          this.poll.wakeIn(step.retryInMs);
        if (step.status === "succeeded" || step.status === "failed" || step.status === "unknown")
          this.settled.inc({ provider: row.provider, outcome: step.status });
      }
    } catch (error) {
      // The lease expires and the refund is asked again with its key: nothing is made twice.
      this.deps.logger.error("refund attempt not recorded", {
        refund_id: row.refund_id,
        ...describeError(error),
      });
    }
  }

  /** The provider's answer: a refund asked for, or where one it took stands. */
  private async ask(client: RefundClient, row: RefundRow): Promise<RefundAnswer> {
    if (row.status === "requested" || !row.provider_refund_id)
      return client.refund({
        refundId: row.refund_id,
        orderId: row.order_id,
        paymentRef: row.payment_ref,
        amount: row.amount,
        currency: row.currency,
        reason: row.reason ?? undefined,
      });
    if (client.check) return client.check(row.provider_refund_id);
    const notified = await adyenRefundNotified(this.deps.sql, row.provider_refund_id);
    if (!notified) return { outcome: "unknown", reason: "waiting for the provider's notification" };
    return notified.success
      ? { outcome: "succeeded", providerRefundId: row.provider_refund_id }
      : {
          outcome: "failed",
          providerRefundId: row.provider_refund_id,
          reason: `Adyen: ${notified.reason ?? "the refund failed"}`,
        };
  }

  /** F3: the refund's next state: settled, pending, asked again later, or given up. */
  private stepOf(row: RefundRow, answer: RefundAnswer): Step {
    const { retryBaseMs, retryMaxMs } = this.options;
    const retryInMs = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.max(0, row.attempts - 1));
    const givenUp = Date.now() - row.received_at.getTime() >= this.deps.giveUpAfterMs;
    switch (answer.outcome) {
      case "succeeded":
        return { status: "succeeded", providerRefundId: answer.providerRefundId, retryInMs };
      case "failed":
        return {
          status: "failed",
          providerRefundId: answer.providerRefundId,
          failureReason: answer.reason,
          retryInMs,
        };
      case "pending":
        return {
          status: givenUp ? "unknown" : "pending",
          providerRefundId: answer.providerRefundId,
          retryInMs,
        };
      default:
        return {
          status: givenUp ? "unknown" : row.status,
          lastError: answer.reason,
          retryInMs,
        };
    }
  }
}

/** F1: a refund of a provider whose API key this service does not have: refused, saying so. */
const unconfigured = (provider: string): RefundAnswer => ({
  outcome: "failed",
  reason: `The payments service is not configured for ${provider} refunds: set ${
    refundKeyOf[provider] ?? "its API key"
  }`,
});
