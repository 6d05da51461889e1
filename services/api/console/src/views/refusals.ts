import { h } from "../dom";
import { time } from "../format";
import { answerOf, payments } from "../services";
import { empty, link, table } from "../ui";

type Example = { at: string; source_ip: string; reason: string; order_id: number | null };
type Refusal = {
  provider: string;
  reason: string;
  count: number;
  first_at: string;
  last_at: string;
  examples: Example[];
};

/** N21: where each provider's signing secret is set, so a hint names the refusal's own. */
const secretSetting: Record<string, string> = {
  generic: "PAYMENT_WEBHOOK_SECRETS",
  stripe: "STRIPE_WEBHOOK_SECRETS",
  adyen: "ADYEN_HMAC_KEYS",
};
const credentialSetting: Record<string, string> = {
  adyen: "ADYEN_WEBHOOK_USERNAME / ADYEN_WEBHOOK_PASSWORD",
};

/**
 * V4's reasons as an operator reads them: a short name, and what usually causes it. `%secret%`
 * and `%credentials%` are the refusal's own provider's settings (N21).
 */
const reasonWords: Record<string, [string, string]> = {
  signature_mismatch: [
    "Signature does not match",
    "The webhook secret is wrong (rotated at the provider or mistyped in %secret%), or the body was changed on the way.",
  ],
  signature_missing: [
    "No signature",
    "Not sent by the provider, or a proxy dropped the signature header.",
  ],
  signature_malformed: ["Signature header malformed", "Not a signature the provider writes."],
  signature_stale: ["Signature too old", "A replayed request, or the sender's clock is behind."],
  signature_future: ["Signature dated in the future", "The sender's clock is ahead."],
  credentials: [
    "Wrong credentials",
    "The provider's basic-auth user or password is wrong (%credentials%).",
  ],
  invalid_json: ["Body is not JSON", "Not a notification at all."],
  invalid_schema: ["Not a notification", "A body this provider never sends."],
  too_large: ["Body too large", "Larger than a notification may be."],
  unsupported_media_type: ["Not JSON", "Sent with another content type."],
};

export const reasonInWords = (reason: string) =>
  reasonWords[reason]?.[0] ?? reason.replaceAll("_", " ");
const reasonExplained = (reason: string, provider: string) =>
  reasonWords[reason]?.[1]
    .replace("%secret%", secretSetting[provider] ?? "the provider's webhook secret setting")
    .replace("%credentials%", credentialSetting[provider] ?? "the provider's settings");

/** V4: payments' refusals of the last 24 hours, or only those that name `orderId`. */
async function refusals(orderId?: number): Promise<Refusal[] | undefined> {
  const client = payments();
  if (!client) return undefined;
  const { items } = await answerOf(
    client.api.notifications.rejected.get({
      query: orderId === undefined ? {} : { order_id: orderId },
    }),
    "Listing refused notifications",
  );
  return items as Refusal[];
}

const noPayments = () =>
  empty("Not shown: the api has no PAYMENTS_PUBLIC_URL, so the console cannot reach payments.");

function examplesTable(examples: Example[]) {
  return table(
    ["At", "From", "Order"],
    examples.map((example) => [
      time(example.at),
      h("code", {}, example.source_ip),
      example.order_id === null
        ? "—"
        : link(`/console/orders/${example.order_id}`, `Order ${example.order_id}`),
    ]),
    "Latest examples",
  );
}

function refusalCard(refusal: Refusal) {
  const title = `${refusal.provider}: ${reasonInWords(refusal.reason)}`;
  return h(
    "article",
    { class: "card", "aria-label": title },
    h("h2", {}, title),
    reasonExplained(refusal.reason, refusal.provider)
      ? h("p", {}, reasonExplained(refusal.reason, refusal.provider))
      : null,
    h(
      "dl",
      { class: "facts" },
      [
        h("dt", {}, "Refused"),
        h("dd", {}, `${refusal.count} time${refusal.count === 1 ? "" : "s"}`),
      ],
      [h("dt", {}, "First"), h("dd", {}, time(refusal.first_at))],
      [h("dt", {}, "Last"), h("dd", {}, time(refusal.last_at))],
      [h("dt", {}, "Reason code"), h("dd", {}, h("code", {}, refusal.reason))],
    ),
    refusal.examples.length ? examplesTable(refusal.examples) : null,
  );
}

/** U7 "What did payments refuse?": the last 24 hours' refusals by provider and reason. */
export async function refusalsView() {
  const items = await refusals();
  return [
    h("h1", {}, "Refused notifications"),
    h(
      "p",
      { class: "muted" },
      "Notifications the payments service turned away in the last 24 hours (bad signature, wrong credentials, malformed body), by provider and reason, with the latest examples. A refused notification changed no order.",
    ),
    items === undefined
      ? noPayments()
      : items.length
        ? h("div", { class: "cards" }, items.map(refusalCard))
        : empty("Payments refused no notification in the last 24 hours."),
  ];
}

/** U7 "Why is order N not paid?": the notifications payments refused that named this order. */
export async function refusalsOfOrder(place: Element, orderId: number) {
  const items = await refusals(orderId);
  if (items === undefined) return place.replaceChildren(noPayments());
  const examples = items.flatMap((refusal) =>
    refusal.examples
      .filter((example) => example.order_id === orderId)
      .map((example) => ({ ...example, provider: refusal.provider })),
  );
  // N21: the true count payments keeps per order, not the examples it shows.
  const refused = items.reduce((sum, refusal) => sum + refusal.count, 0);
  place.replaceChildren(
    examples.length
      ? h(
          "div",
          {},
          h(
            "p",
            { class: "problem", role: "note" },
            `Payments refused ${refused} notification${refused === 1 ? "" : "s"} naming this order: none of them changed it.${refused > examples.length ? ` The first and latest ${examples.length} are below.` : ""}`,
          ),
          table(
            ["At", "Provider", "Reason", "From"],
            examples.map((example) => [
              time(example.at),
              example.provider,
              reasonInWords(example.reason),
              h("code", {}, example.source_ip),
            ]),
            `Refused notifications of order ${orderId}`,
          ),
          h(
            "ul",
            { class: "causes" },
            [
              ...new Map(
                examples.map((example) => [`${example.provider} ${example.reason}`, example]),
              ).values(),
            ].map(({ provider, reason }) =>
              reasonExplained(reason, provider)
                ? h(
                    "li",
                    {},
                    h("strong", {}, `${provider}: ${reasonInWords(reason)}`),
                    `: ${reasonExplained(reason, provider)}`,
                  )
                : null,
            ),
          ),
          h("p", {}, link("/console/refusals", "All refused notifications")),
        )
      : empty("Payments refused no notification naming this order in the last 24 hours."),
  );
}
