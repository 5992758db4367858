/**
 * Connector benchmark (issue 7): events fired into a real `svc serve` through the ingest
 * endpoint, read by a real `svc connector` and delivered to a local sink in its own process.
 *
 * 1. Throughput, stream mode, binary mode: BENCH_EVENTS events are ingested as fast as four
 *    concurrent batch posters go (256 events a batch) while the connector streams; the rate is
 *    measured at the sink over the middle 80 % of the arrivals (ramp-up and tail left out).
 *    The same again in structured mode (information), and a backlog drain: a new connector
 *    started with `--start earliest` over events already stored (its first page comes by poll).
 * 2. End-to-end latency at BENCH_RATE events/s (500): one structured event per ingest POST on an
 *    open-loop schedule for BENCH_SECONDS; the send time travels in `data.sent` and the sink
 *    computes arrival − send on the same wall clock (`performance.timeOrigin + now()`).
 * 3. Poll mode: the org's source config set to `poll` (interval 1 s) and a new connector; the
 *    rate of part 1 measured again. svc runs with `limits.poll_per_minute` raised so the poll
 *    rate limit (60 a minute by default, 1,000-event pages) is not what is measured.
 *
 * The sink is a bare `Bun.serve` that reads each body and answers 202 (it does not run the
 * cloudevents SDK: the figure is the connector's, not a sink's). svc and the connector log at
 * `warn`. Everything shares this machine's cores: the load generator, svc, the connector and
 * the sink.
 *
 *   bun scripts/bench/connector.ts
 *   bun scripts/bench/connector.ts --child sink     internal: the sink process
 *
 * Environment: BENCH_EVENTS (default 30000), BENCH_SECONDS (latency run, default 10),
 * BENCH_RATE (default 500), BENCH_CONCURRENCY (the connector's --concurrency, default its own).
 * Part of `run.ts`. Exit code 0 even when a target is missed.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";
import { initOrg, startSvcOnPort, svcEnv } from "./foundation.ts";
import {
  api,
  CLI,
  CORES,
  eachLine,
  envNumber,
  freePort,
  heading,
  keyValues,
  loadAverage,
  ms,
  num,
  percentile,
  poll,
  procCpuSeconds,
  runBenchmarkMain,
  type SummaryRow,
  spawnTracked,
  stopProcess,
  tempDir,
} from "./lib.ts";

const SELF = import.meta.path;
const TARGET_RATE = 5000;
const TARGET_P99_MS = 50;
const BATCH = 256;
const POSTERS = 4;

const wallMs = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// The sink (its own process).

function childSink(): void {
  const runs = new Map<string, { arrivals: number[]; latencies: number[] }>();
  let other = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    async fetch(request) {
      const url = new URL(request.url);
      if (request.method === "GET" && url.pathname === "/stats") {
        const run = runs.get(url.searchParams.get("run") ?? "");
        const full = url.searchParams.get("full") === "1";
        return Response.json({
          count: run?.arrivals.length ?? 0,
          other,
          ...(full ? { arrivals: run?.arrivals ?? [], latencies: run?.latencies ?? [] } : {}),
        });
      }
      const text = await request.text();
      const arrived = wallMs();
      try {
        const parsed = JSON.parse(text) as {
          data?: { run?: string; sent?: number };
          run?: string;
          sent?: number;
        };
        // Binary mode: the body is the data; structured mode: the whole event.
        const data = request.headers.has("ce-id") ? parsed : parsed.data;
        const name = (data as { run?: string } | undefined)?.run ?? "";
        let run = runs.get(name);
        if (!run) {
          run = { arrivals: [], latencies: [] };
          runs.set(name, run);
        }
        run.arrivals.push(arrived);
        const sent = (data as { sent?: number } | undefined)?.sent;
        if (typeof sent === "number") run.latencies.push(arrived - sent);
      } catch {
        other += 1;
      }
      return new Response(null, { status: 202 });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

// ---------------------------------------------------------------------------------------------
// The orchestrator.

interface Setup {
  dataDir: string;
  base: string;
  svc: Subprocess;
  key: string;
  adminAuth: string;
  token: string;
  sinkBase: string;
  sink: Subprocess;
}

async function setUp(): Promise<Setup> {
  const dataDir = tempDir("svc-bench-connector-");
  const { authorization: adminAuth, ingestToken } = await initOrg(dataDir);
  const { server } = await startSvcOnPort(dataDir, join(dataDir, "serve.log"), "warn", {
    SVC_LIMITS_POLL_PER_MINUTE: "1000000",
  });
  const { base, proc: svc } = server;
  const key = (await api(base, adminAuth, "POST", "/api/v1/api-keys", {
    name: "bench connector",
    scopes: ["events"],
    service: true,
  })) as { secret: string };

  const sink = spawnTracked([process.execPath, SELF, "--child", "sink"], {
    env: svcEnv(),
    stdout: "pipe",
    stderr: "inherit",
  });
  const sinkPort = await new Promise<number>((resolve, reject) => {
    void eachLine(sink.stdout as ReadableStream<Uint8Array>, (line) => {
      resolve((JSON.parse(line) as { port: number }).port);
    }).then(() => reject(new Error("the sink exited before listening")));
  });
  return {
    dataDir,
    base,
    svc,
    key: key.secret,
    adminAuth,
    token: ingestToken,
    sinkBase: `http://127.0.0.1:${sinkPort}`,
    sink,
  };
}

interface Connector {
  proc: Subprocess;
  health: string;
}

async function startConnector(s: Setup, filter: string, extra: string[] = []): Promise<Connector> {
  const healthPort = freePort();
  const concurrency = process.env.BENCH_CONCURRENCY;
  const proc = spawnTracked(
    [
      process.execPath,
      CLI,
      "connector",
      "--url",
      s.base,
      "--sink",
      `${s.sinkBase}/events`,
      "--filter",
      filter,
      "--health-listen",
      `127.0.0.1:${healthPort}`,
      "--state-file",
      join(s.dataDir, `connector-${healthPort}.state`),
      ...(concurrency ? ["--concurrency", concurrency] : []),
      ...extra,
    ],
    { env: svcEnv("warn", { SVC_API_KEY: s.key }), stdout: "inherit", stderr: "inherit" },
  );
  const health = `http://127.0.0.1:${healthPort}`;
  await poll("the connector ready", async () => {
    if (proc.exitCode !== null) throw new Error(`the connector exited with ${proc.exitCode}`);
    try {
      return (await fetch(`${health}/readyz`)).status === 200 ? true : undefined;
    } catch {
      return undefined;
    }
  });
  // Ready means the source config was read; give the first connection a moment to open.
  await Bun.sleep(300);
  return { proc, health };
}

async function sinkStats(s: Setup, run: string, full = false) {
  const response = await fetch(`${s.sinkBase}/stats?run=${run}${full ? "&full=1" : ""}`);
  return (await response.json()) as {
    count: number;
    other: number;
    arrivals?: number[];
    latencies?: number[];
  };
}

/** Ingests `n` events of `type` with POSTERS concurrent batch posters; returns the ingest rate. */
async function fireBatches(s: Setup, type: string, run: string, n: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const poster = async () => {
    for (;;) {
      const from = next;
      if (from >= n) return;
      next = Math.min(n, from + BATCH);
      const batch = [];
      for (let i = from; i < next; i++) {
        batch.push({
          specversion: "1.0",
          id: `${run}-${i}`,
          source: "/bench/connector",
          type,
          subject: `item-${i}`,
          datacontenttype: "application/json",
          data: { run, n: i, summary: "a benchmark event with a modest body", severity: "info" },
        });
      }
      const response = await fetch(`${s.base}/api/v1/cloudevents/ingest/${s.token}`, {
        method: "POST",
        headers: { "content-type": "application/cloudevents-batch+json" },
        body: JSON.stringify(batch),
      });
      if (response.status !== 202)
        throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: POSTERS }, poster));
  return n / ((performance.now() - started) / 1000);
}

