/**
 * What `npm start` shows once the services are ready: demo products on an empty catalog, an
 * admin and a customer token, and one fresh order with the webhook command that pays it.
 */
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";

const catalog: Record<string, Array<[string, number]>> = {
  coffee: [
    ["Espresso beans, 1 kg", 2490],
    ["Filter roast, 500 g", 1290],
    ["Decaf beans, 250 g", 890],
  ],
  tea: [
    ["Sencha, 100 g", 990],
    ["Earl Grey, 250 g", 750],
    ["Rooibos, 200 g", 650],
  ],
  kitchen: [
    ["Stoneware mug", 1299],
    ["Pour-over dripper", 2200],
    ["Burr grinder", 8900],
  ],
  books: [
    ["The coffee atlas", 3500],
    ["Tea, a short history", 1800],
    ["Brewing at home", 2400],
  ],
};

const tokenTtl = "12h";

/** 4980 USD minor units as "49.80 USD" (amounts in the API are minor units). */
function money(minor: number, currency: string): string {
  const digits =
    new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions()
      .maximumFractionDigits ?? 2;
  return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
}

function token(subject: string, scope: string, jwtSecret: string): Promise<string> {
  let jwt = new SignJWT({ scope })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime(tokenTtl);
  if (process.env.AUTH_ISSUER) jwt = jwt.setIssuer(process.env.AUTH_ISSUER);
  if (process.env.AUTH_AUDIENCE) jwt = jwt.setAudience(process.env.AUTH_AUDIENCE);
  return jwt.sign(new TextEncoder().encode(jwtSecret));
}

/** The lines to print; throws when the api answers otherwise than expected. */
export async function demo(
  { apiUrl, paymentsPort, jwtSecret }: { apiUrl: string; paymentsPort: number; jwtSecret: string },
  say: (line: string) => void,
): Promise<string[]> {
  for (const name of ["AUTH_JWKS_URL", "AUTH_PUBLIC_KEY", "AUTH_PUBLIC_KEY_FILE"])
    if (process.env[name]?.trim())
      throw new Error(`${name} is set, so the api takes no tokens we can sign`);
  const adminToken = await token("demo-admin", "admin", jwtSecret);
  const customerToken = await token("alice", "customer", jwtSecret);
  const call = async <T>(method: string, path: string, bearer: string, body?: unknown) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  };
  type Page = { total: number; items: Array<{ id: number; name: string }> };

  if ((await call<Page>("GET", "/api/products?per_page=1", adminToken)).total === 0) {
    for (const [category, products] of Object.entries(catalog))
      for (const [name, price] of products)
        await call("POST", "/api/products", adminToken, { name, price, category });
    say(
      `created ${Object.values(catalog).flat().length} demo products in ${Object.keys(catalog).length} categories`,
    );
  }
  const [product] = (await call<Page>("GET", "/api/products?per_page=1", adminToken)).items;
  // N5: alice may hold only so many unpaid orders; earlier runs' demo orders make way (oldest
  // first) rather than the demo failing.
  type Placed = { order_id: number; amount: number; currency: string };
  const place = () =>
    call<Placed>("POST", "/api/orders", customerToken, { product_id: product.id, qty: 2 });
  // Makes way when alice holds too much (N5): her other unpaid orders are cancelled, oldest first,
  // never one this run placed.
  const placeMakingWay = (keep: number[]) =>
    place().catch(async (error: Error) => {
      if (!/HOLD_MAX_(ORDERS|UNITS)/.test(error.message)) throw error;
      const unpaid = await call<{ items: Array<{ order_id: number }> }>(
        "GET",
        "/api/orders?status=created&per_page=100",
        customerToken,
      );
      const others = unpaid.items.filter(({ order_id }) => !keep.includes(order_id));
      for (const { order_id } of others.toReversed())
        await call("PATCH", `/api/orders/${order_id}`, customerToken, { status: "cancelled" });
      say(
        `cancelled ${others.length} unpaid demo order(s) of alice (HOLD_MAX_ORDERS, HOLD_MAX_UNITS)`,
      );
      return place();
    });
  const order = await placeMakingWay([]);
  // O10: the cancel example gets an order of its own, not the one the lines above pay and refund.
  const another = await placeMakingWay([order.order_id]).catch(() => undefined);
  const webhook = (event: string) =>
    [
      `npm run webhook -- --order ${order.order_id} --amount ${order.amount}`,
      event === "payment.succeeded" ? "" : ` --event ${event}`,
      // A fresh id: a NATS shared with another stack may hold the derived id in its dedup window.
      ` --id evt_demo_${order.order_id}_${randomBytes(4).toString("hex")}`,
      order.currency === "USD" ? "" : ` --currency ${order.currency}`,
      paymentsPort === 3001 ? "" : ` --url http://127.0.0.1:${paymentsPort}/api/webhooks/payment`,
    ].join("");
  // N16: the link carries a code that signs in once, within 10 minutes; never the token itself.
  const signIn = await call<{ code: string; expires_at: string }>(
    "POST",
    "/api/console/sign-in-codes",
    adminToken,
  );
  return [
    `Operator console (signs in as demo-admin once, until ${signIn.expires_at}): ${apiUrl}/console#code=${signIn.code}`,
    "",
    `Tokens (valid ${tokenTtl}; more with npm run token -- --sub NAME [--admin]):`,
    `  export ADMIN_TOKEN=${adminToken}`,
    `  export TOKEN=${customerToken}`,
    `  curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/products`,
    "",
    `Demo order ${order.order_id} (2 x ${product.name}, ${money(order.amount, order.currency)}) awaits payment; pay it as the provider would:`,
    `  ${webhook("payment.succeeded")}`,
    `  curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/orders/${order.order_id}`,
    "Then refund it:",
    `  ${webhook("payment.refunded")}`,
    ...(another
      ? [
          `The customer may cancel an order that is not paid yet, such as demo order ${another.order_id}:`,
          `  curl -X PATCH -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -d '{"status":"cancelled"}' ${apiUrl}/api/orders/${another.order_id}`,
        ]
      : []),
    "",
    "Order events as signed webhooks: subscribe a receiver (the answer shows its secret once), then run it:",
    `  curl -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" -d '{"url":"http://127.0.0.1:4000/","events":["*"]}' ${apiUrl}/api/webhook-endpoints`,
    "  npm run receive -- --secret whsec_... --port 4000",
    "",
  ];
}
