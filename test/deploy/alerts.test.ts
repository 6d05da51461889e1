import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../..", import.meta.url).pathname;
const rulesDir = join(root, "deploy/prometheus");

type Rule = {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
};
type RuleTest = {
  name: string;
  alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }>;
};

const read = (path: string) => Bun.YAML.parse(readFileSync(path, "utf8")) as Record<string, any>;
const rules: Rule[] = read(join(rulesDir, "alerts.yml")).groups.flatMap(
  (g: { rules: Rule[] }) => g.rules,
);
const ruleTests: RuleTest[] = read(join(rulesDir, "alerts.test.yml")).tests;

function promtool(args: string[], cwd: string) {
  const run = Bun.spawnSync(["promtool", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
}

/** The metric names an expression reads: identifiers that are not functions, keywords or labels. */
export function metricsOf(expr: string): string[] {
  const stripped = expr
    .replace(/"[^"]*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "")
    .replace(/\[[^\]]*\]/g, "");
  const keywords = new Set(["and", "or", "unless", "bool", "offset"]);
  return [...stripped.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)]
    .map((m) => m[1])
    .filter((name) => !keywords.has(name) && /_/.test(name));
}

describe("X4: alert rules, their promtool tests and the dashboard", () => {
  test("X4: promtool check rules and promtool test rules pass", () => {
    const check = promtool(["check", "rules", "alerts.yml"], rulesDir);
    expect({ code: check.code, output: check.output }).toMatchObject({ code: 0 });
    expect(check.output).toContain(`SUCCESS: ${rules.length} rules found`);
    const unit = promtool(["test", "rules", "alerts.test.yml"], rulesDir);
    expect({ code: unit.code, output: unit.output }).toEqual({
      code: 0,
      output: expect.stringContaining("SUCCESS"),
    });
  });

  test("X4: promtool test rules fails when a rule no longer fires (the tests can fail)", () => {
    const dir = mkdtempSync(join(tmpdir(), "x4-"));
    try {
      copyFileSync(join(rulesDir, "alerts.test.yml"), join(dir, "alerts.test.yml"));
      const text = readFileSync(join(rulesDir, "alerts.yml"), "utf8");
      const broken = text.replace(
        "max by (job) (outbox_dead) > 0",
        "max by (job) (outbox_dead) > 5",
      );
      expect(broken).not.toBe(text);
      writeFileSync(join(dir, "alerts.yml"), broken);
      const unit = promtool(["test", "rules", "alerts.test.yml"], dir);
      expect(unit.code).not.toBe(0);
      expect(unit.output).toContain("OutboxDeadRows");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("X4: every alert has a summary, a severity and a runbook section that exists", () => {
    const runbooks = readFileSync(join(root, "docs/runbooks.md"), "utf8");
    const anchors = new Set(
      [...runbooks.matchAll(/^#+\s+(.+)$/gm)].map((m) =>
        m[1]
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 _-]/g, "")
          .replace(/ /g, "-"),
      ),
    );
    expect(rules.length).toBeGreaterThanOrEqual(10);
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels?.severity }).toEqual({
        alert: rule.alert,
        severity: expect.stringMatching(/^(warning|critical)$/),
      });
      expect(rule.annotations?.summary).toBeTruthy();
      const url = rule.annotations?.runbook_url ?? "";
      expect(url).toBe(`docs/runbooks.md#${rule.alert.toLowerCase()}`);
      expect({ alert: rule.alert, section: anchors.has(url.split("#")[1]) }).toEqual({
        alert: rule.alert,
        section: true,
      });
    }
  });

  test("X4: every alert has a promtool case where it fires and one where it stays quiet", () => {
    const cases = ruleTests.flatMap((t) => t.alert_rule_test);
    for (const rule of rules) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      expect({
        alert: rule.alert,
        fires: mine.some((c) => c.exp_alerts.length > 0),
        quiet: mine.some((c) => c.exp_alerts.length === 0),
      }).toEqual({ alert: rule.alert, fires: true, quiet: true });
    }
  });

  test("X4: every metric an alert reads is one a service exports under that name, or the platform's (up, kube-state-metrics, CloudNativePG)", () => {
    const sources = ["services/api/src", "services/payments/src", "shared/src"].flatMap((dir) =>
      [...new Bun.Glob("**/*.ts").scanSync({ cwd: join(root, dir) })]
        .filter((file) => !file.endsWith(".test.ts"))
        .map((file) => readFileSync(join(root, dir, file), "utf8")),
    );
    const platform = (metric: string) => metric === "up" || /^(kube|cnpg)_/.test(metric);
    for (const rule of rules)
      for (const metric of metricsOf(rule.expr)) {
        if (platform(metric)) continue;
        const exported = sources.some((text) => text.includes(`"${metric}"`));
        expect({ alert: rule.alert, metric, exported }).toEqual({
          alert: rule.alert,
          metric,
          exported: true,
        });
      }
    // The endpoints the api disabled itself, named as what the alert says (it read
    // webhook_endpoints_failing, beside webhook_endpoints_failing_now of enabled ones).
    const disabled = rules.find((r) => r.alert === "WebhookEndpointsDisabled");
    expect(metricsOf(disabled?.expr ?? "")).toEqual(["webhook_endpoints_disabled_by_api"]);
  });

  test("X4: the Grafana dashboard is valid JSON and shows every metric an alert reads", () => {
    const dashboard = JSON.parse(readFileSync(join(root, "deploy/grafana/commerce.json"), "utf8"));
    const panelMetrics = new Set<string>(
      dashboard.panels.flatMap((p: { targets: Array<{ expr: string }> }) =>
        p.targets.flatMap((t) => metricsOf(t.expr)),
      ),
    );
    expect(metricsOf('max by (job) (min_over_time(outbox_backlog{job="x"}[15m])) > 0')).toEqual([
      "outbox_backlog",
    ]);
    for (const rule of rules)
      for (const metric of metricsOf(rule.expr))
        expect({ alert: rule.alert, metric, shown: panelMetrics.has(metric) }).toEqual({
          alert: rule.alert,
          metric,
          shown: true,
        });
  });
});
