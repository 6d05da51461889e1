import { Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";

/** F1: the setting that turns a provider's refunds on in the payments service. */
export const refundKeyOf: Record<string, string> = {
  stripe: "STRIPE_API_KEY",
  adyen: "ADYEN_API_KEY",
};

/**
 * F1, on `refundProvidersQuery` (request/reply, an empty question): payments answers with the
 * providers whose API it is configured for, so the api refuses at once (409) a refund that
 * payments could only fail later.
 */
export const refundProvidersAnswer = Type.Object({
  providers: Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 10 }),
});

const answerCheck = TypeCompiler.Compile(refundProvidersAnswer);

export function parseRefundProvidersAnswer(bytes: Uint8Array): string[] | undefined {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return answerCheck.Check(value) ? value.providers : undefined;
  } catch {
    return undefined;
  }
}
