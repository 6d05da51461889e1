/** A failed message is redelivered after this long at most. */
const maxBackoffMs = 30_000;

/** M2: how long a message that failed waits before its next delivery: 0.5 s, doubling, to 30 s. */
export const retryDelayMs = (redeliveryCount: number) =>
  Math.min(maxBackoffMs, 500 * 2 ** Math.min(redeliveryCount, 6));
