/**
 * CloudEvents benchmark (DESIGN §7), four parts against a fresh `svc serve` (parts 1 and 2 share
 * one; log level warn, durability full, the default):
 *
 * 1. Structured ingest: `POST /api/v1/cloudevents/ingest/{token}` with
 *    `Content-Type: application/cloudevents+json` and a 335-byte event, at 64 connections
 *    (autocannon in its own process, post-load.ts), a distinct event id per request
 *    (autocannon `requests[0].setupRequest`: every request stores a new row), against a bare
 *    `Bun.serve` (`--child bare-server`) that reads the body, JSON.parses it and answers 202.
 *    Then once more with one fixed body (every request but the first is a dedup hit:
 *    `INSERT OR IGNORE` changes nothing), for information.
 * 2. Batch ingest: 256 events per request (`application/cloudevents-batch+json`, distinct ids)
 *    from BENCH_CE_BATCH_CLIENTS concurrent connections (default 8), in events/s, against raw
 *    bun:sqlite inserting the same rows (the same INSERT OR IGNORE as `insertInbound`) into a
 *    table with the schema and indexes of svc's `events` after migration 0005 (and the orgs
 *    table its foreign key needs), 256 rows per transaction, with svc's writer pragmas (WAL,
 *    synchronous=FULL, foreign_keys=ON, cache_size -16000 …), in this process, with no server
 *    running.
 * 3. Ingest → SSE delivery: BENCH_CE_STREAMS (default 100) streams
 *    (`GET /api/v1/cloudevents/stream?from=now`, raw `node:net` sockets in this process, the
 *    stream cap raised with SVC_LIMITS_STREAMS_PER_ORG), while a sender (`--child sender`, its
 *    own process) ingests 10 events every 10 ms (1,000 events/s) for BENCH_SECONDS, as one
 *    batch of 10 per tick (BENCH_CE_SSE_MODE=single: ten structured requests per tick). Each
 *    event carries its send time (`performance.timeOrigin + performance.now()`, the same wall
 *    clock in both processes) and its number in `data`; latency is, per (event, stream), the
 *    time the socket read that held its frame returned minus the send time.
 * 4. Idle streams: BENCH_CE_IDLE_STREAMS (default 1,000) streams opened on a fresh server (raw
 *    sockets, 50 at a time), the server's VmRSS before and after.
 *
 *   bun scripts/bench/cloudevents.ts           run this part alone (BENCH_SECONDS, default 10)
 *   bun scripts/bench/cloudevents.ts --child …  internal: bare server, sender
 *
 * Environment: BENCH_SECONDS (default 10), BENCH_WARMUP_SECONDS (default 2, 0 for none),
 * BENCH_IDLE_MS (default 1000), BENCH_CE_BATCH_CLIENTS (8), BENCH_CE_STREAMS (100),
 * BENCH_CE_IDLE_STREAMS (1000), BENCH_CE_SSE_MODE (batch | single), BENCH_CE_PARTS (which parts,
 * default "1,2,3,4"). Exit code 0 even when a target is missed.
 */
import { Database as SqliteHandle } from "bun:sqlite";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { initOrg, startSvcOnPort } from "./foundation.ts";
import {
  CORES,
  eachLine,
  envNumber,
  heading,
  keyValues,
  loadAverage,
  mb,
  ms,
  num,
  percentile,
  procStatusMb,
  ratio,
  removeDir,
  runBenchmarkMain,
  type SummaryRow,
  spawnTracked,
  stopProcess,
  table,
  tempDir,
} from "./lib.ts";
import { type LoadResult, type PostLoadConfig, runChild, runPostLoad } from "./post-load.ts";

const SELF = import.meta.path;
const CONNECTIONS = 64;
const BATCH_EVENTS = 256;
const TICK_MS = 10;
const EVENTS_PER_TICK = 10;
const OPEN_CONCURRENCY = 50;

const TARGET_SINGLE_RATIO = 0.4;
const TARGET_BATCH_EPS = 150_000;
const TARGET_BATCH_RAW_RATIO = 0.3;
const TARGET_SSE_P99_MS = 25;
const TARGET_IDLE_RSS_MB = 150;

const STRUCTURED = "application/cloudevents+json";
const BATCH = "application/cloudevents-batch+json";

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
const wallMs = () => performance.timeOrigin + performance.now();

/** Stands for the event id in body templates: a body is `fragments.join(id)`. */
const ID = "\u0001";

/**
 * One event, attributes in svc's stored order (context attributes, then data), so the stored
 * body is byte for byte the one sent.
 */
