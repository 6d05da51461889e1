/** Connection settings and small helpers for tests, which run against the real servers. */
export const testDatabaseUrl = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";
export const testNatsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";

/** A short unique name, for customers, categories and stream prefixes of one test. */
export const unique = (label = "t") =>
  `${label}${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 5000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}