async function waitDelivered(s: Setup, run: string, n: number, timeoutMs = 180_000): Promise<void> {
  await poll(
    `${n} events of run ${run} at the sink`,
    async () => ((await sinkStats(s, run)).count >= n ? true : undefined),
    100,
    timeoutMs,
  );
}

/** The delivery rate over the middle 80 % of arrivals. */
function middleRate(arrivals: number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  const lo = Math.floor(sorted.length * 0.1);
  const hi = Math.floor(sorted.length * 0.9);
  const span = ((sorted[hi] as number) - (sorted[lo] as number)) / 1000;
  return (hi - lo) / span;
}

interface RateResult {
  ingestRate: number;
  deliveredRate: number;
  wallSeconds: number;
  connectorCpuPer1k: number;
  duplicates: number;
}

async function throughput(s: Setup, label: string, run: string, n: number, extra: string[], backlog = false) {
  const type = `bench.${run}`;
  let connector: Connector | null = null;
  if (!backlog) connector = await startConnector(s, type, extra);
  const ingestRate = await fireBatches(s, type, run, n);
  if (backlog) connector = await startConnector(s, type, ["--start", "earliest", ...extra]);
  const c = connector as Connector;
  const cpuBefore = procCpuSeconds(c.proc.pid);
  const started = performance.now();
  await waitDelivered(s, run, n);
  const wallSeconds = (performance.now() - started) / 1000;
  const cpu = procCpuSeconds(c.proc.pid) - cpuBefore;
  await stopProcess(c.proc);
  const stats = await sinkStats(s, run, true);
  const result: RateResult = {
    ingestRate,
    deliveredRate: middleRate(stats.arrivals ?? []),
    wallSeconds,
    connectorCpuPer1k: (cpu / n) * 1000,
    duplicates: stats.count - n,
  };
  keyValues([
    ["events", num(n)],
    [
      "ingested into svc at",
      `${num(result.ingestRate)} events/s${backlog ? " (before the connector started)" : ""}`,
    ],
    ["delivered to the sink at", `${num(result.deliveredRate)} events/s (middle 80 % of arrivals)`],
    ["all delivered after", `${num(wallSeconds, 2)} s`],
    ["connector CPU", `${num(result.connectorCpuPer1k * 1000, 1)} ms per 1,000 events`],
    ["delivered twice", num(result.duplicates)],
  ]);
  void label;
  return result;
}

