/**
 * A healthy webhook receiver in a process of its own (H10's row): answers 204 at once and notes
 * the wall-clock time each `webhook-id` first came. `GET /arrivals` hands back the notes as JSON
 * (`{"<webhook-id>": epoch ms}`), so the bench compares them with when it sent each notification.
 *
 *   npx bun bench/receiver.ts      # prints "listening <port>" on its first line
 */
const arrived: Record<string, number> = {};

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  async fetch(request) {
    if (request.method === "GET") return Response.json(arrived);
    const at = performance.timeOrigin + performance.now();
    const id = request.headers.get("webhook-id") ?? "";
    if (!(id in arrived)) arrived[id] = at;
    await request.arrayBuffer();
    return new Response(null, { status: 204 });
  },
});
console.log(`listening ${server.port}`);
