import type { MigrationMeta } from "drizzle-orm/migrator";
import {
  databaseUnavailable,
  lockTimedOut,
  migrateSchema,
  type Sql,
  startRefusal,
} from "./database";
import { describeError, type Logger } from "./logger";

/**
 * X2: the service's migrations, applied at start, or, when the database is unreachable or
 * read-only then (a standby, HAProxy not yet settled, a failover under way), tried again every
 * `retryMs` until they are: the service starts anyway, `/health` 200 and `/ready` 503 meanwhile,
 * instead of exiting on SQLSTATE 25006. So too when the migration lock or a table a migration
 * alters stays held past its lock timeout (another replica migrating, a long transaction: N14 v5).
 * Any other error at the first attempt (a broken migration) still stops the service.
 */
export class MigrationsUntilDone {
  done = false;
  stopped = false;
  private readonly finished = Promise.withResolvers<void>();
  /** Resolves once the migrations are applied (never, if the service stops first). */
  readonly applied = this.finished.promise;
  private timer?: Timer;
  /** The last failure the retries logged, so the same one is not logged again each second. */
  private lastFailure?: string;

  constructor(
    private readonly sql: Sql,
    private readonly schema: string,
    private readonly migrations: MigrationMeta[],
    private readonly logger: Logger,
    private readonly retryMs = 1000,
  ) {}

  private async attempt(): Promise<void> {
    await migrateSchema(this.sql, { schema: this.schema, migrations: this.migrations });
    this.done = true;
    this.finished.resolve();
  }

  async firstAttempt(): Promise<void> {
    try {
      await this.attempt();
    } catch (error) {
      if (lockTimedOut(error)) {
        this.logger.warn("migration lock held elsewhere; migrations will be retried", {
          ...describeError(error),
        });
      } else if (databaseUnavailable(error)) {
        this.logger.warn("database not writable yet; migrations will be retried", {
          ...describeError(error),
        });
      } else throw error;
      this.retryLater();
    }
  }

  private retryLater(): void {
    this.timer = setTimeout(async () => {
      if (this.stopped) return;
      try {
        await this.attempt();
        this.logger.info("migrations applied", { schema: this.schema });
      } catch (error) {
        // Even a non-connection error may be the database's state (e.g. a lock held by a
        // replica that died); the service stays not ready and says why, once per cause rather
        // than every retry (a wrong password would be a line a second).
        const why = describeError(error);
        const cause = JSON.stringify(why);
        if (!databaseUnavailable(error) && !lockTimedOut(error) && cause !== this.lastFailure)
          this.logger.error("migrations failed; retrying", {
            ...why,
            ...(startRefusal(error) ? { cause: startRefusal(error) } : {}),
          });
        this.lastFailure = cause;
        this.retryLater();
      }
    }, this.retryMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
