/**
 * Alerting benchmark, three parts:
 *
 * 1. Page latency: Events API trigger → alert stored → first webhook notification received, at
 *    200 events/s for BENCH_SECONDS, each event a distinct dedup_key, the monitor's policy one
 *    step targeting one webhook channel. The receiver is a `Bun.serve` in its own process
 *    (`--child receiver`) that checks each delivery's `svc-signature`. The send time travels in
 *    the dedup key (`lat-<n>-<epoch ms with µs>`), which the webhook's CloudEvent carries back as
 *    `data.dedup_key`; both processes read the same wall clock (`performance.timeOrigin +
 *    performance.now()`), so latency = receive time − send time without matching tables. The
 *    events are sent open-loop (on a fixed 5 ms schedule, not waiting for answers).
 * 2. Events API throughput at 64 connections (autocannon in its own process, post-load.ts)
 *    against a bare `Bun.serve` answering svc's 202 body (foundation.ts's `startBare`): once with
 *    the same body every time (one dedup_key, so all but the first are dedup hits) and once with
 *    a distinct dedup_key per request (autocannon `requests[0].setupRequest`), every request a
 *    new alert. That monitor has no policy (and the org no default channels): the figure is
 *    ingestion, not delivery.
 * 3. `GET /api/v1/alerts` with 100,000 alerts stored, one request at a time, per filter. The
 *    alerts are written straight into the svc database, not through the API (100,000 triggers
 *    would take minutes and would be part 2 again): `svc admin init` creates and migrates a
 *    fresh data dir; `svc serve` runs once so 20 event monitors in 5 groups can be created
 *    through the API; it is stopped (SIGTERM: the WAL is checkpointed); then `<data dir>/svc.db`
 *    is opened with bun:sqlite and BENCH_ALERTS rows are inserted into `alerts` in one
 *    transaction with one prepared statement, exactly as `insertAlert` would write them (ids
 *    `alt_<ulid of fired_at>`, fired_at spread over the last 30 days, 2% firing, 1%
 *    acknowledged, the rest resolved; severities 20% critical, 30% warning, 50% info; 1% of
 *    summaries mention "checkout"); no timeline rows, events or deliveries (the list does not
 *    read them). Then `svc serve` starts again on that data dir. Each filter gets 10 warm-up
 *    requests and BENCH_LIST_REQUESTS measured ones; the same query is also timed in this
 *    process through `listAlerts` on a read connection of its own, to split database time from
 *    HTTP/JSON time, and its SQLite query plan is printed.
 *
 *   bun scripts/bench/alerting.ts           run this part alone
 *   bun scripts/bench/alerting.ts --child …  internal: the webhook receiver and the load generator
 *
 * Environment: BENCH_SECONDS (measured seconds for parts 1 and 2, default 20),
 * BENCH_WARMUP_SECONDS (default 2, 0 for none), BENCH_ALERTS (default 100000),
 * BENCH_LIST_REQUESTS (default 200). Exit code 0 even when a target is missed.
 */
import { Database as SqliteHandle } from "bun:sqlite";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { Kysely } from "kysely";
import { ulid } from "ulid";
import { listAlerts } from "../../src/alerts/alerts.repository.ts";
import type { Database } from "../../src/db/database.ts";
import { BunSqliteDialect } from "../../src/db/dialect.ts";
import { initOrg, type Server, startBare, startSvcOnPort } from "./foundation.ts";
import {
  CORES,
  eachLine,
  envNumber,
  heading,
  keyValues,
  loadAverage,
  ms,
  num,
  percentile,
  poll,
  procCpuSeconds,
  ratio,
  removeDir,
  runBenchmarkMain,
  type SummaryRow,
  spawnTracked,
  stopProcess,
  table,
  tempDir,
} from "./lib.ts";
import { type LoadResult, runPostLoad } from "./post-load.ts";

const SELF = import.meta.path;
const RATE = 200;
const CONNECTIONS = 64;
const WEBHOOK_SECRET = "bench-webhook-secret-0123456789abcdef";
const MONITORS = 20;
const GROUPS = 5;
const DAY = 86_400_000;

const TARGET_PAGE_P99_MS = 50;
const TARGET_RATIO = 0.35;
const TARGET_LIST_P95_MS = 20;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
const wallMs = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Child roles (run in their own processes).

