import { apiClient, paymentsClient } from "@commerce/client/browser";
import { session } from "./session";

/** An error answer of either service, as its problem+json told it (U4), or a request that failed. */
export class Problem extends Error {
  constructor(
    readonly title: string,
    readonly detail: string,
    readonly status?: number,
    /** The problem's stable `code` (V6), which the console says in its own words. */
    readonly code?: string,
  ) {
    super(`${title}: ${detail}`);
  }
}

/** Thrown after a 401 sent the viewer back to sign-in: there is nothing more to show. */
export class SignedOut extends Error {}

type Answer<T> = { data: T | null; error: { status: unknown; value: unknown } | null };

let onUnauthorized: (message: string) => void = () => {};

/** What the console does on a 401 from either service (U4): back to sign-in, saying why. */
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

function problemOf(status: number, value: unknown): Problem {
  const body = (typeof value === "object" && value !== null ? value : {}) as Record<
    string,
    unknown
  >;
  const title = typeof body.title === "string" ? body.title : `HTTP ${status}`;
  const detail = typeof body.detail === "string" ? body.detail : String(value ?? "");
  const errors = Array.isArray(body.errors)
    ? body.errors.map((e: { path?: string; message?: string }) => `${e.path}: ${e.message}`)
    : [];
  const code = typeof body.code === "string" ? body.code : undefined;
  return new Problem(title, [detail, ...errors].filter(Boolean).join(" "), status, code);
}

/** The answer's data, or a Problem; a 401 also signs out. Nothing is dropped silently. */
export async function answerOf<T>(
  request: Promise<Answer<T>>,
  what: string,
  { signOutOn401 = true } = {},
): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await request;
  } catch (error) {
    throw new Problem("Network error", `${what}: ${(error as Error).message}`);
  }
  if (answer.error) {
    const status = Number(answer.error.status);
    const problem = problemOf(status, answer.error.value);
    if (status === 401 && signOutOn401) {
      onUnauthorized(`${problem.title}: ${problem.detail}`);
      throw new SignedOut();
    }
    throw problem;
  }
  return answer.data as T;
}

/** Where the browser reaches payments: the api's PAYMENTS_PUBLIC_URL, written into the page. */
const paymentsUrl =
  document.querySelector<HTMLMetaElement>('meta[name="payments-url"]')?.content || undefined;

/** The api, with the signed-in token; typed from the api's own routes. */
export const api = () => apiClient(location.origin, session.token() ?? undefined);

/** The payments operator routes (V3), or undefined when the api has no PAYMENTS_PUBLIC_URL. */
export const payments = () =>
  paymentsUrl ? paymentsClient(paymentsUrl, session.token() ?? undefined) : undefined;

export const paymentsBase = paymentsUrl;
