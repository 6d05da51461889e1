import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";

/** B2: the most notification ids one question names (a page of the anti-entropy check). */
export const maxAskedIds = 500;

const notificationId = Type.String({ minLength: 1, maxLength: 255 });

/**
 * B2, on `appliedQuery` (request/reply): payments names notification ids it published; the api
 * answers with those it has recorded as processed (M2), whatever the outcome (a move, a
 * duplicate, a review). Ids not in the answer were never applied.
 */
export const appliedQuestion = Type.Object({
  ids: Type.Array(notificationId, { minItems: 1, maxItems: maxAskedIds }),
});
export type AppliedQuestion = Static<typeof appliedQuestion>;

/**
 * The api's answer: `applied` ⊆ the question's ids; `pending_since`, when its consumer has
 * messages not yet applied, the stream time of the oldest (a message published after it may
 * still be on its way, not lost); `error` when it could not look (no ids).
 */
export const appliedAnswer = Type.Union([
  Type.Object({
    applied: Type.Array(notificationId, { maxItems: maxAskedIds }),
    pending_since: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
  }),
  Type.Object({ error: Type.String() }),
]);
export type AppliedAnswer = Static<typeof appliedAnswer>;

const questionCheck = TypeCompiler.Compile(appliedQuestion);
const answerCheck = TypeCompiler.Compile(appliedAnswer);

const parsed = (bytes: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
};

export function parseAppliedQuestion(bytes: Uint8Array): AppliedQuestion | undefined {
  const value = parsed(bytes);
  return questionCheck.Check(value) ? value : undefined;
}

export function parseAppliedAnswer(bytes: Uint8Array): AppliedAnswer | undefined {
  const value = parsed(bytes);
  return answerCheck.Check(value) ? value : undefined;
}