/** The webhook receiver: records receive − send for each `lat-` dedup key, first delivery only. */
function childReceiver(): void {
  const secret = process.env.BENCH_SECRET ?? "";
  const latencies: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  let badSignatures = 0;
  let other = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    async fetch(request) {
      const url = new URL(request.url);
      if (request.method === "GET" && url.pathname === "/results") {
        return Response.json({ latencies, duplicates, badSignatures, other });
      }
      const body = await request.text();
      const received = wallMs();
      const timestamp = request.headers.get("svc-timestamp") ?? "";
      const signature = request.headers.get("svc-signature") ?? "";
      const expected = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
      if (signature !== expected) badSignatures += 1;
      const key = (JSON.parse(body) as { data?: { dedup_key?: string } }).data?.dedup_key ?? "";
      const match = /^lat-\d+-(\d+\.\d+)$/.exec(key);
      if (!match) other += 1;
      else if (seen.has(key)) duplicates += 1;
      else {
        seen.add(key);
        latencies.push(received - Number(match[1]));
      }
      return new Response(null, { status: 204 });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

// ---------------------------------------------------------------------------------------------
// The orchestrator side.

/** The shared POST load of an Events API body, with a fresh `dedup_key` per request when `prefix` is set. */
function postLoad(
  label: string,
  server: Server,
  body: Record<string, unknown>,
  prefix: string | null,
  seconds: number,
  warmupSeconds: number,
): Promise<LoadResult> {
  return runPostLoad(label, server.proc.pid, {
    url: `${server.base}/api/v1/events`,
    contentType: "application/json",
    fragments: JSON.stringify({ ...body, dedup_key: DEDUP_MARK }).split(DEDUP_MARK),
    fixedId: String(body.dedup_key),
    prefix,
    connections: CONNECTIONS,
    seconds,
    warmupSeconds,
  });
}

const DEDUP_MARK = "<dedup-key>";

async function startReceiver(): Promise<Server> {
  const proc = spawnTracked([process.execPath, SELF, "--child", "receiver"], {
    env: { ...process.env, BENCH_SECRET: WEBHOOK_SECRET },
    stdout: "pipe",
    stderr: "inherit",
  });
  const port = await new Promise<number>((resolve, reject) => {
    void eachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
      resolve((JSON.parse(line) as { port: number }).port);
    }).then(() => reject(new Error("the webhook receiver exited before listening")));
  });
  return { label: "webhook receiver", proc, base: `http://127.0.0.1:${port}` };
}

interface ReceiverResults {
  latencies: number[];
  duplicates: number;
  badSignatures: number;
  other: number;
}

async function receiverResults(receiver: Server): Promise<ReceiverResults> {
  return (await (await fetch(`${receiver.base}/results`)).json()) as ReceiverResults;
}

/** A JSON call to svc that must answer `expected`. */
async function call<T>(
  base: string,
  authorization: string,
  method: string,
  path: string,
  body?: unknown,
  expected = 201,
): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** The `svc_store_commits` counter from /metrics. */
async function storeCommits(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("svc_store_commits"));
  return Number(line?.split(" ").pop() ?? Number.NaN);
}

