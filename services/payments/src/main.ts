import "@commerce/shared/platform/production-mode";

import { reclaimMemoryWhenIdle } from "@commerce/shared/platform/memory-reclaim";
import {
  configOrExit,
  healthcheckIfAsked,
  keepRunningOnUnhandledErrors,
  onShutdown,
  serviceOrExit,
} from "@commerce/shared/platform/process-exit";
import { loadConfig } from "./config";
import { createService } from "./create-service";

await healthcheckIfAsked(3001);
const unhandled = keepRunningOnUnhandledErrors("payments");
const config = configOrExit(() => loadConfig(process.env));
const service = await serviceOrExit(() => createService(config));
unhandled.attach(service.deps.logger, service.deps.metrics);
service.start();
reclaimMemoryWhenIdle();
onShutdown(service.deps.logger, service.stop);
