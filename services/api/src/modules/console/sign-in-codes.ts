import { createHash, randomBytes } from "node:crypto";
import { UnauthorizedError } from "@commerce/shared/platform/errors";
import { and, eq, gt, lte } from "drizzle-orm";
import type { Database } from "../../db";
import { consoleSignInCodes } from "../../db/schema";

/** N16: a code works for 10 minutes at most, and once. */
export const signInCodeLifetimeMs = 10 * 60 * 1000;

const hashOf = (code: string) => createHash("sha256").update(code).digest("hex");

/** Tokens whose code expired leave the table; each use of it sweeps them, so none lingers. */
const sweep = (db: Database) =>
  db.delete(consoleSignInCodes).where(lte(consoleSignInCodes.expiresAt, new Date()));

/**
 * N16: a one-time code standing for `token` (the admin's own bearer token). The code is 32
 * random bytes, so it cannot be guessed; only its hash is kept, so the table alone signs no one in.
 */
export async function createSignInCode(db: Database, token: string, now = Date.now()) {
  await sweep(db);
  const code = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now + signInCodeLifetimeMs);
  await db.insert(consoleSignInCodes).values({ codeHash: hashOf(code), token, expiresAt });
  return { code, expires_at: expiresAt.toISOString() };
}

/**
 * N16: the token a code stands for, once: the row is deleted as it is read, so two exchanges
 * racing (two replicas) give the token to one of them only. Unknown, used or expired → 401.
 */
export async function exchangeSignInCode(db: Database, code: string) {
  const [row] = await db
    .delete(consoleSignInCodes)
    .where(
      and(
        eq(consoleSignInCodes.codeHash, hashOf(code)),
        gt(consoleSignInCodes.expiresAt, new Date()),
      ),
    )
    .returning({ token: consoleSignInCodes.token });
  await sweep(db);
  if (!row)
    throw new UnauthorizedError(
      "This sign-in code is unknown, was used already or expired (a code works once, within 10 minutes). Run `npm start` again or sign in with a token.",
    );
  return { token: row.token };
}
