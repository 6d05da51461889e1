import { ConflictError, HttpError, UnprocessableError } from "@commerce/shared/platform/errors";
import { and, eq, lt, sql } from "drizzle-orm";
import { t } from "elysia";
import type { Database, Transaction } from "../db";
import { idempotencyKeys } from "../db/schema";

const keyLifetime = sql`interval '24 hours'`;
/** A key still "running" after this long belongs to a request that died; it may be taken over. */
const abandonedAfter = sql`interval '30 seconds'`;

export const idempotencyHeaders = t.Object({
  "idempotency-key": t.Optional(
    t.String({
      minLength: 1,
      maxLength: 255,
      description: "Retrying with the same key and body within 24 h replays the first response",
    }),
  ),
});

/** R1, R2, C4: the headers of a 201 that made (or, replayed, had made) the resource at `location`. */
export const createdHeaders = (location: string, replayed: boolean): Record<string, string> =>
  replayed ? { location, "idempotent-replayed": "true" } : { location };

/**
 * R2: the first request with a customer's Idempotency-Key claims it, does its work and records
 * its response in one transaction; a later one with the same request replays it, gets 409 while
 * the first still runs, or 422 when its request differs. A first request that fails releases
 * the key, so a retry runs afresh. `request` is what makes two requests the same (route + body).
 */
export async function once<T>(
  db: Database,
  customerId: string,
  key: string,
  request: unknown,
  work: (tx: Transaction) => Promise<T>,
): Promise<{ body: T; replayed: boolean }> {
  const requestHash = new Bun.CryptoHasher("sha256").update(JSON.stringify(request)).digest("hex");
  const thisKey = and(eq(idempotencyKeys.customerId, customerId), eq(idempotencyKeys.key, key));

  for (let attempt = 0; attempt < 3; attempt++) {
    const [claimed] = await db
      .insert(idempotencyKeys)
      .values({ customerId, key, requestHash })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });

    if (claimed) {
      try {
        const body = await db.transaction(async (tx) => {
          const result = await work(tx);
          await tx
            .update(idempotencyKeys)
            .set({ responseStatus: 201, responseBody: result })
            .where(thisKey);
          return result;
        });
        return { body, replayed: false };
      } catch (error) {
        // Nothing was done, so the key is released and a retry runs afresh.
        await db.delete(idempotencyKeys).where(thisKey);
        throw error;
      }
    }

    const [existing] = await db
      .select({
        requestHash: idempotencyKeys.requestHash,
        responseStatus: idempotencyKeys.responseStatus,
        responseBody: idempotencyKeys.responseBody,
        expired: sql<boolean>`${idempotencyKeys.createdAt} < now() - ${keyLifetime}`,
        abandoned: sql<boolean>`${idempotencyKeys.createdAt} < now() - ${abandonedAfter}`,
      })
      .from(idempotencyKeys)
      .where(thisKey);
    if (!existing) continue;
    const stale = existing.expired || (existing.responseStatus === null && existing.abandoned);
    if (stale) {
      await db
        .delete(idempotencyKeys)
        .where(and(thisKey, eq(idempotencyKeys.requestHash, existing.requestHash)));
      continue;
    }
    if (existing.requestHash !== requestHash)
      throw new UnprocessableError(
        "This Idempotency-Key was already used with a different request",
      );
    if (existing.responseStatus === null)
      throw new ConflictError("A request with this Idempotency-Key is still being processed");
    return { body: existing.responseBody as T, replayed: true };
  }
  throw new HttpError(500, "Internal Server Error", "Could not settle the Idempotency-Key");
}

export const deleteExpiredIdempotencyKeys = (db: Database) =>
  db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, sql`now() - ${keyLifetime}`));