function trigger(routingKey: string, dedupKey: string, sentAt: number) {
  return {
    routing_key: routingKey,
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: {
      summary: "Checkout latency above 2 s",
      source: "checkout-7d9f",
      severity: "critical",
      component: "api",
      custom_details: { sent_at_ms: sentAt },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Part 1: trigger → webhook latency at 200 events/s.

interface PageLatency {
  sent: number;
  received: number;
  pageMs: number[];
  acceptMs: number[];
  non202: number;
  duplicates: number;
  badSignatures: number;
  svcCores: number;
  commitsPerSecond: number;
  lateSends: number;
}

/** Sends `count` triggers on a fixed schedule (open loop); resolves when all are answered. */
async function sendAtRate(
  base: string,
  routingKey: string,
  count: number,
  keyOf: (n: number, sentAt: number) => string,
): Promise<{ acceptMs: number[]; non202: number; lateSends: number }> {
  const acceptMs: number[] = [];
  let non202 = 0;
  let lateSends = 0;
  const pending: Promise<void>[] = [];
  const interval = 1000 / RATE;
  const start = performance.now();
  for (let n = 0; n < count; n++) {
    const due = start + n * interval;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    else if (wait < -interval) lateSends += 1;
    const sentAt = wallMs();
    const began = performance.now();
    pending.push(
      fetch(`${base}/api/v1/events`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(trigger(routingKey, keyOf(n, sentAt), sentAt)),
      }).then(async (response) => {
        await response.arrayBuffer();
        acceptMs.push(performance.now() - began);
        if (response.status !== 202) non202 += 1;
      }),
    );
  }
  await Promise.all(pending);
  return { acceptMs, non202, lateSends };
}

async function measurePageLatency(
  svc: Server,
  receiver: Server,
  routingKey: string,
  seconds: number,
  warmup: number,
): Promise<PageLatency> {
  if (warmup > 0) {
    await sendAtRate(svc.base, routingKey, Math.round(RATE * warmup), (n) => `warm-${n}`);
    await Bun.sleep(500);
  }
  const count = Math.round(RATE * seconds);
  const cpuBefore = procCpuSeconds(svc.proc.pid);
  const commitsBefore = await storeCommits(svc.base);
  const started = performance.now();
  const sent = await sendAtRate(svc.base, routingKey, count, (n, sentAt) => `lat-${n}-${sentAt.toFixed(3)}`);
  const results = await poll(
    "every webhook to arrive",
    async () => {
      const r = await receiverResults(receiver);
      return r.latencies.length >= count ? r : undefined;
    },
    100,
    30_000,
  ).catch(() => receiverResults(receiver));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = procCpuSeconds(svc.proc.pid) - cpuBefore;
  const commits = (await storeCommits(svc.base)) - commitsBefore;
  return {
    sent: count,
    received: results.latencies.length,
    pageMs: results.latencies.sort((a, b) => a - b),
    acceptMs: sent.acceptMs.sort((a, b) => a - b),
    non202: sent.non202,
    duplicates: results.duplicates,
    badSignatures: results.badSignatures,
    svcCores: cpu / elapsed,
    commitsPerSecond: commits / elapsed,
    lateSends: sent.lateSends,
  };
}

// ---------------------------------------------------------------------------------------------
// Part 3: 100,000 stored alerts and GET /api/v1/alerts.

const SUMMARIES = [
  "Disk almost full on db%",
  "High CPU on web%",
  "Certificate expires soon for api%",
  "Replication lag on replica%",
  "Error rate above 5% on worker%",
  "Memory pressure on cache%",
  "Queue backlog growing on broker%",
  "Heartbeat missed: backup job %",
];

/**
 * Writes `n` alerts into the stopped server's database (see the header), deterministically
 * (a fixed-seed generator), and returns what the filters need.
 */
export function seedAlerts(
  dbFile: string,
  orgId: string,
  monitors: { id: string; group_id: string }[],
  n: number,
) {
  let seed = 0x2545f491;
  const random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 4294967296;
  };
  const db = new SqliteHandle(dbFile, { strict: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA foreign_keys = ON");
  const insert = db.prepare(
    `INSERT INTO alerts (id, org_id, monitor_id, group_id, dedup_key, summary, reason, severity,
       severity_rank, status, labels, fired_at, acknowledged_at, acknowledged_by, resolved_at,
       resolved_by, policy_snapshot, current_escalation_step, escalation_pass, notification_count,
       escalate_at, auto_resolve_at, source_down)
     VALUES ($id, $org_id, $monitor_id, $group_id, $dedup_key, $summary, $reason, $severity,
       $severity_rank, $status, $labels, $fired_at, $acknowledged_at, $acknowledged_by, $resolved_at,
       $resolved_by, NULL, NULL, 0, 0, NULL, NULL, $source_down)`,
  );
  const now = Date.now();
  const started = performance.now();
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const monitor = monitors[i % monitors.length] as { id: string; group_id: string };
      const firedAt = now - Math.floor(random() * 30 * DAY) - 60_000;
      const r = random();
      const status = r < 0.02 ? "firing" : r < 0.03 ? "acknowledged" : "resolved";
      const s = random();
      const severity = s < 0.2 ? "critical" : s < 0.5 ? "warning" : "info";
      const host = String(1 + Math.floor(random() * 40)).padStart(2, "0");
      const summary =
        random() < 0.01
          ? `Checkout latency above 2 s on web${host}`
          : (SUMMARIES[Math.floor(random() * SUMMARIES.length)] as string).replace("%", host);
      insert.run({
        id: `alt_${ulid(firedAt).toLowerCase()}`,
        org_id: orgId,
        monitor_id: monitor.id,
        group_id: monitor.group_id,
        dedup_key: `seed-${i}`,
        summary,
        reason: `node-exporter / host${host}`,
        severity,
        severity_rank: severity === "critical" ? 2 : severity === "warning" ? 1 : 0,
        status,
        labels: JSON.stringify({ source: "node-exporter", component: `host${host}` }),
        fired_at: firedAt,
        acknowledged_at: status === "acknowledged" ? firedAt + 120_000 : null,
        acknowledged_by: status === "acknowledged" ? "key:bench" : null,
        resolved_at: status === "resolved" ? firedAt + 600_000 : null,
        resolved_by: status === "resolved" ? `monitor:${monitor.id}` : null,
        source_down: status === "resolved" ? 0 : 1,
      });
    }
  })();
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return { seconds, now };
}

