/**
 * A webhook receiver for developers (H2), the other side of the api's outgoing webhooks:
 *   npm run receive -- --secret whsec_... [--port 4000]
 * Listens on 127.0.0.1, prints each delivery (webhook-id, type, order, status) and whether its
 * signature verifies under the secret, checked by the `standardwebhooks` library as a receiver
 * in production would; answers 204 when it does, 400 when it does not (so the api retries).
 * Subscribe it with POST /api/webhook-endpoints {"url": "http://127.0.0.1:4000/", "events": ["*"]}
 * (the api needs WEBHOOK_ALLOW_HTTP=1 and WEBHOOK_ALLOW_PRIVATE=1 for that; `npm start` sets both).
 */
import { parseArgs } from "node:util";
import { Webhook } from "standardwebhooks";

const fail = (message: string): never => {
  console.error(message);
  process.exit(1);
};

const args = process.argv.slice(2);
// `bun scripts/receive.ts -- --secret x` passes the `--` on; npm strips it.
if (args[0] === "--") args.shift();

function readOptions(): { secret?: string; port: string } {
  try {
    return parseArgs({
      args,
      options: { secret: { type: "string" }, port: { type: "string", default: "4000" } },
    }).values;
  } catch (error) {
    return fail(
      `${(error as Error).message}\nusage: npm run receive -- --secret whsec_... [--port 4000]`,
    );
  }
}
const { secret, port } = readOptions();
if (!secret?.startsWith("whsec_"))
  fail(
    "usage: npm run receive -- --secret whsec_... [--port 4000] (the secret of the endpoint's 201)",
  );
if (!/^\d{1,5}$/.test(port)) fail(`--port must be a port number, got "${port}"`);

let webhook: Webhook;
try {
  webhook = new Webhook(secret as string);
} catch {
  fail("--secret must be whsec_ followed by base64, as the api's 201 showed it");
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(request) {
    const body = await request.text();
    const headers = {
      "webhook-id": request.headers.get("webhook-id") ?? "",
      "webhook-timestamp": request.headers.get("webhook-timestamp") ?? "",
      "webhook-signature": request.headers.get("webhook-signature") ?? "",
    };
    const at = new Date().toISOString();
    try {
      const event = webhook.verify(body, headers) as {
        type: string;
        data: { order_id?: number; status?: string };
      };
      const order = event.data.order_id === undefined ? "" : ` order ${event.data.order_id}`;
      const status = event.data.status ? ` ${event.data.status}` : "";
      console.log(`${at} ${headers["webhook-id"]} ${event.type}${order}${status}: verified`);
      console.log(`  ${body}`);
      return new Response(null, { status: 204 });
    } catch (error) {
      console.log(
        `${at} ${headers["webhook-id"] || "(no webhook-id)"}: NOT verified (${(error as Error).message})`,
      );
      return new Response("signature not verified", { status: 400 });
    }
  },
});
console.log(`receiving webhooks on http://127.0.0.1:${server.port}/ (Ctrl-C stops)`);
