/**
 * The Alertmanager webhook receiver driven by the real Prometheus Alertmanager (Debian's
 * `prometheus-alertmanager`, installed by .ci/run when missing): the test starts its own
 * Alertmanager on a free loopback port with clustering off, a temp storage dir and a config whose
 * one route sends to a `webhook_configs` receiver pointed at
 * `/api/v1/integrations/alertmanager/<integration_key>` of an event monitor (`send_resolved`,
 * 1 s group wait/interval). Alerts are posted to Alertmanager's own API (`/api/v2/alerts`, as
 * Prometheus does) and the test watches what svc makes of Alertmanager's notifications
 * (DESIGN §6 "Events API"): one alert per fingerprint with summary, reason, severity and labels
 * from the alert, deduplicated repeats, and the automatic resolve once Alertmanager reports the
 * alert resolved (explicitly, or by its `resolve_timeout`). Black-box: plain HTTP only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Client, TestServer, tempDir } from "../support/harness.ts";

const ALERTMANAGER = "prometheus-alertmanager";
const SLOW = 60_000;
/** Alertmanager's `resolve_timeout`: an alert posted without `endsAt` resolves after this. */
const RESOLVE_TIMEOUT_S = 6;
const ALERT_ID = /^alt_[0-9a-z]{26}$/;
const FINGERPRINT = /^[0-9a-f]{16}$/;

let server: TestServer;
let api: Client;
let monitor: { id: string; integration_key: string };
let amDir: string;
let am: ReturnType<typeof Bun.spawn> | undefined;
let amBase: string;
let amOutput = "";

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function until<V>(read: () => Promise<V>, done: (v: V) => boolean, timeoutMs = 20_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await Bun.sleep(200);
  }
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) amOutput += decoder.decode(chunk, { stream: true });
}

/** Starts our own Alertmanager (never the packaged service) and waits for `/-/ready`. */
async function startAlertmanager(receiverUrl: string): Promise<void> {
  amDir = tempDir("svc-alertmanager-");
  const storage = join(amDir, "data");
  mkdirSync(storage);
  const configFile = join(amDir, "alertmanager.yml");
  writeFileSync(
    configFile,
    [
      "global:",
      `  resolve_timeout: ${RESOLVE_TIMEOUT_S}s`,
      "route:",
      "  receiver: svc",
      "  group_by: ['alertname']",
      "  group_wait: 1s",
      "  group_interval: 1s",
      // Short, so Alertmanager repeats firing notifications during the test (svc must dedup).
      "  repeat_interval: 2s",
      "receivers:",
      "  - name: svc",
      "    webhook_configs:",
      `      - url: '${receiverUrl}'`,
      "        send_resolved: true",
      "",
    ].join("\n"),
  );
  const port = freePort();
  amBase = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/_proxy$/i.test(key)) env[key] = value;
  }
  am = Bun.spawn(
    [
      ALERTMANAGER,
      `--config.file=${configFile}`,
      `--storage.path=${storage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--cluster.listen-address=",
      "--log.level=debug",
    ],
    { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  void collect(am.stdout as ReadableStream<Uint8Array>);
  void collect(am.stderr as ReadableStream<Uint8Array>);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (am.exitCode !== null) break;
    try {
      const res = await fetch(`${amBase}/-/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  throw new Error(`Alertmanager did not become ready (exit ${am.exitCode}):\n${amOutput}`);
}

interface PostedAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt?: string;
  endsAt?: string;
}

/** `POST /api/v2/alerts` on Alertmanager, as Prometheus sends them. */
async function postToAlertmanager(alerts: PostedAlert[]): Promise<void> {
  const res = await fetch(`${amBase}/api/v2/alerts`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(alerts),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`Alertmanager refused the alerts: ${res.status} ${text}`);
}

/** Alertmanager's own fingerprint of the active alert named `alertname`. */
async function fingerprintOf(alertname: string): Promise<string> {
  const filter = encodeURIComponent(`alertname="${alertname}"`);
  const res = await fetch(`${amBase}/api/v2/alerts?filter=${filter}`);
  const alerts = (await res.json()) as { fingerprint: string }[];
  expect(alerts).toHaveLength(1);
  return alerts[0]?.fingerprint as string;
}

