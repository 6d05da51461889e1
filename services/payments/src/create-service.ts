import { createTokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { openServiceCore, type ServiceOptions } from "@commerce/shared/platform/service-core";
import { createApp } from "./app";
import type { PaymentsConfig } from "./config";
import { migrations } from "./db";
import type { PaymentsDeps } from "./deps";
import { reconcileClientsOf, refundClientsOf } from "./modules/providers";
import { type AdyenReportOptions, AdyenReports } from "./modules/reconciliation/adyen-report";
import { AntiEntropy } from "./modules/reconciliation/anti-entropy";
import { ProviderReconciliation } from "./modules/reconciliation/provider-runs";
import { RefundProvidersAnswerer } from "./modules/refunds/providers-answer";
import { RefundRequests } from "./modules/refunds/requests";
import { RefundWorker, type RefundWorkerOptions } from "./modules/refunds/worker";
import { RefusalTally } from "./modules/refusals/tally";

/** F7: how long one call to a provider's API may take. */
const providerCallTimeoutMs = 10_000;

/**
 * The payments service's composition root: the shared core (database, NATS, outbox relay) and
 * the HTTP app. Nothing runs until `start`; `stop` undoes it in order
 * (O7), so in-flight requests finish before NATS and the database close.
 */
export async function createService(
  config: PaymentsConfig,
  options: ServiceOptions<PaymentsDeps> & {
    /** F3: the refund worker's schedule (tests shorten it); `giveUpAfterMs` overrides the hours. */
    refunds?: RefundWorkerOptions & { giveUpAfterMs?: number; callTimeoutMs?: number };
    /** B1, B4: the Adyen report worker's schedule and limits (tests shorten them). */
    adyenReports?: AdyenReportOptions;
  } = {},
) {
  const core = await openServiceCore("payments", config, options, {
    migrations,
    outboxSubjects: ({ payments }) => [
      payments.orderPaid,
      payments.orderRefunded,
      payments.orderFailed,
      payments.orderDisputed,
      payments.refundOutcome,
    ],
    async onNatsConnect() {
      // F1: the api asks which providers refunds go through; answered from here.
      refundProvidersAnswerer.listen(core.nats.nc);
      refundRequests.start();
    },
  });
  const deps: PaymentsDeps = {
    sql: core.sql,
    webhook: config.webhook,
    providers: config.providers,
    verifyToken: config.auth && createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    operatorLimiter: new RateLimiter(config.rateLimit),
    trustProxy: config.trustProxy,
    consoleOrigins: config.consoleOrigins,
    topology: core.topology,
    logger: core.logger,
    metrics: core.metrics,
    tracer: core.tracer,
    readiness: core.readiness,
    migrated: core.migrated,
    metricsToken: config.metricsToken,
    outboxWritten: () => core.relay.kick(),
    deadOutbox: (limit) => core.relay.deadList(limit),
    refusals: new RefusalTally(core.sql, core.logger, core.metrics),
    ...options.replace,
  };
  // B1: Adyen's reports, announced by the intake, read by a leased worker.
  const adyenReports = config.providers.adyen
    ? new AdyenReports(
        {
          sql: core.sql,
          topology: core.topology,
          logger: core.logger,
          metrics: core.metrics,
          settings: config.providers.adyenReports,
          merchantAccounts: config.providers.adyen.merchantAccounts,
          outboxWritten: () => core.relay.kick(),
        },
        options.adyenReports,
      )
    : undefined;
  deps.reportsAnnounced ??= adyenReports && ((reports) => adyenReports.announce(reports));
  if (!deps.verifyToken)
    core.logger.warn(
      "operator routes answer 503: set AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_JWT_SECRET to let admin tokens in",
    );
  const refundClients = refundClientsOf(
    config.providers,
    options.refunds?.callTimeoutMs ?? providerCallTimeoutMs,
  );
  const refundProvidersAnswerer = new RefundProvidersAnswerer({
    topology: core.topology,
    logger: core.logger,
    providers: [...refundClients.keys()],
  });
  const refundWorker = new RefundWorker(
    {
      sql: core.sql,
      topology: core.topology,
      logger: core.logger,
      metrics: core.metrics,
      clients: refundClients,
      giveUpAfterMs: options.refunds?.giveUpAfterMs ?? config.refundGiveUpMs,
      outboxWritten: deps.outboxWritten,
    },
    options.refunds,
  );
  deps.readinessNotes ??= refundWorker.notes();
  const app = createApp(deps);
  const refundRequests = new RefundRequests({
    sql: core.sql,
    nats: core.nats,
    topology: core.topology,
    logger: core.logger,
    recorded: () => refundWorker.kick(),
  });
  // B2: what was published and never applied is found and published again.
  const antiEntropy = new AntiEntropy({
    sql: core.sql,
    nats: core.nats,
    topology: core.topology,
    logger: core.logger,
    metrics: core.metrics,
    outboxWritten: () => core.relay.kick(),
    settings: config.antiEntropy,
  });

  // B1, B4: each provider's API is compared with what was stored, every interval.
  const reconciliation = new ProviderReconciliation({
    sql: core.sql,
    topology: core.topology,
    logger: core.logger,
    metrics: core.metrics,
    outboxWritten: () => core.relay.kick(),
    clients: reconcileClientsOf(
      config.providers,
      options.refunds?.callTimeoutMs ?? providerCallTimeoutMs,
    ),
    intervalMs: config.reconcileIntervalMs,
    circuitOpen: (provider) => refundWorker.circuitOpen(provider),
  });

  return {
    app,
    deps,
    relay: core.relay,
    nats: core.nats,
    refundWorker,
    antiEntropy,
    reconciliation,
    adyenReports,
    start: () => {
      core.start(app, () => {
        refundWorker.start();
        antiEntropy.start();
        reconciliation.start();
        adyenReports?.start();
      });
      deps.refusals.start();
    },
    // O7, V4: the refusals counted up to the last request are written before the database closes;
    // a refund call in flight is finished and recorded first (F3).
    stop: () =>
      core.stop(app, [
        ["refused notifications", () => deps.refusals.stop()],
        ["anti-entropy", () => antiEntropy.stop()],
        ["provider reconciliation", () => reconciliation.stop()],
        ["adyen reports", async () => adyenReports?.stop()],
        ["refund requests", () => refundRequests.stop()],
        ["refund worker", () => refundWorker.stop()],
      ]),
  };
}

export type PaymentsService = Awaited<ReturnType<typeof createService>>;
