import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";

/** The channel migration 0011's trigger notifies when a transaction queued webhook deliveries. */
export const wakeChannel = "api_webhooks_due";

/**
 * H10: wakes this process's dispatcher when any api (this one or a replica) commits deliveries.
 * The trigger's NOTIFY arrives when the transaction commits, so a replica that did not commit
 * the move claims at once, not at its next poll; the process that committed it is also woken
 * in-process right after its commit (`eventsWritten`), and hears its own NOTIFY as well, which
 * the dispatcher's own coalescing of kicks absorbs. postgres.js keeps the LISTEN on a connection
 * of its own and listens again after a reconnection; until then the poll is the fallback.
 */
export class DispatcherWake {
  private listening?: { unlisten(): Promise<void> };
  private stopped = false;

  constructor(
    private readonly deps: {
      sql: Sql;
      logger: Logger;
      /** Called for each NOTIFY heard. */
      onWake: () => void;
    },
  ) {}

  start() {
    // Started again after a stop (as the dispatcher may be), it listens again.
    this.stopped = false;
    const { sql, logger, onWake } = this.deps;
    // A pool of one (npm start's embedded PGlite) serves one api, so no replica to hear from,
    // and its socket would keep a second connection waiting forever.
    if (sql.options.max <= 1) return;
    sql
      .listen(wakeChannel, () => onWake())
      .then((listening) => {
        this.listening = listening;
        if (this.stopped) void this.stop();
      })
      .catch((error) =>
        logger.warn("webhook wake not listening: replicas deliver at their poll", {
          ...describeError(error),
        }),
      );
  }

  async stop() {
    this.stopped = true;
    await this.listening?.unlisten().catch(() => {});
    this.listening = undefined;
  }
}
