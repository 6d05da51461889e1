/** X5: what the chaos run counts while it runs, for the report. */
export type Fault = { at: number; what: string; target: string; backAt?: number; note?: string };

export type SentNotification = {
  provider: "generic" | "stripe" | "adyen";
  /** The key payments and the api store it under (G5). */
  key: string;
  orderId: number;
  kind: "payment" | "refund" | "second payment";
  /** A repeat of an accepted notification (W5). */
  duplicate: boolean;
  attempts: number;
  status: number | "connection error" | "gave up";
  acceptedAt?: number;
};

/** F1: a refund the workload asked the api for, answered 202. */
export type RequestedRefund = {
  refundId: number;
  orderId: number;
  provider: "stripe" | "adyen";
  paymentRef: string;
  /** What the api answered it refunds (minor units). */
  amount: number;
  /** The order's amount. */
  orderAmount: number;
  kind: "full" | "partial" | "rest";
  requestedAt: number;
};

/** X5 (v5): a payment message deleted after JetStream's ack, and when B2 had it applied. */
export type LostPayment = {
  seq: number;
  notificationId: string;
  orderId: number;
  publishedAt: number;
  /** When the api had processed it (undefined: not seen within the fault's wait). */
  appliedAt?: number;
};

export class Stats {
  readonly startedAt = Date.now();
  readonly faults: Fault[] = [];
  /** The kinds of fault injected at least once. */
  readonly kindsRun = new Set<string>();
  readonly notifications: SentNotification[] = [];
  /** Answers by service and status ("api 503", "payments 200", "api connection error"). */
  readonly answers = new Map<string, number>();
  readonly refunds: RequestedRefund[] = [];
  /** F1: refund requests by what the api answered in the end ("202", "409"...). */
  readonly refundAnswers = new Map<string, number>();
  readonly lostPayments: LostPayment[] = [];
  /** B1: Stripe and Adyen payments whose notification was never sent. */
  readonly unnotified: { provider: "stripe" | "adyen"; orderId: number; ref: string }[] = [];
  /** B1: the payment accounting reports announced to payments, and what it answered. */
  readonly reports: { at: number; lines: number; status: number | string }[] = [];
  /** `money_path_gaps_found_total` grew by this much across the lost-messages faults (B2). */
  gapsCounted = 0;
  /** Refund requests to the provider servers that met an outage's fault, by kind. */
  readonly providerFaults = new Map<string, number>();
  ordersPlaced = 0;
  ordersRefusedNoStock = 0;
  ordersCancelled = 0;
  ordersLeftUnpaid = 0;
  placeFailed = 0;

  count(service: string, status: number | string): void {
    const key = `${service} ${status}`;
    this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
  }

  fault(what: string, target: string, note?: string): Fault {
    const fault = { at: Date.now(), what, target, note };
    this.faults.push(fault);
    console.log(`[chaos] ${this.clock(fault.at)} ${what} ${target}${note ? ` (${note})` : ""}`);
    return fault;
  }

  /** Seconds since the start, as +123.4 s. */
  clock(at: number): string {
    return `+${((at - this.startedAt) / 1000).toFixed(1)} s`;
  }
}
