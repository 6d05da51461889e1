import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type K8sObject, overlays, render, root, validate } from "../../scripts/deploy-check";

const rendered = overlays().map((dir) => ({ dir, objects: render(dir) }));

describe("X3: deploy/kubernetes renders and validates offline", () => {
  test("X3: there is a production overlay, and every overlay renders objects", () => {
    expect(rendered.map((r) => r.dir.split("/").pop())).toContain("production");
    for (const { objects } of rendered) expect(objects.length).toBeGreaterThan(10);
  });

  test("X3: every rendered object of every overlay passes the Kubernetes schemas, the CloudNativePG kinds their operator's CRD schemas (none skipped)", async () => {
    for (const { dir, objects } of rendered) {
      const { errors, skipped } = await validate(objects);
      expect({ dir, errors }).toEqual({ dir, errors: [] });
      expect(skipped).toEqual([]);
    }
  });

  test("X3, X6: a CloudNativePG object with a wrong type or a misspelt field fails validation", async () => {
    const cluster = structuredClone(
      rendered[0].objects.find((o) => o.kind === "Cluster") as K8sObject,
    );
    cluster.spec.instances = "three";
    cluster.spec.backup.barmanObjectStorage = cluster.spec.backup.barmanObjectStore;
    const scheduled = structuredClone(
      rendered[0].objects.find((o) => o.kind === "ScheduledBackup") as K8sObject,
    );
    scheduled.spec.method = "tape";
    const { errors } = await validate([cluster, scheduled]);
    expect(errors.map((e) => e.object)).toEqual([
      "postgresql.cnpg.io/v1 Cluster commerce-db",
      "postgresql.cnpg.io/v1 ScheduledBackup commerce-db-nightly",
    ]);
    expect(errors[0].message).toContain("/spec/instances");
    expect(errors[0].message).toContain("barmanObjectStorage");
    expect(errors[1].message).toContain("/spec/method");
  });

  test("X6: the PostgreSQL Cluster archives its WAL to an object store with a retention policy, and a ScheduledBackup takes a base backup every night", () => {
    for (const { objects } of rendered) {
      const [cluster] = objects.filter((o) => o.kind === "Cluster");
      expect(cluster.spec.backup.retentionPolicy).toMatch(/^\d+[dwm]$/);
      const store = cluster.spec.backup.barmanObjectStore;
      expect(store.destinationPath).toMatch(/^s3:\/\//);
      expect(store.wal.compression).toBeTruthy();
      // Credentials by reference only.
      expect(store.s3Credentials.accessKeyId.name).toBe("commerce-db-backup");
      expect(store.s3Credentials.secretAccessKey.name).toBe("commerce-db-backup");
      const scheduled = objects.filter((o) => o.kind === "ScheduledBackup");
      expect(scheduled).toHaveLength(1);
      expect(scheduled[0].spec).toMatchObject({
        cluster: { name: cluster.metadata.name },
        method: "barmanObjectStore",
        immediate: true,
      });
      // Six fields, seconds first: once a day.
      expect(scheduled[0].spec.schedule.split(" ")).toHaveLength(6);
    }
  });

  test("X3: a broken object fails validation (the check can fail)", async () => {
    const deployment = structuredClone(
      rendered[0].objects.find((o) => o.kind === "Deployment") as K8sObject,
    );
    deployment.spec.replicas = "three";
    const monitor = structuredClone(
      rendered[0].objects.find((o) => o.kind === "ServiceMonitor") as K8sObject,
    );
    monitor.spec.endpoints[0].authorization.credentials = "plain-text-token";
    const unknown = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } };
    const { errors } = await validate([deployment, monitor, unknown]);
    expect(errors.map((e) => e.object)).toEqual([
      "apps/v1 Deployment api",
      "monitoring.coreos.com/v1 ServiceMonitor commerce",
      "example.com/v1 Widget w",
    ]);
    expect(errors[0].message).toContain("replicas");
  });

  test("X3: each Deployment runs as non-root on a read-only file system, with no capabilities, probes and resources, spread across nodes", () => {
    for (const { objects } of rendered) {
      const deployments = objects.filter((o) => o.kind === "Deployment");
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual(["api", "payments"]);
      for (const d of deployments) {
        const pod = d.spec.template.spec;
        expect(pod.securityContext.runAsNonRoot).toBe(true);
        expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
        expect(pod.automountServiceAccountToken).toBe(false);
        expect(pod.topologySpreadConstraints[0]).toMatchObject({
          topologyKey: "kubernetes.io/hostname",
          whenUnsatisfiable: "DoNotSchedule",
        });
        for (const c of pod.containers) {
          expect(c.image).toMatch(new RegExp(`/commerce-${d.metadata.name}:`));
          expect(c.securityContext).toMatchObject({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ["ALL"] },
          });
          expect(c.livenessProbe.httpGet.path).toBe("/health");
          expect(c.readinessProbe.httpGet.path).toBe("/ready");
          expect(c.resources.requests.cpu).toBeTruthy();
          expect(c.resources.requests.memory).toBeTruthy();
          expect(c.resources.limits.memory).toBeTruthy();
          // Secrets by reference only: no literal value for a secret variable.
          for (const env of c.env) {
            if (/SECRET|PASSWORD|TOKEN|KEY/.test(env.name))
              expect({ name: env.name, ref: env.valueFrom?.secretKeyRef?.name }).toEqual({
                name: env.name,
                ref: expect.any(String),
              });
          }
          expect(c.env.find((e: { name: string }) => e.name === "METRICS_TOKEN")).toBeTruthy();
        }
      }
      // The services' settings: STREAM_REPLICAS=3 for the NATS cluster.
      const settings = objects
        .filter((o) => o.kind === "ConfigMap")
        .map((o) => o.data as Record<string, string>)
        .filter((data) => data.PORT);
      expect(settings).toHaveLength(2);
      for (const data of settings) expect(data.STREAM_REPLICAS).toBe("3");
      expect(objects.some((o) => o.kind === "Secret")).toBe(false);
    }
  });

  test("X3: budgets, the api's autoscaler, network policies, the scrape config and a synchronous PostgreSQL cluster with the two roles of N14", () => {
    for (const { objects } of rendered) {
      const of = (kind: string) => objects.filter((o) => o.kind === kind);
      expect(
        of("PodDisruptionBudget")
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(["api", "payments"]);
      expect(of("HorizontalPodAutoscaler")[0].spec.scaleTargetRef.name).toBe("api");
      const policies = of("NetworkPolicy");
      expect(policies.find((p) => p.metadata.name === "default-deny-ingress")?.spec).toEqual({
        podSelector: {},
        policyTypes: ["Ingress"],
      });
      for (const name of ["api", "payments"])
        expect(policies.find((p) => p.metadata.name === name)?.spec.policyTypes).toEqual([
          "Ingress",
          "Egress",
        ]);
      expect(of("ServiceMonitor")[0].spec.endpoints[0].authorization.credentials.name).toBe(
        "commerce-metrics",
      );
      const [cluster] = of("Cluster");
      expect(cluster.spec.instances).toBe(3);
      expect(cluster.spec.postgresql.synchronous).toMatchObject({ method: "any", number: 1 });
      const roles = cluster.spec.managed.roles;
      expect(roles.map((r: { name: string }) => r.name)).toEqual([
        "commerce_api",
        "commerce_payments",
      ]);
      for (const role of roles) expect(role).toMatchObject({ login: true, superuser: false });
      // The same grants as the compose deployment's init script.
      const sql = readFileSync(join(root, "deploy/postgres-init/service-roles.sql"), "utf8");
      for (const grant of [
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        "CREATE SCHEMA IF NOT EXISTS drizzle",
      ]) {
        expect(sql).toContain(grant);
        expect(cluster.spec.bootstrap.initdb.postInitApplicationSQL).toContain(grant);
      }
    }
  });

  test("F2, B1: payments reaches the providers' APIs: HTTPS out to public addresses only, and the provider API settings from a Secret, in every overlay", () => {
    for (const { objects } of rendered) {
      const policy = objects.find(
        (o) => o.kind === "NetworkPolicy" && o.metadata.name === "payments",
      );
      const https = policy?.spec.egress.find((rule: any) =>
        rule.ports?.some((port: { port: number }) => port.port === 443),
      );
      expect(https?.to[0].ipBlock.cidr).toBe("0.0.0.0/0");
      expect(https?.to[0].ipBlock.except).toContain("10.0.0.0/8");
      const deployment = objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "payments",
      );
      const env = deployment?.spec.template.spec.containers[0].env as {
        name: string;
        value?: string;
        valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
      }[];
      for (const name of [
        "STRIPE_API_KEY",
        "ADYEN_API_KEY",
        "ADYEN_CHECKOUT_URL",
        "ADYEN_REPORT_USERNAME",
        "ADYEN_REPORT_PASSWORD",
        "ADYEN_REPORT_URL_PREFIX",
      ])
        expect(env.find((e) => e.name === name)?.valueFrom?.secretKeyRef).toEqual({
          name: "commerce-payments-providers",
          key: expect.any(String),
          optional: true,
        });
      expect(env.find((e) => e.name === "RECONCILE_INTERVAL_SECONDS")).toEqual({
        name: "RECONCILE_INTERVAL_SECONDS",
        value: "300",
      });
    }
  });

  test("X3: the api Deployment's replicas are its autoscaler's floor, in every overlay", () => {
    for (const { dir, objects } of rendered) {
      const api = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "api");
      const autoscaler = objects.find((o) => o.kind === "HorizontalPodAutoscaler");
      expect({ dir, replicas: api?.spec.replicas }).toEqual({
        dir,
        replicas: autoscaler?.spec.minReplicas,
      });
    }
    const production = rendered.find((r) => r.dir.endsWith("production"));
    const floor = production?.objects.find((o) => o.kind === "HorizontalPodAutoscaler");
    expect(floor?.spec.minReplicas).toBe(3);
  });

  test("E5 (v5): both Deployments run their services in production mode, in every overlay", () => {
    for (const { dir, objects } of rendered)
      for (const d of objects.filter((o) => o.kind === "Deployment"))
        for (const c of d.spec.template.spec.containers) {
          const mode = c.env.find((e: { name: string }) => e.name === "NODE_ENV")?.value;
          expect({ dir, name: d.metadata.name, mode }).toEqual({
            dir,
            name: d.metadata.name,
            mode: "production",
          });
        }
  });

  test("N14 (v5): the CloudNativePG Cluster's bootstrap grants exactly what compose's service-roles.sql grants, statement for statement (no CREATE on the database or on drizzle)", () => {
    // service-roles.sql's statements as they run for the shop's database and role names; the
    // roles' LOGIN and passwords come from the Cluster's `managed.roles` instead.
    const compose = readFileSync(join(root, "deploy/postgres-init/service-roles.sql"), "utf8")
      .replace(/--.*$/gm, "")
      .replace(/^\\.*$/gm, "")
      .replace(/^SELECT current_database\(\) AS dbname \\gset$/m, "")
      .replaceAll(':"dbname"', "commerce")
      .replaceAll(':"api_role"', "commerce_api")
      .replaceAll(':"payments_role"', "commerce_payments")
      .replace(/LOGIN PASSWORD :'\w+'/g, "NOLOGIN")
      .split(";")
      .map((statement) => statement.replace(/\s+/g, " ").replaceAll("( ", "(").trim())
      .filter(Boolean);
    expect(compose.length).toBeGreaterThan(10);
    for (const { objects } of rendered) {
      const [cluster] = objects.filter((o) => o.kind === "Cluster");
      const kubernetes = (cluster.spec.bootstrap.initdb.postInitApplicationSQL as string[]).map(
        (statement) => statement.replace(/\s+/g, " ").trim(),
      );
      expect(kubernetes).toEqual(compose);
      expect(kubernetes.filter((statement) => /^GRANT .*CREATE/.test(statement))).toEqual([]);
    }
  });

  test("X3: the NATS chart's values make a three-node JetStream cluster, not as root", () => {
    const values = Bun.YAML.parse(
      readFileSync(join(root, "deploy/kubernetes/nats-values.yaml"), "utf8"),
    ) as Record<string, any>;
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(values.config.jetstream.enabled).toBe(true);
    expect(values.podTemplate.merge.spec.securityContext.runAsNonRoot).toBe(true);
    expect(values.container.merge.securityContext.capabilities.drop).toEqual(["ALL"]);
    expect(values.config.merge.authorization.users.map((u: { user: string }) => u.user)).toEqual([
      "api",
      "payments",
    ]);
  });

  test("N1: the chart's NATS permissions are deploy/nats-auth.conf's, subject for subject, user by user", () => {
    const values = Bun.YAML.parse(
      readFileSync(join(root, "deploy/kubernetes/nats-values.yaml"), "utf8"),
    ) as Record<string, any>;
    const conf = readFileSync(join(root, "deploy/nats-auth.conf"), "utf8")
      .split("\n")
      .map((line) => line.replace(/#.*$/, ""))
      .join("\n");
    for (const user of values.config.merge.authorization.users) {
      const block = conf.slice(conf.indexOf(`user: ${user.user}`)).split(/\n\s*user: /)[0];
      const subjects = (section: string) =>
        [
          ...(block.split(`${section}:`)[1] ?? "")
            .split(/\n\s*(?:publish|subscribe|allow_responses)\b/)[0]
            .matchAll(/"([^"]+)"/g),
        ].map((m) => m[1]);
      expect({ user: user.user, publish: user.permissions.publish.allow.toSorted() }).toEqual({
        user: user.user,
        publish: subjects("publish").toSorted(),
      });
      expect({ user: user.user, subscribe: user.permissions.subscribe.allow.toSorted() }).toEqual({
        user: user.user,
        subscribe: subjects("subscribe").toSorted(),
      });
      expect({ user: user.user, responses: user.permissions.allow_responses === true }).toEqual({
        user: user.user,
        responses: /allow_responses:\s*true/.test(block),
      });
    }
  });
});