async function latency(s: Setup, rate: number, seconds: number) {
  const run = "lat";
  const type = "bench.lat";
  const connector = await startConnector(s, type);
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  let late = 0;
  for (let i = 0; i < total; i++) {
    const due = started + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    else if (wait < -50) late += 1;
    const body = JSON.stringify({
      specversion: "1.0",
      id: `lat-${i}`,
      source: "/bench/connector",
      type,
      datacontenttype: "application/json",
      data: { run, n: i, sent: wallMs() },
    });
    const p = fetch(`${s.base}/api/v1/cloudevents/ingest/${s.token}`, {
      method: "POST",
      headers: { "content-type": "application/cloudevents+json" },
      body,
    }).then(async (response) => {
      await response.arrayBuffer();
      if (response.status !== 202) throw new Error(`ingest answered ${response.status}`);
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  await Promise.all(inFlight);
  await waitDelivered(s, run, total, 60_000);
  await stopProcess(connector.proc);
  const stats = await sinkStats(s, run, true);
  const sorted = Float64Array.from(stats.latencies ?? []).sort();
  keyValues([
    ["events", `${num(total)} at ${num(rate)}/s for ${seconds} s (open loop; ${late} sent > 50 ms late)`],
    ["p50", ms(percentile(sorted, 50))],
    ["p90", ms(percentile(sorted, 90))],
    ["p99", ms(percentile(sorted, 99))],
    ["max", ms(sorted[sorted.length - 1] ?? Number.NaN)],
  ]);
  return { p99: percentile(sorted, 99), p50: percentile(sorted, 50) };
}

export async function runConnectorBench(): Promise<SummaryRow[]> {
  const events = envNumber("BENCH_EVENTS", 30_000);
  const seconds = envNumber("BENCH_SECONDS", 10);
  const rate = envNumber("BENCH_RATE", 500);
  heading("Connector: set-up");
  const s = await setUp();
  keyValues([
    ["cores", String(CORES)],
    ["load average", num(loadAverage(), 2)],
    ["svc", s.base],
    ["sink", s.sinkBase],
  ]);
  try {
    heading("Connector: stream mode, binary mode, events fired while streaming");
    const binary = await throughput(s, "binary", "bin", events, []);
    heading("Connector: stream mode, structured mode (information)");
    const structured = await throughput(s, "structured", "str", events, ["--structured"]);
    heading("Connector: backlog drain, binary mode (--start earliest over stored events)");
    const backlog = await throughput(s, "backlog", "bkl", events, [], true);
    heading(`Connector: end-to-end latency at ${rate} events/s (stream, binary)`);
    const lat = await latency(s, rate, seconds);
    heading("Connector: poll mode (source config mode=poll, interval 1 s), binary mode");
    await api(s.base, s.adminAuth, "PUT", "/api/v1/org/settings", {
      cloudevents: { source: { mode: "poll", poll_interval_seconds: 1 } },
    });
    const polled = await throughput(s, "poll", "pol", events, []);
    return [
      {
        name: "connector: stream, binary, events/s",
        target: `>= ${num(TARGET_RATE)}`,
        figure: num(binary.deliveredRate),
        pass: binary.deliveredRate >= TARGET_RATE,
      },
      {
        name: `connector: end-to-end p99 at ${rate}/s`,
        target: `< ${TARGET_P99_MS} ms`,
        figure: ms(lat.p99),
        pass: lat.p99 < TARGET_P99_MS,
      },
      {
        name: "connector: stream, structured, events/s",
        target: "-",
        figure: num(structured.deliveredRate),
        pass: null,
      },
      {
        name: "connector: backlog drain, events/s",
        target: "-",
        figure: num(backlog.deliveredRate),
        pass: null,
      },
      { name: "connector: poll mode, events/s", target: "-", figure: num(polled.deliveredRate), pass: null },
    ];
  } finally {
    await stopProcess(s.sink);
    await stopProcess(s.svc);
  }
}

if (import.meta.main) {
  const childIndex = process.argv.indexOf("--child");
  if (childIndex !== -1) {
    const role = process.argv[childIndex + 1];
    if (role === "sink") childSink();
    else throw new Error(`unknown child role ${role}`);
  } else {
    await runBenchmarkMain(runConnectorBench);
  }
}