function eventJson(id: string, data: string): string {
  return (
    `{"specversion":"1.0","id":"${id}","source":"/bench/checkout/eu-west-1",` +
    `"type":"com.example.checkout.latency.v1","datacontenttype":"application/json",` +
    `"subject":"checkout-7d9f","time":"2025-06-01T12:00:00.000Z","data":${data}}`
  );
}

const DATA = JSON.stringify({
  summary: "Checkout p99 latency above 2 s",
  host: "web-07",
  region: "eu-west-1",
  p99_ms: 2150,
  threshold_ms: 2000,
});

const SINGLE_TEMPLATE = eventJson(ID, DATA);
/** Event ids `<request id>-<i>`. */
const BATCH_TEMPLATE = `[${Array.from({ length: BATCH_EVENTS }, (_, i) => eventJson(`${ID}-${i}`, DATA)).join(",")}]`;

// ---------------------------------------------------------------------------------------------
// Child roles (run in their own processes).

/** The baseline: reads the body, parses the JSON and answers 202 `{"accepted":n}`. */
function childBareServer(): void {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    async fetch(request) {
      const value: unknown = JSON.parse(await request.text());
      const accepted = Array.isArray(value) ? value.length : 1;
      return new Response(`{"accepted":${accepted}}`, {
        status: 202,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

interface SenderConfig {
  url: string;
  mode: "batch" | "single";
  warmupTicks: number;
  ticks: number;
  runId: string;
}

interface SenderReport {
  event: "result";
  sent: number;
  requests: number;
  non202: number;
  acceptP50: number;
  acceptP99: number;
  lateTicks: number;
  seconds: number;
}

/** Padding that brings a latency event to ~300 bytes, like the others. */
const SSE_PAD = "x".repeat(48);

/**
 * The SSE part's sender: EVENTS_PER_TICK events every TICK_MS on a fixed schedule (open loop),
 * each with its send time and number in `data`; warm-up events are marked `"phase":"w"`.
 */
async function childSender(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_SENDER ?? "{}") as SenderConfig;
  const acceptMs: number[] = [];
  let non202 = 0;
  let requests = 0;
  let lateTicks = 0;
  const pending = new Set<Promise<void>>();
  const post = (contentType: string, body: string, measured: boolean) => {
    const began = performance.now();
    requests += measured ? 1 : 0;
    const done = fetch(config.url, { method: "POST", headers: { "content-type": contentType }, body })
      .then(async (response) => {
        await response.arrayBuffer();
        if (!measured) return;
        acceptMs.push(performance.now() - began);
        if (response.status !== 202) non202 += 1;
      })
      .catch(() => {
        if (measured) non202 += 1;
      })
      .finally(() => pending.delete(done));
    pending.add(done);
  };
  const run = async (phase: "w" | "m", ticks: number) => {
    const start = performance.now();
    let n = 0;
    for (let k = 0; k < ticks; k++) {
      const wait = start + k * TICK_MS - performance.now();
      if (wait > 1) await Bun.sleep(wait);
      else if (wait < -TICK_MS) lateTicks += phase === "m" ? 1 : 0;
      const sentAt = wallMs().toFixed(3);
      const events: string[] = [];
      for (let i = 0; i < EVENTS_PER_TICK; i++, n++) {
        const data = `{"sent_ms":${sentAt},"n":${n},"phase":"${phase}","pad":"${SSE_PAD}"}`;
        events.push(eventJson(`sse-${config.runId}-${phase}-${n}`, data));
      }
      if (config.mode === "batch") post(BATCH, `[${events.join(",")}]`, phase === "m");
      else for (const event of events) post(STRUCTURED, event, phase === "m");
    }
  };
  if (config.warmupTicks > 0) {
    await run("w", config.warmupTicks);
    await Promise.all(pending);
    await Bun.sleep(300);
  }
  console.log(JSON.stringify({ event: "start" }));
  const started = performance.now();
  await run("m", config.ticks);
  await Promise.all(pending);
  acceptMs.sort((a, b) => a - b);
  const report: SenderReport = {
    event: "result",
    sent: config.ticks * EVENTS_PER_TICK,
    requests,
    non202,
    acceptP50: percentile(acceptMs, 50),
    acceptP99: percentile(acceptMs, 99),
    lateTicks,
    seconds: (performance.now() - started) / 1000,
  };
  console.log(JSON.stringify(report));
}

// ---------------------------------------------------------------------------------------------
// Processes.

interface Server {
  label: string;
  proc: Subprocess;
  base: string;
  port: number;
}

/** `svc serve` at log level warn with `env` added, and the port streams connect to. */
async function startSvc(dataDir: string, logFile: string, env: Record<string, string>): Promise<Server> {
  const { server } = await startSvcOnPort(dataDir, logFile, "warn", env);
  return {
    label: server.label,
    proc: server.proc,
    base: server.base,
    port: Number(new URL(server.base).port),
  };
}

/** A child of this file that prints `{ port }` once listening. */
async function startBare(): Promise<Server> {
  const proc = spawnTracked([process.execPath, SELF, "--child", "bare-server"], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const port = await new Promise<number>((resolve, reject) => {
    void eachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
      resolve((JSON.parse(line) as { port: number }).port);
    }).then(() => reject(new Error("the bare server exited before listening")));
  });
  return { label: "bare Bun.serve (JSON.parse, 202)", proc, base: `http://127.0.0.1:${port}`, port };
}

/** The shared POST load against `server` at `path`; the fixed body has the id "fixed". */
function postLoad(
  label: string,
  server: Server,
  path: string,
  options: Omit<PostLoadConfig, "url" | "fixedId">,
): Promise<LoadResult> {
  return runPostLoad(label, server.proc.pid, { url: `${server.base}${path}`, fixedId: "fixed", ...options });
}

/** The `svc_store_commits` counter from /metrics. */
async function storeCommits(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("svc_store_commits"));
  return Number(line?.split(" ").pop() ?? Number.NaN);
}

// ---------------------------------------------------------------------------------------------
// SSE clients on raw sockets: one HTTP/1.1 request each, the response read as latin1 text.

interface StreamClient {
  socket: Socket;
  /** Settles when ": stream open" arrived (or the stream was refused). */
  opened: Promise<void>;
  closed: boolean;
}

/**
 * Opens `GET path` on a raw socket; `onText` gets complete lines of the response body (chunked
 * framing included, which never splits an SSE frame: svc enqueues whole frames) with the wall
 * time the socket read returned.
 */
function openStream(
  port: number,
  path: string,
  authorization: string,
  onText?: (text: string, receivedAt: number) => void,
): StreamClient {
  const socket = connect({ host: "127.0.0.1", port });
  socket.setNoDelay(true);
  const client: StreamClient = { socket, opened: Promise.resolve(), closed: false };
  client.opened = new Promise<void>((resolve, reject) => {
    let head = true;
    let open = false;
    let buffered = "";
    socket.on("connect", () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${authorization}\r\n` +
          "Accept: text/event-stream\r\n\r\n",
      );
    });
    socket.on("data", (chunk: Buffer) => {
      const receivedAt = wallMs();
      buffered += chunk.toString("latin1");
      if (head) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const status = Number(buffered.slice(9, 12));
        if (status !== 200) {
          reject(new Error(`GET ${path} answered ${status}: ${buffered.slice(end + 4, end + 400)}`));
          socket.destroy();
          return;
        }
        head = false;
        buffered = buffered.slice(end + 4);
      }
      if (!open && buffered.includes(": stream open")) {
        open = true;
        resolve();
      }
      const last = buffered.lastIndexOf("\n");
      if (last < 0) return;
      onText?.(buffered.slice(0, last + 1), receivedAt);
      buffered = buffered.slice(last + 1);
    });
    socket.on("error", (error) => {
      client.closed = true;
      reject(error);
    });
    socket.on("close", () => {
      client.closed = true;
      reject(new Error("the stream closed before it opened"));
    });
  });
  return client;
}

/** Opens `count` streams, `OPEN_CONCURRENCY` at a time; resolves when every one is open. */
async function openStreams(
  count: number,
  open: (i: number) => StreamClient,
): Promise<{ clients: StreamClient[]; seconds: number }> {
  const clients: StreamClient[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i += OPEN_CONCURRENCY) {
    const wave: StreamClient[] = [];
    for (let j = i; j < Math.min(count, i + OPEN_CONCURRENCY); j++) wave.push(open(j));
    clients.push(...wave);
    await Promise.all(wave.map((c) => c.opened));
  }
  return { clients, seconds: (performance.now() - started) / 1000 };
}

function closeAll(clients: StreamClient[]): void {
  for (const client of clients) client.socket.destroy();
}

// ---------------------------------------------------------------------------------------------
// Part 2's baseline: raw bun:sqlite.

/** `events` as migrations 0003 + 0005 leave it, and the `orgs` row its foreign key needs. */
const EVENTS_SCHEMA = [
  "CREATE TABLE orgs (id TEXT PRIMARY KEY)",
  `CREATE TABLE events (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     org_id TEXT NOT NULL REFERENCES orgs(id),
     id TEXT NOT NULL,
     source TEXT NOT NULL,
     type TEXT NOT NULL,
     subject TEXT,
     time INTEGER NOT NULL,
     body TEXT NOT NULL,
     channel_id TEXT,
     created_at INTEGER NOT NULL
   )`,
  "CREATE INDEX events_org_seq ON events (org_id, seq)",
  "CREATE UNIQUE INDEX events_org_id_source ON events (org_id, id, source)",
];

interface RawRate {
  rows: number;
  commits: number;
  seconds: number;
  rate: number;
  commitP50: number;
  commitP99: number;
}

/**
 * Inserts batches of 256 events (svc's INSERT OR IGNORE, ids `<batch>-<i>` like part 2) for
 * `seconds` after `warmupSeconds`, one transaction per batch, with svc's writer pragmas.
 */
function rawInsertRate(file: string, seconds: number, warmupSeconds: number): RawRate {
  const db = new SqliteHandle(file, { create: true, strict: true });
  // As src/db/store.ts openHandle() sets up the writer.
  db.run("PRAGMA busy_timeout = 5000");
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA foreign_keys = ON");
  db.run("PRAGMA secure_delete = ON");
  db.run("PRAGMA temp_store = MEMORY");
  db.run("PRAGMA cache_size = -16000");
  for (const sql of EVENTS_SCHEMA) db.run(sql);
  db.run("INSERT INTO orgs (id) VALUES ('org_bench')");
  const insert = db.prepare(
    `INSERT OR IGNORE INTO events (org_id, id, source, type, subject, time, body, channel_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
  );
  const [before, after] = SINGLE_TEMPLATE.split(ID) as [string, string];
  let batch = 0;
  const oneBatch = (prefix: string) => {
    const now = Date.now();
    db.run("BEGIN IMMEDIATE");
    for (let i = 0; i < BATCH_EVENTS; i++) {
      const id = `${prefix}${batch}-${i}`;
      insert.run(
        "org_bench",
        id,
        "/bench/checkout/eu-west-1",
        "com.example.checkout.latency.v1",
        "checkout-7d9f",
        now,
        before + id + after,
        now,
      );
    }
    db.run("COMMIT");
    batch += 1;
  };
  const warmEnd = performance.now() + warmupSeconds * 1000;
  while (performance.now() < warmEnd) oneBatch("rw");
  const commitTimes: number[] = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  let commits = 0;
  for (let t = started; t < end; commits++) {
    oneBatch("r");
    const now = performance.now();
    commitTimes.push(now - t);
    t = now;
  }
  const elapsed = (performance.now() - started) / 1000;
  db.close();
  commitTimes.sort((a, b) => a - b);
  return {
    rows: commits * BATCH_EVENTS,
    commits,
    seconds: elapsed,
    rate: (commits * BATCH_EVENTS) / elapsed,
    commitP50: percentile(commitTimes, 50),
    commitP99: percentile(commitTimes, 99),
  };
}

// ---------------------------------------------------------------------------------------------
// Part 3: ingest → SSE latency.

interface SseFigures {
  streams: number;
  expected: number;
  delivered: number;
  duplicates: number;
  closedStreams: number;
  latencies: Float64Array;
  sender: SenderReport;
  svcCores: number;
  clientCores: number;
  /** Cores busy on the machine besides svc and this process (the sender, other work). */
  otherCores: number;
  commitsPerSecond: number;
  openSeconds: number;
}

const MEASURED = /"sent_ms":(\d+(?:\.\d+)?),"n":(\d+),"phase":"m"/g;

async function measureSse(
  svc: Server,
  authorization: string,
  token: string,
  streams: number,
  seconds: number,
  warmupSeconds: number,
  mode: "batch" | "single",
): Promise<SseFigures> {
  const ticks = Math.round((seconds * 1000) / TICK_MS);
  const expectedPerStream = ticks * EVENTS_PER_TICK;
  const latencies = new Float64Array(expectedPerStream * streams);
  let delivered = 0;
  let duplicates = 0;
  const seen = Array.from({ length: streams }, () => new Uint8Array(expectedPerStream));
  const { clients, seconds: openSeconds } = await openStreams(streams, (i) => {
    const mine = seen[i] as Uint8Array;
    return openStream(svc.port, "/api/v1/cloudevents/stream?from=now", authorization, (text, receivedAt) => {
      MEASURED.lastIndex = 0;
      for (let m = MEASURED.exec(text); m !== null; m = MEASURED.exec(text)) {
        const n = Number(m[2]);
        if (mine[n]) {
          duplicates += 1;
          continue;
        }
        mine[n] = 1;
        latencies[delivered++] = receivedAt - Number(m[1]);
      }
    });
  });

  const clientCpuBefore = process.cpuUsage();
  const commitsBefore = await storeCommits(svc.base);
  const started = performance.now();
  const config: SenderConfig = {
    url: `${svc.base}/api/v1/cloudevents/ingest/${token}`,
    mode,
    warmupTicks: Math.round((warmupSeconds * 1000) / TICK_MS),
    ticks,
    runId: Date.now().toString(36),
  };
  const {
    report: sender,
    serverCpuSeconds,
    machineBusy,
  } = await runChild<SenderReport>(
    [process.execPath, SELF, "--child", "sender"],
    "BENCH_SENDER",
    config,
    svc.proc.pid,
  );
  const expected = sender.sent * streams;
  // Wait until every frame arrived, or nothing more arrives for a second.
  let last = -1;
  let still = 0;
  while (delivered < expected && still < 10) {
    await Bun.sleep(100);
    still = delivered === last ? still + 1 : 0;
    last = delivered;
  }
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(clientCpuBefore);
  const svcCores = serverCpuSeconds / sender.seconds;
  const clientCores = (cpu.user + cpu.system) / 1e6 / elapsed;
  const commits = (await storeCommits(svc.base)) - commitsBefore;
  const closedStreams = clients.filter((c) => c.closed).length;
  closeAll(clients);
  return {
    streams,
    expected,
    delivered,
    duplicates,
    closedStreams,
    latencies: latencies.subarray(0, delivered).sort(),
    sender,
    svcCores,
    clientCores,
    otherCores: Math.max(0, machineBusy * CORES - svcCores - clientCores),
    commitsPerSecond: commits / elapsed,
    openSeconds,
  };
}

// ---------------------------------------------------------------------------------------------

interface Row {
  name: string;
  figure: string;
  baseline: string;
  ratio: string;
  target: string;
  pass: boolean | null;
}

interface Settings {
  root: string;
  seconds: number;
  warmup: number;
  idleMs: number;
  batchClients: number;
  sseStreams: number;
  idleStreams: number;
  sseMode: "batch" | "single";
}

const LOAD_HEADER = [
  "server",
  "req/s",
  "events/s",
  "p50",
  "p99",
  "max",
  "cores srv/load/other",
  "srv CPU/req",
  "errors",
];

/** Cores used in the window by the server, the load generator and everything else on the machine. */
function coresCell(run: LoadResult): string {
  const server = run.serverCpuSeconds / run.report.seconds;
  const load = run.report.cpuSeconds / run.report.seconds;
  const other = Math.max(0, run.machineBusy * CORES - server - load);
  return `${num(server, 2)} / ${num(load, 2)} / ${num(other, 2)}`;
}

function loadRow(run: LoadResult, eventsPerRequest: number): string[] {
  return [
    run.label,
    num(run.rps),
    num(run.rps * eventsPerRequest),
    ms(run.report.latency.p50),
    ms(run.report.latency.p99),
    ms(run.report.latency.max),
    coresCell(run),
    `${num((run.serverCpuSeconds / Math.max(1, run.report.responses)) * 1e6, 1)} µs`,
    num(run.report.responses - run.ok + run.report.errors),
  ];
}

/** Parts 1 and 2 share one server (part 2's raw baseline runs after it stopped). */
async function ingestParts(s: Settings, parts: Set<number>): Promise<Row[]> {
  const rows: Row[] = [];
  const dataDir = join(s.root, "ingest");
  const { ingestToken: token } = await initOrg(dataDir);
  const svc = await startSvc(dataDir, join(s.root, "ingest.log"), {});
  const ingestPath = `/api/v1/cloudevents/ingest/${token}`;
  const probe = await fetch(`${svc.base}${ingestPath}`, {
    method: "POST",
    headers: { "content-type": STRUCTURED },
    body: SINGLE_TEMPLATE.replace(ID, "probe"),
  });
  const answer = await probe.text();
  if (probe.status !== 202) throw new Error(`ingest answered ${probe.status}: ${answer}`);

  if (parts.has(1)) {
    heading(`1. Structured ingest, ${CONNECTIONS} connections, ${s.seconds} s each`);
    const single = {
      contentType: STRUCTURED,
      fragments: SINGLE_TEMPLATE.split(ID),
      connections: CONNECTIONS,
      seconds: s.seconds,
      warmupSeconds: s.warmup,
    };
    const bare = await startBare();
    console.log(`  loading ${bare.label} …`);
    const bareRun = await postLoad(bare.label, bare, ingestPath, { ...single, prefix: "bare" });
    await stopProcess(bare.proc);
    console.log("  loading svc, a distinct id per request (every request stores a row) …");
    const commitsBefore = await storeCommits(svc.base);
    const uniqueRun = await postLoad("svc, distinct ids", svc, ingestPath, { ...single, prefix: "s" });
    const uniqueCommits = (await storeCommits(svc.base)) - commitsBefore;
    console.log("  loading svc, one fixed body (dedup hits) …");
    const dedupRun = await postLoad("svc, one fixed id (dedup)", svc, ingestPath, {
      ...single,
      prefix: null,
    });
    table(LOAD_HEADER, [loadRow(bareRun, 1), loadRow(uniqueRun, 1), loadRow(dedupRun, 1)]);
    const uniqueRatio = uniqueRun.rps / bareRun.rps;
    const dedupRatio = dedupRun.rps / bareRun.rps;
    console.log("");
    keyValues([
      ["svc answer", `202 ${answer}`],
      [
        "distinct ids: requests per commit",
        `${num(uniqueRun.report.responses / Math.max(1, uniqueCommits), 1)} (${num(uniqueCommits)} commits, warm-up included)`,
      ],
      ["ratio distinct ids / bare", `${ratio(uniqueRatio)} (target ≥ ${TARGET_SINGLE_RATIO})`],
      ["ratio one fixed id / bare", `${ratio(dedupRatio)} (dedup path, information)`],
    ]);
    rows.push(
      {
        name: "structured ingest, distinct ids @64",
        figure: `${num(uniqueRun.rps)} req/s`,
        baseline: `bare ${num(bareRun.rps)} req/s`,
        ratio: ratio(uniqueRatio),
        target: `≥ ${TARGET_SINGLE_RATIO}x bare`,
        pass: uniqueRatio >= TARGET_SINGLE_RATIO,
      },
      {
        name: "structured ingest, fixed id (dedup) @64",
        figure: `${num(dedupRun.rps)} req/s`,
        baseline: `bare ${num(bareRun.rps)} req/s`,
        ratio: ratio(dedupRatio),
        target: "-",
        pass: null,
      },
    );
  }

  if (!parts.has(2)) {
    await stopProcess(svc.proc);
    return rows;
  }
  heading(`2. Batch ingest, ${BATCH_EVENTS} events/request, ${s.batchClients} connections, ${s.seconds} s`);
  console.log("  loading svc …");
  const commitsBefore = await storeCommits(svc.base);
  const batchRun = await postLoad("svc, batches of 256", svc, ingestPath, {
    contentType: BATCH,
    fragments: BATCH_TEMPLATE.split(ID),
    prefix: "b",
    connections: s.batchClients,
    seconds: s.seconds,
    warmupSeconds: s.warmup,
  });
  const batchCommits = (await storeCommits(svc.base)) - commitsBefore;
  const svcPeakRss = procStatusMb(svc.proc.pid, "VmHWM");
  await stopProcess(svc.proc);
  console.log("  raw bun:sqlite insert loop (no server running) …");
  const raw = rawInsertRate(join(s.root, "raw.db"), s.seconds, Math.min(s.warmup, 1));
  const batchEps = batchRun.rps * BATCH_EVENTS;
  const rawRatio = batchEps / raw.rate;
  table(LOAD_HEADER, [loadRow(batchRun, BATCH_EVENTS)]);
  console.log("");
  keyValues([
    [
      "svc commits",
      `${num(batchCommits)} (warm-up included): ${num((batchRun.report.responses * BATCH_EVENTS) / Math.max(1, batchCommits))} events per commit`,
    ],
    ["svc peak RSS (VmHWM)", mb(svcPeakRss)],
    [
      "raw bun:sqlite",
      `${num(raw.rate)} rows/s (${num(raw.rows)} rows, ${num(raw.commits)} transactions of ${BATCH_EVENTS} in ${num(raw.seconds, 1)} s; per transaction p50 ${ms(raw.commitP50)}, p99 ${ms(raw.commitP99)})`,
    ],
    ["ratio svc / raw", `${ratio(rawRatio)} (target ≥ ${TARGET_BATCH_RAW_RATIO})`],
  ]);
  rows.push(
    {
      name: `batch ingest (256/request, ${s.batchClients} clients)`,
      figure: `${num(batchEps)} events/s`,
      baseline: `${num(TARGET_BATCH_EPS)} events/s`,
      ratio: ratio(batchEps / TARGET_BATCH_EPS),
      target: `≥ ${num(TARGET_BATCH_EPS)} events/s`,
      pass: batchEps >= TARGET_BATCH_EPS,
    },
    {
      name: "batch ingest vs raw bun:sqlite insert",
      figure: `${num(batchEps)} events/s`,
      baseline: `raw ${num(raw.rate)} rows/s`,
      ratio: ratio(rawRatio),
      target: `≥ ${TARGET_BATCH_RAW_RATIO}x raw`,
      pass: rawRatio >= TARGET_BATCH_RAW_RATIO,
    },
  );
  return rows;
}

/** Part 3: a fresh server, the stream cap raised. */
async function ssePart(s: Settings): Promise<Row[]> {
  heading(
    `3. Ingest → SSE, ${s.sseStreams} streams, ${EVENTS_PER_TICK} events every ${TICK_MS} ms (${s.sseMode}), ${s.seconds} s`,
  );
  const dataDir = join(s.root, "sse");
  const { authorization, ingestToken: token } = await initOrg(dataDir);
  const svc = await startSvc(dataDir, join(s.root, "sse.log"), {
    SVC_LIMITS_STREAMS_PER_ORG: String(Math.max(200, s.sseStreams * 2)),
  });
  console.log("  running …");
  const sse = await measureSse(svc, authorization, token, s.sseStreams, s.seconds, s.warmup, s.sseMode);
  await stopProcess(svc.proc);
  const p50 = percentile(sse.latencies, 50);
  const p99 = percentile(sse.latencies, 99);
  table(
    ["measure", "n", "p50", "p90", "p99", "p99.9", "max"],
    [
      [
        "send → frame received (per event × stream)",
        num(sse.delivered),
        ms(p50),
        ms(percentile(sse.latencies, 90)),
        ms(p99),
        ms(percentile(sse.latencies, 99.9)),
        ms(percentile(sse.latencies, 100)),
      ],
      [
        "send → 202 (per ingest request)",
        num(sse.sender.requests),
        ms(sse.sender.acceptP50),
        "",
        ms(sse.sender.acceptP99),
        "",
        "",
      ],
    ],
  );
  console.log("");
  keyValues([
    ["streams opened", `${num(sse.streams)} in ${num(sse.openSeconds, 2)} s`],
    [
      "delivered / expected",
      `${num(sse.delivered)} / ${num(sse.expected)} (${num(sse.sender.sent)} events × ${sse.streams} streams; ${num(sse.duplicates)} duplicates, ${sse.closedStreams} streams closed)`,
    ],
    ["ingest requests / non-202", `${num(sse.sender.requests)} / ${num(sse.sender.non202)}`],
    ["sender ticks more than 10 ms late", num(sse.sender.lateTicks)],
    ["svc CPU", `${num(sse.svcCores, 2)} cores; ${num(sse.commitsPerSecond)} commits/s`],
    [`client CPU (this process, ${sse.streams} sockets)`, `${num(sse.clientCores, 2)} cores`],
    ["other CPU (sender + rest of the machine)", `${num(sse.otherCores, 2)} cores`],
  ]);
  return [
    {
      name: `ingest → SSE p50 / p99 (${s.sseStreams} streams, 1k ev/s)`,
      figure: `${ms(p50)} / ${ms(p99)}`,
      baseline: `${num(sse.delivered)} / ${num(sse.expected)} delivered`,
      ratio: `${ratio(p99 / TARGET_SSE_P99_MS)} of target`,
      target: `p99 < ${TARGET_SSE_P99_MS} ms, all delivered`,
      pass: sse.delivered === sse.expected && p99 < TARGET_SSE_P99_MS,
    },
  ];
}

/** Part 4: idle streams on a fresh server. */
async function idlePart(s: Settings): Promise<Row[]> {
  heading(`4. ${num(s.idleStreams)} idle SSE streams: server RSS`);
  const dataDir = join(s.root, "idle");
  const authorization = (await initOrg(dataDir)).authorization;
  const svc = await startSvc(dataDir, join(s.root, "idle.log"), {
    SVC_LIMITS_STREAMS_PER_ORG: String(s.idleStreams + 100),
  });
  const path = "/api/v1/cloudevents/stream?from=now";
  // One stream opened and closed first, so the code paths are loaded before the baseline.
  const first = openStream(svc.port, path, authorization);
  await first.opened;
  first.socket.destroy();
  await Bun.sleep(s.idleMs);
  const rssBefore = procStatusMb(svc.proc.pid);
  const idle = await openStreams(s.idleStreams, () => openStream(svc.port, path, authorization));
  await Bun.sleep(s.idleMs);
  const rssAfter = procStatusMb(svc.proc.pid);
  const hwm = procStatusMb(svc.proc.pid, "VmHWM");
  const stillOpen = idle.clients.filter((c) => !c.closed).length;
  closeAll(idle.clients);
  await stopProcess(svc.proc);
  const perStreamKb = ((rssAfter - rssBefore) * 1024) / s.idleStreams;
  keyValues([
    ["opened", `${num(s.idleStreams)} streams in ${num(idle.seconds, 2)} s (${OPEN_CONCURRENCY} at a time)`],
    ["svc VmRSS before", mb(rssBefore)],
    [`svc VmRSS after (${s.idleMs} ms later)`, `${mb(rssAfter)} (+${num(perStreamKb, 1)} KB per stream)`],
    ["svc VmHWM", mb(hwm)],
    ["still open at the reading", num(stillOpen)],
  ]);
  return [
    {
      name: `svc RSS with ${num(s.idleStreams)} idle streams`,
      figure: mb(rssAfter),
      baseline: `before ${mb(rssBefore)}`,
      ratio: `${ratio(rssAfter / TARGET_IDLE_RSS_MB)} of target`,
      target: `< ${TARGET_IDLE_RSS_MB} MB`,
      pass: stillOpen === s.idleStreams && rssAfter < TARGET_IDLE_RSS_MB,
    },
  ];
}

export async function runCloudEventsBench(): Promise<SummaryRow[]> {
  const parts = new Set((process.env.BENCH_CE_PARTS ?? "1,2,3,4").split(",").map((p) => Number(p.trim())));
  const settings: Omit<Settings, "root"> = {
    seconds: envNumber("BENCH_SECONDS", 10),
    warmup: process.env.BENCH_WARMUP_SECONDS === "0" ? 0 : envNumber("BENCH_WARMUP_SECONDS", 2),
    idleMs: envNumber("BENCH_IDLE_MS", 1000),
    batchClients: envNumber("BENCH_CE_BATCH_CLIENTS", 8),
    sseStreams: envNumber("BENCH_CE_STREAMS", 100),
    idleStreams: envNumber("BENCH_CE_IDLE_STREAMS", 1000),
    sseMode: process.env.BENCH_CE_SSE_MODE === "single" ? "single" : "batch",
  };

  heading("CloudEvents: ingest throughput, raw insert baseline, SSE latency, idle streams");
  keyValues([
    [
      "machine",
      `${CORES} cores, Bun ${Bun.version}, ${process.platform}/${process.arch}, load average ${num(loadAverage(), 2)}`,
    ],
    ["duration", `${settings.seconds} s measured (BENCH_SECONDS) + ${settings.warmup} s warm-up per run`],
    ["svc", "svc serve, log level warn, durability full (the default), a fresh data dir per part"],
    [
      "event",
      `${Buffer.byteLength(SINGLE_TEMPLATE.replace(ID, "s-123456"))} B structured; batch of ${BATCH_EVENTS}: ${num(Buffer.byteLength(BATCH_TEMPLATE) / 1024, 1)} KB`,
    ],
  ]);

  const rows: Row[] = [];
  const root = tempDir("svc-bench-cloudevents-");
  try {
    const s: Settings = { ...settings, root };
    if (parts.has(1) || parts.has(2)) rows.push(...(await ingestParts(s, parts)));
    if (parts.has(3)) rows.push(...(await ssePart(s)));
    if (parts.has(4)) rows.push(...(await idlePart(s)));
  } finally {
    removeDir(root);
  }
  heading("CloudEvents figures");
  table(
    ["measure", "figure", "baseline", "ratio", "target", "result"],
    rows.map((r) => [
      r.name,
      r.figure,
      r.baseline,
      r.ratio,
      r.target,
      r.pass === null ? "info" : r.pass ? "PASS" : "MISS",
    ]),
  );
  return rows.map((r) => ({
    name: `CloudEvents ${r.name}`,
    target: r.target,
    figure: `${r.figure} (${r.ratio})`,
    pass: r.pass,
  }));
}

if (import.meta.main) {
  const role = process.argv[2] === "--child" ? process.argv[3] : undefined;
  if (role === "sender") {
    await childSender();
    process.exit(0);
  } else if (role === "bare-server") childBareServer();
  else if (role !== undefined) throw new Error(`unknown child role ${role}`);
  else {
    await runBenchmarkMain(runCloudEventsBench);
  }
}
