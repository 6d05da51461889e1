/**
 * O8: W3C trace context (`traceparent`) and the spans the services open. A `Tracer` gives every
 * request and message a trace id and a span id of its own; with `OTEL_EXPORTER_OTLP_ENDPOINT` set
 * the OpenTelemetry SDK records and exports the spans (`tracing-otlp.ts`), otherwise `idTracer`
 * only makes the ids, so the hot path does no SDK work at all.
 */

/** The part of a W3C trace context the services pass on: whose trace, which span, sampled. */
export type TraceContext = { traceId: string; spanId: string; sampled: boolean };

export type SpanKind = "server" | "client" | "producer" | "consumer" | "internal";
export type SpanAttributes = Record<string, string | number | boolean>;
export type SpanOptions = {
  /** The span this one continues; none starts a new trace. */
  parent?: TraceContext;
  kind?: SpanKind;
  attributes?: SpanAttributes;
};

export interface Span {
  readonly context: TraceContext;
  /** False when nothing records the span: skip building attributes for it. */
  readonly recording: boolean;
  set(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed; `error`, when given, is recorded as an exception. */
  fail(error?: unknown): void;
  end(): void;
}

export interface Tracer {
  startSpan(name: string, options?: SpanOptions): Span;
  /** Exports what is still buffered and stops (O7). */
  shutdown(): Promise<void>;
}

// version 00: exactly four fields; a later version may append more after a dash (W3C, "Versioning").
const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const zeroTraceId = "0".repeat(32);
const zeroSpanId = "0".repeat(16);

/** The caller's trace context, or undefined when the header is missing or not valid W3C. */
export function parseTraceparent(header: string | null | undefined): TraceContext | undefined {
  if (!header || header.length > 512) return undefined;
  const match = traceparentPattern.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (traceId === zeroTraceId || spanId === zeroSpanId) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

export const formatTraceparent = ({ traceId, spanId, sampled }: TraceContext): string =>
  `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;

/** Random lower-case hex of `bytes` bytes, never all zeros (W3C calls that invalid). */
function randomHex(bytes: number): string {
  const buffer = Buffer.allocUnsafe(bytes);
  do crypto.getRandomValues(buffer);
  while (buffer.every((byte) => byte === 0));
  return buffer.toString("hex");
}

/** The log fields of a trace context (O6, O8). */
export const traceFields = (context: TraceContext | undefined) =>
  context ? { trace_id: context.traceId, span_id: context.spanId } : {};

class IdOnlySpan implements Span {
  readonly recording = false;
  readonly context: TraceContext;

  constructor(parent: TraceContext | undefined) {
    this.context = {
      traceId: parent?.traceId ?? randomHex(16),
      spanId: randomHex(8),
      sampled: parent?.sampled ?? true,
    };
  }

  set(): void {}
  rename(): void {}
  fail(): void {}
  end(): void {}
}

/** Without an OTLP endpoint: ids to log and pass on, nothing recorded or exported. */
export const idTracer: Tracer = {
  startSpan: (_name, options) => new IdOnlySpan(options?.parent),
  shutdown: async () => {},
};

/** Runs `work` in a span of its own, marked failed if `work` throws, ended either way. */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: SpanOptions,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options);
  try {
    return await work(span);
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The tracer a service runs with: the OpenTelemetry SDK exporting to `endpoint` over OTLP/HTTP
 * when one is set (loaded only then), else `idTracer`.
 */
export async function createTracer(
  serviceName: string,
  endpoint: string | undefined,
): Promise<Tracer> {
  if (!endpoint) return idTracer;
  const { otlpTracer } = await import("./tracing-otlp");
  return otlpTracer(serviceName, endpoint);
}