/** The webhook notifications Alertmanager has sent so far (its own counter). */
async function webhookNotifications(): Promise<number> {
  const text = await (await fetch(`${amBase}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("alertmanager_notifications_total") && l.includes('integration="webhook"'));
  return Number(line?.split(" ").pop() ?? Number.NaN);
}

async function webhookFailures(): Promise<number> {
  const text = await (await fetch(`${amBase}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("alertmanager_notifications_failed_total") && l.includes('"webhook"'))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

async function svcAlerts(): Promise<any[]> {
  const res = await api.get(`/api/v1/alerts?monitor_id=${monitor.id}&limit=200&sort=fired_at`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function svcAlertByKey(dedupKey: string): Promise<any | undefined> {
  return (await svcAlerts()).find((a) => a.dedup_key === dedupKey);
}

const iso = (ms: number) => new Date(ms).toISOString();
const inTenMinutes = () => iso(Date.now() + 10 * 60_000);

const diskFull: PostedAlert = {
  labels: { alertname: "DiskFull", severity: "warning", instance: "db01:9100", job: "node" },
  annotations: {
    summary: "Disk almost full on db01",
    description: "/var/lib/postgresql has 3% space left",
  },
};
const highLatency: PostedAlert = {
  labels: { alertname: "HighLatency", severity: "critical", service: "checkout" },
  annotations: { summary: "Checkout p99 above 2 s", description: "p99 2.4 s for 10 minutes" },
};
let diskFullStartsAt: string;

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  const created = await api.post("/api/v1/monitors", {
    name: "Prometheus",
    type: "event",
    severity: "info",
    freshness_seconds: 1,
  });
  if (created.status !== 201) throw new Error(`create monitor: ${created.status} ${created.text}`);
  monitor = created.body;
  await startAlertmanager(`${server.base}/api/v1/integrations/alertmanager/${monitor.integration_key}`);
}, SLOW);

afterAll(async () => {
  if (am && am.exitCode === null) {
    am.kill("SIGTERM");
    const exited = await Promise.race([am.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
    if (!exited) am.kill("SIGKILL");
    await am.exited;
  }
  if (amDir) rmSync(amDir, { recursive: true, force: true });
  await server?.dispose();
}, SLOW);

describe("Prometheus Alertmanager → svc", () => {
  test(
    "a firing alert becomes an svc alert keyed by Alertmanager's fingerprint",
    async () => {
      diskFullStartsAt = iso(Date.now() - 60_000);
      await postToAlertmanager([{ ...diskFull, startsAt: diskFullStartsAt, endsAt: inTenMinutes() }]);
      const fingerprint = await fingerprintOf("DiskFull");
      expect(fingerprint).toMatch(FINGERPRINT);

      const alerts = await until(svcAlerts, (a) => a.length > 0);
      if (alerts.length === 0) throw new Error(`no svc alert; Alertmanager said:\n${amOutput}`);
      expect(alerts).toHaveLength(1);
      const alert = alerts[0];
      expect(alert.id).toMatch(ALERT_ID);
      expect(alert).toMatchObject({
        monitor_id: monitor.id,
        dedup_key: fingerprint,
        summary: "Disk almost full on db01",
        reason: "/var/lib/postgresql has 3% space left",
        severity: "warning",
        status: "firing",
        labels: diskFull.labels,
        resolved_at: null,
      });
      expect((await api.get(`/api/v1/monitors/${monitor.id}`)).body.status).toBe("down");
      expect(await webhookFailures()).toBe(0);
    },
    SLOW,
  );

  test(
    "a second alertname fires a second alert; repeated notifications add nothing",
    async () => {
      await postToAlertmanager([{ ...highLatency, startsAt: iso(Date.now()), endsAt: inTenMinutes() }]);
      const fingerprint = await fingerprintOf("HighLatency");
      expect(fingerprint).not.toBe(await fingerprintOf("DiskFull"));
      const second = await until(
        () => svcAlertByKey(fingerprint),
        (a) => a !== undefined,
      );
      expect(second).toMatchObject({
        dedup_key: fingerprint,
        summary: "Checkout p99 above 2 s",
        reason: "p99 2.4 s for 10 minutes",
        severity: "critical",
        status: "firing",
        labels: highLatency.labels,
      });

      // repeat_interval is 2 s: Alertmanager sends both groups again; svc keeps one alert each.
      const sent = await webhookNotifications();
      const later = await until(webhookNotifications, (n) => n >= sent + 2);
      expect(later).toBeGreaterThanOrEqual(sent + 2);
      const alerts = await svcAlerts();
      expect(alerts.map((a) => a.summary).sort()).toEqual([
        "Checkout p99 above 2 s",
        "Disk almost full on db01",
      ]);
      expect(alerts.every((a) => a.status === "firing")).toBe(true);
      expect(await webhookFailures()).toBe(0);
    },
    SLOW,
  );

  test(
    "resolving in Alertmanager resolves the svc alert automatically (freshness 1 s)",
    async () => {
      const fingerprint = await fingerprintOf("DiskFull");
      const before = await svcAlertByKey(fingerprint);
      expect(before?.status).toBe("firing");
      // As Prometheus does when the rule stops firing: the same labels with endsAt in the past.
      await postToAlertmanager([{ ...diskFull, startsAt: diskFullStartsAt, endsAt: iso(Date.now() - 1000) }]);

      const after = await until(
        () => svcAlertByKey(fingerprint),
        (a) => a?.status === "resolved",
      );
      expect(after).toMatchObject({
        id: before.id,
        status: "resolved",
        resolved_by: `monitor:${monitor.id}`,
      });
      const timeline = await api.get(`/api/v1/alerts/${before.id}/timeline`);
      expect(timeline.body.data.at(-1)).toMatchObject({
        type: "resolved",
        data: { by: `monitor:${monitor.id}`, auto: true },
      });

      // The other alert is still firing (its group keeps being re-sent) and the monitor stays down.
      await Bun.sleep(2500);
      const highLatencyAlert = await svcAlertByKey(await fingerprintOf("HighLatency"));
      expect(highLatencyAlert.status).toBe("firing");
      expect((await api.get(`/api/v1/monitors/${monitor.id}`)).body.status).toBe("down");
      expect(await svcAlerts()).toHaveLength(2);
    },
    SLOW,
  );

  test(
    "an alert without endsAt or annotations: alertname as summary, labels as reason, the monitor's severity, resolved by resolve_timeout",
    async () => {
      const labels = { alertname: "ScrapeDown", job: "blackbox" };
      await postToAlertmanager([{ labels, startsAt: iso(Date.now()) }]);
      const fingerprint = await fingerprintOf("ScrapeDown");
      const fired = await until(
        () => svcAlertByKey(fingerprint),
        (a) => a !== undefined,
      );
      expect(fired).toMatchObject({
        summary: "ScrapeDown",
        reason: "alertname=ScrapeDown, job=blackbox",
        severity: "info",
        labels,
      });
      // Nothing re-posts it: Alertmanager resolves it after resolve_timeout and says so.
      const resolved = await until(
        () => svcAlertByKey(fingerprint),
        (a) => a?.status === "resolved",
        (RESOLVE_TIMEOUT_S + 15) * 1000,
      );
      expect(resolved).toMatchObject({
        id: fired.id,
        status: "resolved",
        resolved_by: `monitor:${monitor.id}`,
      });
    },
    SLOW,
  );

  test(
    "once every alert is resolved in Alertmanager the monitor is up again",
    async () => {
      const fingerprint = await fingerprintOf("HighLatency");
      await postToAlertmanager([
        { ...highLatency, startsAt: iso(Date.now() - 60_000), endsAt: iso(Date.now()) },
      ]);
      const resolved = await until(
        () => svcAlertByKey(fingerprint),
        (a) => a?.status === "resolved",
      );
      expect(resolved.status).toBe("resolved");
      const status = await until(
        async () => (await api.get(`/api/v1/monitors/${monitor.id}`)).body.status,
        (s) => s === "up",
      );
      expect(status).toBe("up");
      const alerts = await svcAlerts();
      expect(alerts).toHaveLength(3);
      expect(alerts.every((a) => a.status === "resolved")).toBe(true);
      expect(await webhookFailures()).toBe(0);
    },
    SLOW,
  );
});
