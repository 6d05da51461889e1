import type { PaymentEvent, PaymentProviderName } from "@commerce/shared/contract/messages";
import type { Static, TObject, TProperties } from "@sinclair/typebox";

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
};

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
  create(settings: Settings, toleranceSeconds: number): PaymentProvider;
};
