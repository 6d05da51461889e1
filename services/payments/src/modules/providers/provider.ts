import type {
  DisputeStage,
  PaymentEvent,
  PaymentProviderName,
} from "@commerce/shared/contract/messages";
import type { SignatureRejection } from "@commerce/shared/contract/signature";
import {
  type FieldError,
  UnauthorizedError,
  ValidationError,
} from "@commerce/shared/platform/errors";
import { parseJsonBytes } from "@commerce/shared/platform/http/body";
import { isCleanText } from "@commerce/shared/platform/http/fields";
import type { Static, TObject, TProperties, TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";

// Stripe's events are far below this; a Checkout Session with many line items stays within.
export const providerBodyLimit = 256 * 1024;

export type WebhookSettings = { secrets: string[]; toleranceSeconds: number };

/** G4: whose money moves orders: the shop's live money, or its test money. */
export const paymentModes = ["live", "test"] as const;
export type PaymentMode = (typeof paymentModes)[number];

/** What every provider is made with besides its own settings. */
export type ProviderContext = { toleranceSeconds: number; mode: PaymentMode };

/** Why a notification was turned away (W1, W9): the `reason` of its log line and metric. */
export type RejectionReason =
  | "too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | `signature_${SignatureRejection}`
  | "credentials"
  | "invalid_json"
  | "invalid_schema";

const signatureProblems: Record<SignatureRejection, string> = {
  missing: "header is missing",
  malformed: "header is malformed",
  stale: "timestamp is older than the tolerance",
  future: "timestamp is further ahead than the tolerance",
  mismatch: "does not match the body",
};

/** 401: the provider's signature is missing or wrong (W2, S1, Y1); `what` names it. */
export class SignatureRejectedError extends UnauthorizedError {
  constructor(
    readonly reason: SignatureRejection,
    what = "X-Signature",
  ) {
    super(`The ${what} ${signatureProblems[reason]}`);
  }
}

/** 401: HTTP Basic credentials the provider was configured with are missing or wrong (Y1). */
export class CredentialsRejectedError extends UnauthorizedError {
  constructor(realm: string) {
    super("Missing or invalid HTTP Basic credentials", {
      "www-authenticate": `Basic realm="${realm}"`,
    });
  }
}

export class InvalidNotificationError extends ValidationError {
  constructor(
    readonly reason: "invalid_json" | "invalid_schema",
    detail: string,
    errors?: FieldError[],
    /** What could be read of the body, for the log line only. */
    readonly partial: { event?: string; order_id?: number } = {},
  ) {
    super(detail, errors);
  }
}

/** The body as a JSON object, or 400: every provider sends one object per request. */
export function parseJsonObject(rawBody: Uint8Array): { text: string; value: object } {
  const parsed = parseJsonBytes(rawBody);
  if (!parsed)
    throw new InvalidNotificationError("invalid_json", "The request body is not valid JSON");
  const { text, value } = parsed;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", [
      { path: "", message: "The body must be a JSON object" },
    ]);
  return { text, value };
}

/**
 * Text PostgreSQL can store as sent: well-formed Unicode without NUL (else the insert fails), and
 * (N9) without control characters.
 */
export const storable = (value: string) => isCleanText(value);

/** One entry per offending field, with the schema's own `error` message where it has one. */
export function schemaErrors<T extends TSchema>(check: TypeCheck<T>, data: unknown): FieldError[] {
  const errors: FieldError[] = [];
  if (!check.Check(data))
    for (const error of check.Errors(data)) {
      // A schema's own `error` names the field; with an empty `path` (a list's items), the field
      // is where the check failed.
      const custom = (error.schema as { error?: FieldError }).error;
      const found = { path: custom?.path || error.path, message: custom?.message ?? error.message };
      if (!errors.some((known) => known.path === found.path)) errors.push(found);
    }
  return errors;
}

