import { configOrExit, healthcheckIfAsked, onShutdown } from "@commerce/shared/lifecycle";
import { reclaimMemoryWhenIdle } from "@commerce/shared/memory-reclaim";
import { loadConfig } from "./config";
import { createService } from "./service";

await healthcheckIfAsked(3001);
const config = configOrExit(() => loadConfig(process.env));
const service = await createService(config);
service.start();
reclaimMemoryWhenIdle();
onShutdown(service.deps.logger, service.stop);
