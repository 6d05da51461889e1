/** One span as an OTLP/HTTP JSON export carries it, with the service that sent it. */
export type ReceivedSpan = {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
};

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<Omit<ReceivedSpan, "service" | "attributes"> & { attributes?: KeyValue[] }>;
    }>;
  }>;
};

const plainValue = (value: AnyValue) =>
  value.stringValue ?? value.boolValue ?? value.doubleValue ?? Number(value.intValue);
const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]));

/**
 * A collector's OTLP/HTTP trace endpoint in the test process (`POST /v1/traces`, JSON), keeping
 * every span it is sent; point `OTEL_EXPORTER_OTLP_ENDPOINT` at `url`.
 */
export function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (request.method !== "POST" || path !== "/v1/traces")
        return new Response("not found", { status: 404 });
      if (!request.headers.get("content-type")?.startsWith("application/json"))
        return new Response("only JSON here", { status: 415 });
      const body = (await request.json()) as ExportRequest;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"]);
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes as KeyValue[] | undefined),
            });
      }
      return Response.json({});
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    stop: () => server.stop(true),
  };
}
