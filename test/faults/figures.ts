import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the fault tests leave their figures; docs/reliability.md quotes the last run's. */
export const figuresFile =
  process.env.FAULT_FIGURES ?? join(tmpdir(), "commerce-fault-figures.json");

export type Figures = {
  rules: string;
  /** HTTP requests the test sent to the services, retries included. */
  requests: number;
  /** What was broken, and how many times. */
  faults: string;
  /** Distinct notifications the provider sent. */
  notifications: number;
  /** Notifications answered 200 in the end. */
  accepted: number;
  /** Accepted, yet their order was not paid or no orders.paid was published. */
  lost: number;
  /** Orders paid or announced more than once. */
  applied_twice: number;
  seconds: number;
  [detail: string]: string | number | boolean | Record<string, number>;
};

/** Adds one scenario's figures to the summary file, keeping the other scenarios' from this run. */
export function recordFigures(scenario: string, figures: Figures): void {
  const summary = existsSync(figuresFile)
    ? (JSON.parse(readFileSync(figuresFile, "utf8")) as Record<string, unknown>)
    : {};
  summary[scenario] = {
    ...figures,
    binaries: process.env.E2E_BINARIES === "1",
    at: new Date().toISOString(),
  };
  writeFileSync(figuresFile, `${JSON.stringify(summary, null, 2)}\n`);
}