/** G2: an order reference as a positive integer, else null (the notification names no order). */
export function orderIdOf(reference: unknown): number | null {
  const text = typeof reference === "number" ? String(reference) : reference;
  if (typeof text !== "string" || !/^[1-9][0-9]{0,15}$/.test(text)) return null;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : null;
}

/** One notification a provider's request carried, in the payments service's own terms (W5, M1). */
export type ParsedNotification = {
  /** The de-duplication key (W4, S2, Y2). */
  id: string;
  /** The provider's event kind, stored as sent. */
  event: string;
  /** G2: null when it names no order, or not as a positive integer. */
  orderId: number | null;
  /** M1: the provider's id of the payment it is about. */
  paymentRef: string | null;
  amount: number | null;
  /** Upper-case (G2). */
  currency: string | null;
  /** The message it makes (M1), if its event moves money. */
  message: PaymentEvent | undefined;
  /** L5: a dispute's stage (`payment.disputed` only). */
  stage?: DisputeStage;
  /**
   * G4: why a notification that would move money is stored without a message (another mode's
   * money, another merchant account); undefined when it is not set aside.
   */
  ignored?: string;
  /**
   * B1: the report a notification announces (Adyen's REPORT_AVAILABLE), to download after the
   * answer; `skip` says why it is not (not the shop's, G4; a report this service does not read).
   */
  report?: { fileName: string; url: string; skip?: ReportSkip };
};

/** B1: a report a stored REPORT_AVAILABLE notification named, for the report worker. */
export type AnnouncedReport = {
  notificationKey: string;
  report: NonNullable<ParsedNotification["report"]>;
  /** Stored now (not a repeat of a notification Adyen sent before). */
  fresh: boolean;
};

/** B1: why a report or a report's line is not read (`reconciliation_skipped_total`'s reason). */
export type ReportSkip =
  | "other_mode"
  | "other_merchant_account"
  | "not_payment_accounting"
  | "url_outside_prefix"
  | "too_large"
  | "malformed_report"
  | "malformed_line"
  | "not_configured";

/** What a provider's `authenticate` sees: the request as received, before any parsing. */
export type ProviderRequest = { headers: Headers; rawBody: Uint8Array; nowSeconds: number };

/** The provider's expected answer to an accepted request (W5, Y3). */
export type ProviderAnswer = { body: unknown; contentType?: string };

/**
 * A payment provider as a plug-in (section 15): how its requests are authenticated, how its body
 * becomes notifications, and what it expects back. The intake runs W1's checks around these.
 */
export type PaymentProvider = {
  name: PaymentProviderName;
  /** Its route under /api/webhooks (G1). */
  path: string;
  bodyLimit: number;
  /** 401 (a `RejectedCredentialsError`) unless the request comes from the provider. */
  authenticate(request: ProviderRequest): void;
  /** 400 (an `InvalidNotificationError`) unless the body is the provider's shape. */
  parse(rawBody: Uint8Array): { text: string; notifications: ParsedNotification[] };
  answer(outcome: { duplicate: boolean }): ProviderAnswer;
  /** V4: the order a body of any shape claims, for a refusal's example; null when none. */
  claimedOrder(body: object): number | null;
  /** The route's OpenAPI entry: what it answers and how it is authenticated. */
  document: {
    /** D5: the stable camelCase name client generators give the call. */
    operationId: string;
    summary: string;
    description: string;
    security: { name: string; scheme: Record<string, unknown>; who: () => string };
    requestSchema: object;
    answerSchema: object;
  };
};

/**
 * A provider folder's export: the environment variables it reads (part of the payments schema),
 * its settings from their parsed values (undefined when unconfigured: its route answers 404, G1)
 * and the provider those settings make.
 */
export type ProviderPlugin<Settings, Variables extends TProperties> = {
  name: PaymentProviderName;
  variables: Variables;
  settingsFrom(vars: Static<TObject<Variables>>): Settings | undefined;
  create(settings: Settings, context: ProviderContext): PaymentProvider;
};

