import { describe, expect, test } from "bun:test";
import { formatTraceparent, idTracer, inSpan, parseTraceparent } from "./tracing";

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const spanId = "00f067aa0ba902b7";

describe("W3C trace context", () => {
  test("O8: a valid traceparent is read, sampled or not, and written back the same", () => {
    const sampled = `00-${traceId}-${spanId}-01`;
    expect(parseTraceparent(sampled)).toEqual({ traceId, spanId, sampled: true });
    expect(parseTraceparent(`00-${traceId}-${spanId}-00`)).toEqual({
      traceId,
      spanId,
      sampled: false,
    });
    expect(formatTraceparent({ traceId, spanId, sampled: true })).toBe(sampled);
    // A later version may add fields; what version 00 defines is still read.
    expect(parseTraceparent(`01-${traceId}-${spanId}-03-later`)?.traceId).toBe(traceId);
  });

  test("O8: an invalid traceparent is ignored, so the request starts a trace of its own", () => {
    for (const header of [
      null,
      "",
      "garbage",
      `00-${traceId.toUpperCase()}-${spanId}-01`,
      `00-${"0".repeat(32)}-${spanId}-01`,
      `00-${traceId}-${"0".repeat(16)}-01`,
      `ff-${traceId}-${spanId}-01`,
      `00-${traceId}-${spanId}-01-extra`,
      `00-${traceId.slice(1)}-${spanId}-01`,
      `00-${traceId}-${spanId}-1`,
      `00-${traceId}-${spanId}-01`.padEnd(600, "x"),
    ])
      expect(parseTraceparent(header)).toBeUndefined();
  });

  test("O8: without an exporter, a span continues its parent's trace with a new span id, or starts one", async () => {
    const child = idTracer.startSpan("child", { parent: { traceId, spanId, sampled: false } });
    expect(child.context).toMatchObject({ traceId, sampled: false });
    expect(child.context.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.context.spanId).not.toBe(spanId);
    expect(child.recording).toBe(false);
    const root = idTracer.startSpan("root");
    expect(root.context.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.context.traceId).not.toBe(idTracer.startSpan("another").context.traceId);
    await expect(
      inSpan(idTracer, "failing", {}, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
  });
});
