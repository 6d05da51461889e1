import { eventSources } from "@commerce/shared/contract/messages";
import { ValidationError } from "@commerce/shared/platform/errors";
import { keysetPage, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { orderStatus } from "../../db/schema";
import { bodyInt, choice, integer, text } from "../../lib/fields";
import { orderAfter, productIdField } from "../../lib/ids";

const timestamp = (description: string) =>
  t.Nullable(t.String({ format: "date-time", description }));

const status = choice(orderStatus);

export const orderItem = t.Object({
  product_id: integer(),
  name: t.String({ description: "The product's name when the order was made" }),
  qty: integer(),
  unit_price: integer({ description: "The product's price when the order was made" }),
  amount: integer({ description: "unit_price × qty, in minor units of currency" }),
});

export const order = t.Object({
  order_id: integer(),
  status,
  items: t.Array(orderItem),
  amount: integer({ description: "Sum of the lines' amounts, in minor units of currency" }),
  currency: t.String(),
  created_at: t.String({ format: "date-time" }),
  expires_at: timestamp(
    "When an unpaid order is cancelled as expired; null once it is not created",
  ),
  paid_at: timestamp("When it was paid"),
  cancelled_at: timestamp("When it was cancelled"),
  refunded_at: timestamp("When it was refunded"),
  refunded_amount: integer({
    description:
      "What the provider gave back through refunds the shop asked for; the order is refunded when it reaches amount",
  }),
  cancel_reason: t.Nullable(
    t.Union([t.Literal("customer"), t.Literal("admin"), t.Literal("expired")]),
  ),
  product_id: t.Optional(integer({ description: "For an order of one line: its product" })),
  qty: t.Optional(integer({ description: "For an order of one line: its quantity" })),
});

const qty = bodyInt(1, 1000);
const line = t.Object({ product_id: productIdField, qty }, { additionalProperties: false });

/**
 * Either the one-line body as first published (`product_id`, `qty`) or `items`. One object with
 * every field optional, not a union, so a bad field is named in the 400 (`/qty`,
 * `/items/0/product_id`); `linesOf` then requires exactly one of the two shapes.
 */
export const newOrder = t.Object(
  {
    product_id: t.Optional(productIdField),
    qty: t.Optional(qty),
    items: t.Optional(t.Array(line, { minItems: 1, maxItems: 50 })),
  },
  {
    additionalProperties: false,
    description:
      "Either product_id and qty (one line), or items (1 to 50 lines; lines naming one product are merged)",
    examples: [
      { product_id: 1, qty: 2 },
      {
        items: [
          { product_id: 1, qty: 2 },
          { product_id: 2, qty: 1 },
        ],
      },
    ],
  },
);

// Written out, not mapped from orderStatus: a mapped array types the field as never.
const moveStatus = t.Union(
  [t.Literal("created"), t.Literal("paid"), t.Literal("cancelled"), t.Literal("refunded")],
  {
    description:
      "paid or refunded (admin), cancelled (the owner or an admin); the status the order already has changes nothing",
  },
);
const moveNote = text(1, 1000, "Why; required of an admin, kept on the timeline entry", {
  multiline: true,
  name: "note",
});

export const orderStatusChange = t.Object(
  { status: moveStatus, note: t.Optional(moveNote) },
  {
    additionalProperties: false,
    examples: [
      { status: "cancelled" },
      { status: "refunded", note: "Refunded by hand in the Stripe dashboard, ticket 4411" },
    ],
  },
);

/** R4, V6: the order after a PATCH; a manual refund says that it sent no money back. */
export const orderStatusChanged = t.Composite([
  order,
  t.Object({
    notice: t.Optional(
      t.String({
        description:
          "Said of a manual refunded: the move records a refund made elsewhere and sends no money back",
      }),
    ),
  }),
]);

export const orderListQuery = t.Object(
  {
    ...pageQuery,
    // `choice`: t.UnionEnum defaults to its first value, so an absent status listed only
    // `created` orders.
    status: t.Optional(choice(orderStatus)),
    after: t.Optional(orderAfter),
  },
  { additionalProperties: true },
);
export const orderPage = keysetPage(order);

export const timeline = t.Object({
  items: t.Array(
    t.Object({
      seq: integer({
        description: "1 for the first thing that happened to the order, then 2, ...",
      }),
      type: choice([
        "created",
        "paid",
        "cancelled",
        "refunded",
        "payment_failed",
        "dispute_opened",
        "dispute_won",
        "dispute_lost",
        "refund_requested",
        "refund_failed",
        "review_opened",
        "review_resolved",
      ]),
      at: t.String({ format: "date-time" }),
      source: choice(eventSources, {
        description:
          "api: the customer's request; manual: an admin's; webhook: a payment notification; reconciliation: a payment notification payments found at the provider because its webhook never came; expiry: the api's own sweep; review: an admin resolving a payment review",
      }),
      notification_id: t.Nullable(
        t.String({ description: "The payment notification that caused it, if one did" }),
      ),
      actor: t.Nullable(
        t.String({
          description:
            "The admin (token sub) who made a manual move or resolved a review; null otherwise",
        }),
      ),
      detail: t.Record(t.String(), t.Unknown(), {
        description:
          'e.g. {"reason": "expired"}, {"review_id": 7, "reason": "mismatch"}, or an admin\'s {"note": "…"}',
      }),
    }),
  ),
});

const orderExample = {
  order_id: 1021,
  status: "created",
  items: [{ product_id: 42, name: "Desk lamp", qty: 2, unit_price: 1999, amount: 3998 }],
  amount: 3998,
  currency: "USD",
  created_at: "2026-11-23T14:01:55.120Z",
  expires_at: "2026-11-23T14:31:55.120Z",
  paid_at: null,
  cancelled_at: null,
  refunded_at: null,
  refunded_amount: 0,
  cancel_reason: null,
  product_id: 42,
  qty: 2,
};

// D5: the document's named components.
named("OrderItem", orderItem, {
  examples: [{ product_id: 42, name: "Desk lamp", qty: 2, unit_price: 1999, amount: 3998 }],
});
named("Order", order, { examples: [orderExample] });
named("OrderPage", orderPage, {
  description: "A page of orders",
  examples: [
    { items: [orderExample], page: 1, pages: 1, per_page: 20, total: 1, next_after: null },
  ],
});
named("TimelineEntry", timeline.properties.items.items, {
  examples: [
    {
      seq: 2,
      type: "paid",
      at: "2026-11-23T14:02:11.530Z",
      source: "webhook",
      notification_id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
      actor: null,
      detail: {},
    },
  ],
});
named("Timeline", timeline);
named("OrderStatusChange", orderStatusChange);
named("OrderStatusChanged", orderStatusChanged, {
  description: "The order after the move; a manual refund's answer adds `notice`",
});

/**
 * D5: `POST /api/orders`'s body as the document states it, one of its two shapes, so a client
 * generated from the document refuses `{}` as the server does. The route itself validates one
 * object with every field optional, so a 400 names the wrong field; `linesOf` then requires one
 * shape. E6: the same for `PATCH /api/orders/{id}`: a move with a note, or a cancel without one,
 * so a client refuses a move to paid or refunded without its note (an admin's cancel needs one
 * too, which depends on the token and is said in words).
 */
export const orderBodyShapes = {
  OrderMoveWithNote: t.Object(
    { status: moveStatus, note: moveNote },
    {
      additionalProperties: false,
      description: "A move with a note saying why: how an admin moves an order (400 without it)",
      examples: [
        { status: "refunded", note: "Refunded by hand in the Stripe dashboard, ticket 4411" },
      ],
    },
  ),
  OrderCancel: t.Object(
    { status: t.Literal("cancelled") },
    {
      additionalProperties: false,
      description: "A customer's cancel of their own unpaid order, without a note",
      examples: [{ status: "cancelled" }],
    },
  ),
  OneLineOrder: t.Object(
    { product_id: productIdField, qty },
    {
      additionalProperties: false,
      description: "An order of one line",
      examples: [{ product_id: 42, qty: 2 }],
    },
  ),
  OrderOfItems: t.Object(
    { items: t.Array(named("OrderLine", line), { minItems: 1, maxItems: 50 }) },
    {
      additionalProperties: false,
      description: "An order of 1 to 50 lines; lines naming one product are merged",
      examples: [
        {
          items: [
            { product_id: 42, qty: 2 },
            { product_id: 7, qty: 1 },
          ],
        },
      ],
    },
  ),
};

export type Order = typeof order.static;
export type OrderItem = typeof orderItem.static;
export type NewOrder = typeof newOrder.static;
export type { OrderStatus } from "../../db/schema";
/** One requested line: a product and how many. */
export type OrderLine = { product_id: number; qty: number };

/**
 * D6: what the schema allows the service accepts: lines naming one product are one line, of
 * their quantities together, where the product first appears.
 */
function mergedLines(items: OrderLine[]): OrderLine[] {
  const byProduct = new Map<number, OrderLine>();
  for (const { product_id, qty } of items) {
    const known = byProduct.get(product_id);
    if (known) known.qty += qty;
    else byProduct.set(product_id, { product_id, qty });
  }
  return [...byProduct.values()];
}

/** The requested lines of either body shape (R1); 400 naming what is missing or extra. */
export function linesOf(input: NewOrder): { lines: OrderLine[]; oneLine: boolean } {
  const { product_id, qty, items } = input;
  if (items !== undefined) {
    const extra = product_id !== undefined ? "/product_id" : qty !== undefined ? "/qty" : undefined;
    if (extra)
      throw new ValidationError("The request body is invalid", [
        { path: extra, message: "give either items, or product_id and qty, not both" },
      ]);
    return { lines: mergedLines(items), oneLine: false };
  }
  if (product_id === undefined || qty === undefined)
    throw new ValidationError("The request body is invalid", [
      {
        path: product_id === undefined ? "/product_id" : "/qty",
        message: `${product_id === undefined ? "product_id" : "qty"} is required (or give items)`,
      },
    ]);
  return { lines: [{ product_id, qty }], oneLine: true };
}
