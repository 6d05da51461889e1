import {
  type Span as OtelSpan,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type {
  Span,
  SpanAttributes,
  SpanKind as SpanKindName,
  SpanOptions,
  TraceContext,
  Tracer,
} from "./tracing";

const kinds: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

/** The SDK spans behind the contexts this tracer handed out, so a child knows its parent is local. */
const localSpans = new WeakMap<TraceContext, OtelSpan>();

class RecordedSpan implements Span {
  readonly context: TraceContext;

  constructor(private readonly span: OtelSpan) {
    const { traceId, spanId, traceFlags } = span.spanContext();
    this.context = { traceId, spanId, sampled: (traceFlags & TraceFlags.SAMPLED) !== 0 };
    localSpans.set(this.context, span);
  }

  get recording(): boolean {
    return this.span.isRecording();
  }

  set(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }

  rename(name: string): void {
    this.span.updateName(name);
  }

  fail(error?: unknown): void {
    if (error instanceof Error) this.span.recordException(error);
    this.span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.name : undefined,
    });
  }

  end(): void {
    this.span.end();
  }
}

/**
 * O8 with `OTEL_EXPORTER_OTLP_ENDPOINT` set: spans recorded by the OpenTelemetry SDK and sent in
 * batches to `<endpoint>/v1/traces` over OTLP/HTTP (JSON). Parents are passed explicitly, so no
 * context manager and no global provider is registered; the SDK's default sampler follows the
 * parent's sampled flag and samples new traces.
 */
export function otlpTracer(serviceName: string, endpoint: string): Tracer {
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName }),
    // A second between exports: a payment's spans reach the collector while someone looks.
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer("@commerce/shared");

  return {
    startSpan(name: string, { parent, kind = "internal", attributes }: SpanOptions = {}): Span {
      const local = parent && localSpans.get(parent);
      const context = local
        ? trace.setSpan(ROOT_CONTEXT, local)
        : parent
          ? trace.setSpanContext(ROOT_CONTEXT, {
              traceId: parent.traceId,
              spanId: parent.spanId,
              traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
              isRemote: true,
            })
          : ROOT_CONTEXT;
      return new RecordedSpan(tracer.startSpan(name, { kind: kinds[kind], attributes }, context));
    },
    // O7 allows 10 s for everything: spans a collector does not take in 2 s are dropped.
    shutdown: () => Promise.race([provider.shutdown(), Bun.sleep(2000)]),
  };
}