/** F2: what the shop asks a provider to give back: a refund of one payment, by its id here. */
export type RefundAsk = {
  refundId: number;
  orderId: number;
  /** The provider's id of the payment (Stripe's PaymentIntent, Adyen's pspReference). */
  paymentRef: string;
  amount: number;
  currency: string;
  reason?: string;
};

/**
 * F3: what a provider said of a refund. `pending` and `succeeded` carry the provider's refund id;
 * `failed` is a definite refusal (a 4xx that is not 409/429) with the provider's reason;
 * `unknown` is no definite answer (a timeout, a reset connection, a 5xx, 409, 429): the refund
 * may or may not have been made, so it is asked again with the same key.
 */
export type RefundAnswer = { requestId?: string } & (
  | { outcome: "pending" | "succeeded"; providerRefundId: string }
  | { outcome: "failed"; reason: string; providerRefundId?: string }
  | { outcome: "unknown"; reason: string }
);

/** F2, F7: the key of every attempt of one refund, so a provider makes at most one refund of it. */
export const refundIdempotencyKey = (refundId: number) => `refund-${refundId}`;

/**
 * F2: a provider's API as the refund worker uses it (section 19): ask for a refund (never throws
 * for what the provider or the network did; that is the answer), and, where the provider can be
 * asked, where a refund it took stands now.
 */
export type RefundClient = {
  provider: PaymentProviderName;
  refund(ask: RefundAsk): Promise<RefundAnswer>;
  /** Stripe: the refund's status now; undefined where only a notification tells (Adyen). */
  check?(providerRefundId: string): Promise<RefundAnswer>;
};

/** F7: the status codes that say nothing definite of a request's outcome (F3). */
export const outcomeUnknown = (status: number | undefined) =>
  status === undefined || status >= 500 || status === 409 || status === 429 || status < 400;

/**
 * B1: a state a provider holds, as the notification it becomes when nothing stored tells of it
 * yet. Events carry only the notification (stored unless its id is); objects also say what
 * stored notification would explain the state.
 */
export type ReconcileCandidate = {
  notification: ParsedNotification;
  rawBody: string;
  /** Objects: a stored notification of this payment, of one of these events, explains it. */
  explainedBy?: {
    paymentRef: string;
    events: string[];
    /** A refund: the stored notification's amount (the charge's refunded total) reaches this. */
    minAmount?: number;
  };
  /** F3: a refund the shop asked for: its ledger row (`payments.refunds`) takes this outcome. */
  shopRefund?: {
    refundId: number;
    providerRefundId: string;
    status: "succeeded" | "failed";
    reason?: string;
  };
};

/** B1: an item of a provider's list that is not the shop's or cannot be read: counted, logged. */
export type ReconcileSkip = {
  reason:
    | "malformed"
    | "too_large"
    | "page_too_large"
    | "other_account"
    | "other_mode"
    | "no_order";
  /** The provider's id of the item, when it has a readable one. */
  id?: string;
};

/** One page of what a provider listed: items seen, what they became, what was skipped. */
export type ReconcilePage = {
  checked: number;
  candidates: ReconcileCandidate[];
  skipped: ReconcileSkip[];
};

/**
 * B1: a provider's API as reconciliation uses it: per kind of run, the pages of what it holds
 * since `fromSeconds` (unix). A page that cannot be had throws (B4: the run fails, the next one
 * covers its window again).
 */
export type ReconcileClient = {
  provider: PaymentProviderName;
  /** The host it asks, stored as a found notification's source address. */
  source: string;
  /** Per kind, what it holds that was made from `fromSeconds` to `toSeconds` (unix), in pages. */
  kinds: Record<string, (fromSeconds: number, toSeconds: number) => AsyncIterable<ReconcilePage>>;
  /**
   * A kind whose window ends where another kind's last complete run ended (Stripe's objects
   * follow its events), so an object is compared only once its events could have been read.
   */
  follows?: Record<string, string>;
};