interface ListCase {
  name: string;
  query: string;
}

interface ListFigures {
  name: string;
  query: string;
  count: number;
  p50: number;
  p95: number;
  p99: number;
  dbP50: number;
  dbP95: number;
  plan: string[];
}

/** The filter of `GET /alerts?<query>` as the route builds it. */
function filterOf(query: string) {
  const params = new URLSearchParams(query);
  const sort = (params.get("sort") ?? "-fired_at") as "fired_at" | "-fired_at" | "severity" | "-severity";
  const from = params.get("from");
  const to = params.get("to");
  return {
    statuses: params.get("status")?.split(",") as ("firing" | "acknowledged" | "resolved")[] | undefined,
    severities: params.get("severity")?.split(","),
    monitorId: params.get("monitor_id") ?? undefined,
    groupId: params.get("group_id") ?? undefined,
    from: from ? Date.parse(from) : undefined,
    to: to ? Date.parse(to) : undefined,
    q: params.get("q") ?? undefined,
    sort,
    limit: Number(params.get("limit") ?? 50),
  };
}

async function measureList(
  svc: Server,
  authorization: string,
  orgId: string,
  dbFile: string,
  cases: ListCase[],
  requests: number,
): Promise<ListFigures[]> {
  // A read connection of our own, set up like the server's reader, to time the query alone.
  const handle = new SqliteHandle(dbFile, { readonly: true, strict: true });
  handle.run("PRAGMA cache_size = -16000");
  handle.run("PRAGMA temp_store = MEMORY");
  let lastSql: { sql: string; parameters: readonly unknown[] } | null = null;
  const db = new Kysely<Database>({
    dialect: new BunSqliteDialect(handle),
    log: (event) => {
      lastSql = { sql: event.query.sql, parameters: event.query.parameters };
    },
  });
  const figures: ListFigures[] = [];
  try {
    for (const c of cases) {
      const url = `${svc.base}/api/v1/alerts?${c.query}`;
      let count = 0;
      const once = async () => {
        const began = performance.now();
        const response = await fetch(url, { headers: { authorization } });
        const body = (await response.json()) as { data: unknown[] };
        const elapsed = performance.now() - began;
        if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`);
        count = body.data.length;
        return elapsed;
      };
      for (let i = 0; i < 10; i++) await once();
      const times: number[] = [];
      for (let i = 0; i < requests; i++) times.push(await once());
      times.sort((a, b) => a - b);

      const filter = filterOf(c.query);
      const dbTimes: number[] = [];
      for (let i = 0; i < Math.min(requests, 50); i++) {
        const began = performance.now();
        await listAlerts(db, orgId, filter);
        dbTimes.push(performance.now() - began);
      }
      dbTimes.sort((a, b) => a - b);
      const captured = lastSql as { sql: string; parameters: readonly unknown[] } | null;
      const plan = captured
        ? (
            handle.query(`EXPLAIN QUERY PLAN ${captured.sql}`).all(...(captured.parameters as never[])) as {
              detail: string;
            }[]
          ).map((r) => r.detail)
        : [];
      figures.push({
        name: c.name,
        query: c.query,
        count,
        p50: percentile(times, 50),
        p95: percentile(times, 95),
        p99: percentile(times, 99),
        dbP50: percentile(dbTimes, 50),
        dbP95: percentile(dbTimes, 95),
        plan,
      });
    }
  } finally {
    await db.destroy();
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------

export async function runAlertingBench(): Promise<SummaryRow[]> {
  const seconds = envNumber("BENCH_SECONDS", 20);
  const warmup = process.env.BENCH_WARMUP_SECONDS === "0" ? 0 : envNumber("BENCH_WARMUP_SECONDS", 2);
  const alertCount = envNumber("BENCH_ALERTS", 100_000);
  const listRequests = envNumber("BENCH_LIST_REQUESTS", 200);

  heading("Alerting: Events API → webhook latency, Events API throughput, alert list");
  keyValues([
    [
      "machine",
      `${CORES} cores, Bun ${Bun.version}, ${process.platform}/${process.arch}, load average ${num(loadAverage(), 2)}`,
    ],
    [
      "duration",
      `${seconds} s measured (BENCH_SECONDS) + ${warmup} s warm-up, for the latency run and each load run`,
    ],
    ["svc", "svc serve at log level warn, durability full (the default), fresh data dir"],
  ]);

  const rows: SummaryRow[] = [];
  const root = tempDir("svc-bench-alerting-");
  try {
    // -- Parts 1 and 2 share one server. ------------------------------------------------------
    const dataDir = join(root, "data");
    const authorization = (await initOrg(dataDir)).authorization;
    const receiver = await startReceiver();
    const svc = (await startSvcOnPort(dataDir, join(root, "serve.log"), "warn")).server;

    const channel = await call<{ id: string }>(
      svc.base,
      authorization,
      "POST",
      "/api/v1/notification-channels",
      {
        name: "Bench receiver",
        type: "webhook",
        config: { url: `${receiver.base}/hook`, secret: WEBHOOK_SECRET, timeout_ms: 5000 },
      },
    );
    const policy = await call<{ id: string }>(
      svc.base,
      authorization,
      "POST",
      "/api/v1/escalation-policies",
      {
        name: "Page the receiver",
        steps: [{ delay_seconds: 300, targets: [{ type: "channel", id: channel.id }] }],
      },
    );
    const paged = await call<{ integration_key: string }>(
      svc.base,
      authorization,
      "POST",
      "/api/v1/monitors",
      {
        name: "Checkout (paged)",
        type: "event",
        escalation_policy_id: policy.id,
      },
    );
    const ingest = await call<{ integration_key: string }>(
      svc.base,
      authorization,
      "POST",
      "/api/v1/monitors",
      {
        name: "Checkout (throughput)",
        type: "event",
      },
    );

    heading(`1. Trigger → alert stored → webhook received, ${RATE} events/s for ${seconds} s`);
    console.log("  running …");
    const page = await measurePageLatency(svc, receiver, paged.integration_key, seconds, warmup);
    const pageP99 = percentile(page.pageMs, 99);
    table(
      ["measure", "n", "p50", "p90", "p99", "p99.9", "max"],
      [
        [
          "trigger → webhook received",
          num(page.received),
          ms(percentile(page.pageMs, 50)),
          ms(percentile(page.pageMs, 90)),
          ms(pageP99),
          ms(percentile(page.pageMs, 99.9)),
          ms(percentile(page.pageMs, 100)),
        ],
        [
          "trigger → 202 (alert stored)",
          num(page.acceptMs.length),
          ms(percentile(page.acceptMs, 50)),
          ms(percentile(page.acceptMs, 90)),
          ms(percentile(page.acceptMs, 99)),
          ms(percentile(page.acceptMs, 99.9)),
          ms(percentile(page.acceptMs, 100)),
        ],
      ],
    );
    console.log("");
    keyValues([
      ["events sent / non-202", `${num(page.sent)} / ${num(page.non202)}`],
      [
        "webhooks received",
        `${num(page.received)} (${num(page.duplicates)} duplicates, ${num(page.badSignatures)} bad signatures)`,
      ],
      ["sends more than 5 ms late", num(page.lateSends)],
      ["svc CPU", `${num(page.svcCores, 2)} cores (of 1 usable by its JS thread)`],
      ["svc commits", `${num(page.commitsPerSecond)} /s (group commit, durability full)`],
    ]);
    rows.push(
      {
        name: `trigger → webhook p50 / p99 @${RATE}/s`,
        target: `p99 < ${TARGET_PAGE_P99_MS} ms`,
        figure: `${ms(percentile(page.pageMs, 50))} / ${ms(pageP99)}`,
        pass: page.received === page.sent && pageP99 < TARGET_PAGE_P99_MS,
      },
      {
        name: `trigger → 202 p50 / p99 @${RATE}/s`,
        target: "-",
        figure: `${ms(percentile(page.acceptMs, 50))} / ${ms(percentile(page.acceptMs, 99))}`,
        pass: null,
      },
      {
        name: "webhooks received / events sent",
        target: "all",
        figure: `${num(page.received)} / ${num(page.sent)}`,
        pass: page.received === page.sent && page.badSignatures === 0,
      },
    );

    heading(`2. Events API throughput, ${CONNECTIONS} connections, ${seconds} s each`);
    const probe = await fetch(`${svc.base}/api/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(trigger(ingest.integration_key, "probe", 0)),
    });
    const answer = await probe.text();
    if (probe.status !== 202) throw new Error(`the Events API answered ${probe.status}: ${answer}`);
    const sameBody = trigger(ingest.integration_key, "same-key", 0);
    const bare = await startBare(answer);
    console.log(`  loading ${bare.label} …`);
    const bareRun = await postLoad("bare Bun.serve", bare, sameBody, null, seconds, warmup);
    await stopProcess(bare.proc);
    console.log("  loading svc, one dedup_key (dedup hits) …");
    const sameRun = await postLoad("svc, one dedup_key", svc, sameBody, null, seconds, warmup);
    console.log("  loading svc, a distinct dedup_key per request (new alerts) …");
    const commitsBefore = await storeCommits(svc.base);
    const distinctRun = await postLoad("svc, distinct dedup_keys", svc, sameBody, "tp", seconds, warmup);
    const distinctCommits = (await storeCommits(svc.base)) - commitsBefore;
    await stopProcess(svc.proc);
    await stopProcess(receiver.proc);

    const loadRow = (run: LoadResult) => [
      run.label,
      num(run.rps),
      ms(run.report.latency.p50),
      ms(run.report.latency.p99),
      ms(run.report.latency.max),
      `${num(run.serverCpuSeconds / run.report.seconds, 2)} / ${num(run.report.cpuSeconds / run.report.seconds, 2)}`,
      `${num((run.serverCpuSeconds / Math.max(1, run.report.responses)) * 1e6, 1)} µs`,
      num(run.report.responses - run.ok + run.report.errors),
    ];
    table(
      ["server", "req/s", "p50", "p99", "max", "cores srv/load", "srv CPU/req", "errors"],
      [loadRow(bareRun), loadRow(sameRun), loadRow(distinctRun)],
    );
    const sameRatio = sameRun.rps / bareRun.rps;
    const distinctRatio = distinctRun.rps / bareRun.rps;
    console.log("");
    keyValues([
      ["bare answers", `svc's own 202 body (${answer.length} B), status 200, without reading the request`],
      ["ratio one dedup_key / bare", `${ratio(sameRatio)} (target ≥ ${TARGET_RATIO})`],
      ["ratio distinct dedup_keys / bare", `${ratio(distinctRatio)} (target ≥ ${TARGET_RATIO})`],
      [
        "distinct keys: alerts per commit",
        `${num(distinctRun.ok / Math.max(1, distinctCommits), 1)} (${num(distinctCommits)} commits; warm-up included in commits)`,
      ],
    ]);
    rows.push(
      { name: "Events API req/s bare Bun.serve", target: "-", figure: num(bareRun.rps), pass: null },
      {
        name: "Events API req/s svc, one dedup_key",
        target: "-",
        figure: num(sameRun.rps),
        pass: null,
      },
      {
        name: "Events API ratio svc/bare, one dedup_key",
        target: `≥ ${TARGET_RATIO}`,
        figure: ratio(sameRatio),
        pass: sameRatio >= TARGET_RATIO,
      },
      {
        name: "Events API req/s svc, distinct keys",
        target: "-",
        figure: num(distinctRun.rps),
        pass: null,
      },
      {
        name: "Events API ratio svc/bare, distinct keys",
        target: `≥ ${TARGET_RATIO}`,
        figure: ratio(distinctRatio),
        pass: distinctRatio >= TARGET_RATIO,
      },
    );

    // -- Part 3: its own data dir with the seeded alerts. ------------------------------------
    heading(`3. GET /api/v1/alerts with ${num(alertCount)} alerts, ${listRequests} requests per filter`);
    const listDir = join(root, "list-data");
    const listAuth = (await initOrg(listDir)).authorization;
    const first = (await startSvcOnPort(listDir, join(root, "list-1.log"), "warn")).server;
    const org = await call<{ id: string }>(first.base, listAuth, "GET", "/api/v1/org", undefined, 200);
    const monitors: { id: string; group_id: string }[] = [];
    for (let i = 0; i < MONITORS; i++) {
      const severity = ["critical", "warning", "info"][i % 3];
      monitors.push(
        await call<{ id: string; group_id: string }>(first.base, listAuth, "POST", "/api/v1/monitors", {
          name: `Service ${i + 1}`,
          type: "event",
          group_id: `group-${(i % GROUPS) + 1}`,
          severity,
        }),
      );
    }
    await stopProcess(first.proc);
    const dbFile = join(listDir, "svc.db");
    const seeded = seedAlerts(dbFile, org.id, monitors, alertCount);
    console.log(
      `  seeded ${num(alertCount)} alerts into ${dbFile} with bun:sqlite in ${num(seeded.seconds, 2)} s (server stopped)`,
    );
    const listSvc = (await startSvcOnPort(listDir, join(root, "list-2.log"), "warn")).server;
    const day = (n: number) => new Date(seeded.now - n * DAY).toISOString();
    const cases: ListCase[] = [
      { name: "no filter (newest first)", query: "" },
      { name: "status=firing", query: "status=firing" },
      { name: "status=firing,acknowledged", query: "status=firing,acknowledged" },
      { name: "severity=critical", query: "severity=critical" },
      { name: "monitor_id", query: `monitor_id=${monitors[3]?.id}` },
      { name: "group_id", query: "group_id=group-2" },
      {
        name: "from/to (one day)",
        query: `from=${encodeURIComponent(day(15))}&to=${encodeURIComponent(day(14))}`,
      },
      { name: "q (1% match)", query: "q=checkout" },
      { name: "q (no match)", query: "q=no-such-text" },
      { name: "sort=-severity", query: "sort=-severity" },
      { name: "sort=severity", query: "sort=severity" },
      { name: "open, critical first", query: "status=firing,acknowledged&sort=-severity" },
    ];
    const list = await measureList(listSvc, listAuth, org.id, dbFile, cases, listRequests);
    await stopProcess(listSvc.proc);
    table(
      ["filter", "rows", "p50", "p95", "p99", "db p50", "db p95"],
      list.map((f) => [f.name, num(f.count), ms(f.p50), ms(f.p95), ms(f.p99), ms(f.dbP50), ms(f.dbP95)]),
    );
    console.log(
      "\n  p50/p95/p99: one request at a time over HTTP (limit 50, keep-alive); db: the same listAlerts\n" +
        "  query in this process on its own read connection (SQLite alone, no HTTP or JSON).\n\n  query plans:",
    );
    for (const f of list) console.log(`    ${f.name}: ${f.plan.join(" | ")}`);
    for (const f of list) {
      rows.push({
        name: `GET /alerts ${f.name} p95`,
        target: `< ${TARGET_LIST_P95_MS} ms`,
        figure: `${ms(f.p95)} (db ${ms(f.dbP95)})`,
        pass: f.p95 < TARGET_LIST_P95_MS,
      });
    }
  } finally {
    removeDir(root);
  }
  return rows;
}

if (import.meta.main) {
  const role = process.argv[2] === "--child" ? process.argv[3] : undefined;
  if (role === "receiver") childReceiver();
  else if (role !== undefined) throw new Error(`unknown child role ${role}`);
  else {
    await runBenchmarkMain(runAlertingBench);
  }
}
