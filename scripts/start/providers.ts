/** What `npm start` does with the payment providers Stripe and Adyen (section 15). */

/** G1, F2: Stripe's and Adyen's settings, passed to payments only (the api never sees a key). */
export const providerVariables = [
  // G4: whose money moves orders, and the shop's Adyen merchant accounts.
  "PAYMENT_MODE",
  "ADYEN_MERCHANT_ACCOUNTS",
  "STRIPE_WEBHOOK_SECRETS",
  "ADYEN_HMAC_KEYS",
  "ADYEN_WEBHOOK_USERNAME",
  "ADYEN_WEBHOOK_PASSWORD",
  // F2: the providers' API keys and where their APIs are; refunds are made by payments only.
  "STRIPE_API_KEY",
  "STRIPE_API_URL",
  "ADYEN_API_KEY",
  "ADYEN_CHECKOUT_URL",
  "REFUND_GIVE_UP_HOURS",
  // B1: where and as whom Adyen's payment accounting reports are downloaded.
  "ADYEN_REPORT_USERNAME",
  "ADYEN_REPORT_PASSWORD",
  "ADYEN_REPORT_URL_PREFIX",
];

/** One line per configured provider: its webhook URL and how to play it; a hint when none is. */
export function providerLines(paymentsUrl: string, env: NodeJS.ProcessEnv): string[] {
  const configured = [
    ["stripe", "STRIPE_WEBHOOK_SECRETS"],
    ["adyen", "ADYEN_HMAC_KEYS"],
  ].filter(([, variable]) => env[variable]?.trim());
  if (configured.length === 0)
    return [
      "providers generic only; set STRIPE_WEBHOOK_SECRETS or ADYEN_HMAC_KEYS for Stripe, Adyen",
    ];
  return configured.map(
    ([name]) =>
      `${name.padEnd(9)} ${paymentsUrl}/api/webhooks/${name}   try: npm run webhook -- --provider ${name} --order N --amount A`,
  );
}
