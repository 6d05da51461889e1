/**
 * What the generated .env.example says beyond the services' schemas: the variables only
 * docker-compose reads (no service does, so no schema holds them), and how to make a value for a
 * secret. No default is stated here: defaults live in the schemas alone.
 */

export type ComposeVariable = {
  name: string;
  description: string;
  make?: string;
  /** Left out of .env.example's "to fill in" lines: empty keeps docker-compose.yml's default. */
  optional?: true;
};

/** Read by docker-compose.yml (and the postgres and nats containers it starts), not by a service. */
export const composeOnly: ComposeVariable[] = [
  {
    name: "POSTGRES_PASSWORD",
    description: "the postgres superuser's password; it stays in the postgres container",
    make: "openssl rand -hex 16",
  },
  {
    name: "POSTGRES_API_PASSWORD",
    description:
      "N14: password of the api's own role commerce_api (not a superuser; deploy/postgres-init " +
      "creates it on the first start); it goes into the api's DATABASE_URL, so URL-safe characters",
    make: "openssl rand -hex 16",
  },
  {
    name: "POSTGRES_PAYMENTS_PASSWORD",
    description:
      "N14: password of payments' own role commerce_payments; it goes into payments' DATABASE_URL",
    make: "openssl rand -hex 16",
  },
  {
    name: "NATS_API_PASSWORD",
    description:
      "N1: NATS password of the api user (deploy/nats-auth.conf); the nats container gets both " +
      "passwords, each service only its own as NATS_PASSWORD",
    make: "openssl rand -hex 16",
  },
  {
    name: "NATS_PAYMENTS_PASSWORD",
    description: "N1: NATS password of the payments user",
    make: "openssl rand -hex 16",
  },
  {
    name: "PUBLISH_ADDRESS",
    description:
      "the host address the api's and payments' ports are published on; empty publishes them on " +
      "every interface, 127.0.0.1 keeps them for a TLS proxy on the same machine (docs/deployment.md)",
    optional: true,
  },
];

/** How to make a value, for the variables .env.example asks to fill in. */
export const howToMake: Record<string, string[]> = {
  AUTH_PUBLIC_KEY: [
    "Make a pair, keep the private key with whoever issues tokens, put the public key here on",
    "one line (`npm run token` signs with AUTH_PRIVATE_KEY or AUTH_PRIVATE_KEY_FILE; never give",
    "that to a service):",
    "  openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out auth-private.pem",
    "  openssl pkey -in auth-private.pem -pubout -out auth-public.pem",
    "  awk '{printf \"%s\\\\n\", $0}' auth-public.pem",
  ],
  AUTH_ISSUER: ["e.g. https://id.example.com"],
  AUTH_AUDIENCE: ["e.g. shop"],
  AUTH_JWT_SECRET: [
    "`openssl rand -hex 32`; `npm start` makes one in .data/ when unset; docker-compose.yml does",
    "not pass it",
  ],
  PAYMENT_WEBHOOK_SECRETS: [
    "`openssl rand -hex 24`; rotate by adding the new one, moving the provider to it, then",
    "removing the old one. `npm start` makes one in .data/",
  ],
  METRICS_TOKEN: ["`openssl rand -hex 24`; docker-compose.yml requires it"],
};
