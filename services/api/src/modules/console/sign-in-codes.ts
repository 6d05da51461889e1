import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { UnauthorizedError } from "@commerce/shared/platform/errors";
import { and, eq, gt, lte } from "drizzle-orm";
import type { Database } from "../../db";
import { consoleSignInCodes } from "../../db/schema";

/** N16: a code works for 10 minutes at most, and once. */
export const signInCodeLifetimeMs = 10 * 60 * 1000;

const hashOf = (code: string) => createHash("sha256").update(code).digest("hex");

/**
 * The token is kept sealed under a key made from the code (AES-256-GCM), so the table alone,
 * expired rows included, holds nothing that signs in: only the code opens it, and only its hash
 * (a different digest) is stored.
 */
const keyOf = (code: string) => createHash("sha256").update(`sign-in key:${code}`).digest();

function seal(token: string, code: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(code), iv);
  const sealed = Buffer.concat([cipher.update(token, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64");
}

function open(sealed: string, code: string): string {
  const bytes = Buffer.from(sealed, "base64");
  const decipher = createDecipheriv("aes-256-gcm", keyOf(code), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8");
}

/** Tokens whose code expired leave the table; each use of it sweeps them, so none lingers. */
const sweep = (db: Database) =>
  db.delete(consoleSignInCodes).where(lte(consoleSignInCodes.expiresAt, new Date()));

/**
 * N16: a one-time code standing for `token` (the admin's own bearer token). The code is 32
 * random bytes, so it cannot be guessed; only its hash and the sealed token are kept.
 */
export async function createSignInCode(db: Database, token: string, now = Date.now()) {
  await sweep(db);
  const code = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now + signInCodeLifetimeMs);
  await db
    .insert(consoleSignInCodes)
    .values({ codeHash: hashOf(code), token: seal(token, code), expiresAt });
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
  return { token: open(row.token, code) };
}
