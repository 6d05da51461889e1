import { named } from "@commerce/shared/platform/openapi";
import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const field = (path: string, message: string) => ({ error: { path, message } });
/** An item's field: the error's path is where in the batch it failed. */
const itemField = (message: string) => ({ error: { path: "", message } });
const text = (name: string) =>
  t.String({ maxLength: 255, ...itemField(`${name} must be a string of up to 255 characters`) });

/** Y1, Y2: what the intake reads of one `NotificationRequestItem`; other fields are kept, unread. */
export const notificationRequestItem = t.Object(
  {
    eventCode: t.String({
      minLength: 1,
      maxLength: 100,
      pattern: "^[\\x21-\\x7e]+$",
      examples: ["AUTHORISATION"],
      ...itemField("eventCode must be 1 to 100 printable ASCII characters"),
    }),
    pspReference: t.String({
      minLength: 1,
      maxLength: 100,
      pattern: "^[\\x21-\\x7e]+$",
      ...itemField("pspReference must be 1 to 100 printable ASCII characters"),
    }),
    originalReference: t.Optional(
      t.String({
        maxLength: 100,
        pattern: "^[\\x21-\\x7e]*$",
        ...itemField("originalReference must be up to 100 printable ASCII characters"),
      }),
    ),
    merchantReference: t.Optional(text("merchantReference")),
    merchantAccountCode: text("merchantAccountCode"),
    success: t.Union([t.Literal("true"), t.Literal("false")], {
      ...itemField('success must be "true" or "false"'),
    }),
    amount: t.Object(
      {
        value: Type.Integer({
          minimum: 0,
          maximum: Number.MAX_SAFE_INTEGER,
          ...itemField("amount.value must be an integer of at least 0"),
        }),
        currency: t.String({
          pattern: "^[A-Za-z]{3}$",
          ...itemField("amount.currency must be a three-letter code"),
        }),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

/** Y1: Adyen's standard webhook, a batch of items. */
export const adyenBatch = t.Object(
  {
    live: t.Optional(t.String()),
    notificationItems: t.Array(
      t.Object(
        { NotificationRequestItem: notificationRequestItem },
        { additionalProperties: true },
      ),
      {
        minItems: 1,
        maxItems: 100,
        ...field("/notificationItems", "notificationItems must be a list of 1 to 100 items"),
      },
    ),
  },
  {
    additionalProperties: true,
    description: "An Adyen standard webhook (JSON), as Adyen sends it",
  },
);

export const adyenSecurity = {
  name: "adyenHmac",
  scheme: {
    type: "http",
    scheme: "basic",
    description:
      "HTTP Basic credentials when ADYEN_WEBHOOK_USERNAME / _PASSWORD are set; each item also " +
      "carries additionalData.hmacSignature under a key of ADYEN_HMAC_KEYS.",
  },
  who: () =>
    "The payment provider Adyen: no bearer token; every item's HMAC signature (and Basic credentials when set) is the credential.",
};

export const adyenAccepted = t.String({
  description: "Exactly `[accepted]`",
  examples: ["[accepted]"],
});

export type NotificationRequestItem = typeof notificationRequestItem.static;
export type AdyenBatch = typeof adyenBatch.static;

// D5: the document's named components.
named("AdyenNotificationRequestItem", notificationRequestItem, {
  description: "One item of an Adyen standard webhook",
});
named("AdyenNotificationBatch", adyenBatch, {
  description: "An Adyen standard webhook: a batch of notification items",
  examples: [
    {
      live: "false",
      notificationItems: [
        {
          NotificationRequestItem: {
            eventCode: "AUTHORISATION",
            success: "true",
            pspReference: "QFQTPCQ8HXSKGK82",
            merchantReference: "42",
            merchantAccountCode: "ShopECOM",
            amount: { value: 4200, currency: "USD" },
            eventDate: "2026-11-23T20:41:07+01:00",
            additionalData: { hmacSignature: "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=" },
          },
        },
      ],
    },
  ],
});
