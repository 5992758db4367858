/**
 * HTTP foundation benchmark: a bare `Bun.serve` answering a fixed JSON body and a real
 * `svc serve` answering an authenticated `GET /api/v1/org`, both loaded by the same client
 * (autocannon, run in its own process) at 64 connections. Also measures spawn → `/readyz` 200
 * and the server's RSS.
 *
 *   bun scripts/bench/foundation.ts            run this part alone (BENCH_SECONDS, default 10)
 *   bun scripts/bench/foundation.ts --child …  internal: the bare server and the load generator
 */
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Subprocess } from "bun";
import {
  CLI,
  CORES,
  eachLine,
  envNumber,
  freePort,
  heading,
  keyValues,
  loadAverage,
  machineCpu,
  mb,
  median,
  ms,
  num,
  percentile,
  poll,
  procCpuSeconds,
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

const SELF = import.meta.path;
const CONNECTIONS = 64;
const READY_RUNS = 5;
const READY_POLL_MS = 5;

const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 5;
const TARGET_READY_MS = 300;
const TARGET_IDLE_RSS_MB = 80;

// ---------------------------------------------------------------------------------------------
// Child roles (run in their own processes).

interface LoadConfig {
  url: string;
  authorization: string;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

/** What the load generator reports for the measured window. */
interface LoadReport {
  event: "result";
  seconds: number;
  responses: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  latency: { mean: number; p50: number; p90: number; p99: number; p999: number; max: number };
  cpuSeconds: number;
}

type AutocannonInstance = PromiseLike<{ errors: number; timeouts: number }> & {
  on(event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
};
type Autocannon = (options: Record<string, unknown>) => AutocannonInstance;

/** The load generator: an optional warm-up, then one measured autocannon run. */
async function childLoadgen(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_LOAD ?? "{}") as LoadConfig;
  const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;
  const options = {
    url: config.url,
    connections: config.connections,
    pipelining: 1,
    headers: { authorization: config.authorization },
  };
  if (config.warmupSeconds > 0) await autocannon({ ...options, duration: config.warmupSeconds });

  let latencies = new Float64Array(1 << 20);
  let count = 0;
  const statuses: Record<string, number> = {};
  console.log(JSON.stringify({ event: "start" }));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const instance = autocannon({ ...options, duration: config.seconds });
  instance.on("response", (_client, status, _bytes, elapsedMs) => {
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = elapsedMs;
    statuses[status] = (statuses[status] ?? 0) + 1;
  });
  const result = await instance;
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const sorted = latencies.subarray(0, count).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  const report: LoadReport = {
    event: "result",
    seconds,
    responses: count,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    latency: {
      mean: sum / Math.max(1, count),
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      p999: percentile(sorted, 99.9),
      max: percentile(sorted, 100),
    },
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
  console.log(JSON.stringify(report));
}

/** The baseline: `Bun.serve` answering the same JSON body svc answers, with nothing else. */
function childBareServer(): void {
  const body = process.env.BENCH_BODY ?? "{}";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    fetch: () => new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }),
  });
  console.log(JSON.stringify({ port: server.port }));
}

// ---------------------------------------------------------------------------------------------
// The orchestrator side.

export interface Server {
  label: string;
  proc: Subprocess;
  base: string;
  /** svc only: where its stdout (the log) goes. */
  logFile?: string;
}

export interface LoadRun {
  label: string;
  report: LoadReport;
  rps: number;
  ok: number;
  non2xx: number;
  serverCpuSeconds: number;
  /** Fraction of all cores busy during the measured window (server + load generator + rest). */
  machineBusy: number;
  /** The 1-minute load average just before the run. */
  loadBefore: number;
  logBytes: number;
}

/** The environment for `svc` children: no inherited SVC_* or K_* settings, JSON logs, optional level. */
export function svcEnv(level?: "warn", extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("SVC_") && !key.startsWith("K_")) env[key] = value;
  }
  env.SVC_LOG_FORMAT = "json";
  if (level) env.SVC_LOG_LEVEL = level;
  return { ...env, ...extra };
}

export async function runCli(args: string[]): Promise<string> {
  const proc = spawnTracked([process.execPath, CLI, ...args], {
    env: svcEnv(),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout as ReadableStream).text(),
    new Response(proc.stderr as ReadableStream).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`svc ${args.join(" ")} failed (${code}): ${stderr}`);
  return stdout;
}

/** `svc admin init` for the org "acme": the owner's API key as a header value and the ingest token. */
export async function initOrg(dataDir: string): Promise<{ authorization: string; ingestToken: string }> {
  const init = JSON.parse(
    await runCli([
      "admin",
      "init",
      "--json",
      "--data-dir",
      dataDir,
      "--org-name",
      "Acme Corporation",
      "--org-slug",
      "acme",
      "--owner-email",
      "owner@acme.test",
    ]),
  ) as { api_key: { secret: string }; ingest_token: { token: string } };
  return { authorization: `Bearer ${init.api_key.secret}`, ingestToken: init.ingest_token.token };
}

async function readyStatus(base: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return undefined;
  }
}

function servingLine(logFile: string): { listen: string; startup_ms: number } | undefined {
  let text = "";
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    return undefined;
  }
  const line = text.split("\n").find((l) => l.includes('"svc is serving"'));
  return line ? (JSON.parse(line) as { listen: string; startup_ms: number }) : undefined;
}

/**
 * Spawns `svc serve` and measures spawn → `/readyz` 200, polling every 5 ms. The port is picked
 * beforehand so polling can start at once (and because at warn level the "svc is serving" line,
 * which carries the address, is not logged).
 */
export async function startSvcOnPort(
  dataDir: string,
  logFile: string,
  level: "warn" | undefined,
  extraEnv: Record<string, string> = {},
): Promise<{ server: Server; readyMs: number }> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const proc = spawnTracked(
    [process.execPath, CLI, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`],
    { env: svcEnv(level, extraEnv), stdout: Bun.file(logFile), stderr: "inherit" },
  );
  await poll(
    "/readyz to answer 200",
    async () => {
      if (proc.exitCode !== null) throw new Error(`svc serve exited with ${proc.exitCode}`);
      return (await readyStatus(base)) === 200 ? true : undefined;
    },
    READY_POLL_MS,
  );
  const readyMs = performance.now() - started;
  return { server: { label: `svc serve (${level ?? "info"})`, proc, base, logFile }, readyMs };
}

/** Spawns `svc serve --listen 127.0.0.1:0` and reads the address from its "svc is serving" line. */
async function startSvcFromLogLine(dataDir: string, logFile: string): Promise<Server> {
  const proc = spawnTracked(
    [process.execPath, CLI, "serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0"],
    { env: svcEnv(), stdout: Bun.file(logFile), stderr: "inherit" },
  );
  const line = await poll("the 'svc is serving' log line", () => {
    if (proc.exitCode !== null) throw new Error(`svc serve exited with ${proc.exitCode}`);
    return servingLine(logFile);
  });
  const base = `http://${line.listen}`;
  await poll("/readyz to answer 200", async () => ((await readyStatus(base)) === 200 ? true : undefined));
  return { label: "svc serve (info)", proc, base, logFile };
}

export async function startBare(body: string): Promise<Server> {
  const proc = spawnTracked([process.execPath, SELF, "--child", "bare-server"], {
    env: { ...process.env, BENCH_BODY: body },
    stdout: "pipe",
    stderr: "inherit",
  });
  const port = await new Promise<number>((resolve, reject) => {
    void eachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
      resolve((JSON.parse(line) as { port: number }).port);
    }).then(() => reject(new Error("the bare server exited before listening")));
  });
  return { label: "bare Bun.serve", proc, base: `http://127.0.0.1:${port}` };
}

function fileSize(path: string | undefined): number {
  if (!path) return 0;
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Loads `server` from a separate load-generator process; samples CPU around the measured window. */
export async function runLoad(
  server: Server,
  path: string,
  authorization: string,
  seconds: number,
  warmup: number,
) {
  const config: LoadConfig = {
    url: `${server.base}${path}`,
    authorization,
    connections: CONNECTIONS,
    seconds,
    warmupSeconds: warmup,
  };
  const loadBefore = loadAverage();
  const proc = spawnTracked([process.execPath, SELF, "--child", "loadgen"], {
    env: { ...process.env, BENCH_LOAD: JSON.stringify(config) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr as ReadableStream).text();
  const pid = server.proc.pid;
  let before = { cpu: 0, machine: machineCpu(), log: 0 };
  let after = before;
  let report: LoadReport | undefined;
  await eachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
    const message = JSON.parse(line) as { event: string };
    if (message.event === "start") {
      before = { cpu: procCpuSeconds(pid), machine: machineCpu(), log: fileSize(server.logFile) };
    } else if (message.event === "result") {
      after = { cpu: procCpuSeconds(pid), machine: machineCpu(), log: fileSize(server.logFile) };
      report = message as LoadReport;
    }
  });
  const code = await proc.exited;
  if (!report) throw new Error(`the load generator failed (${code}): ${await stderr}`);
  const ok = report.statuses["200"] ?? 0;
  const run: LoadRun = {
    label: server.label,
    report,
    rps: ok / report.seconds,
    ok,
    non2xx: report.responses - ok,
    serverCpuSeconds: after.cpu - before.cpu,
    machineBusy: (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total),
    loadBefore,
    logBytes: after.log - before.log,
  };
  return run;
}

export function loadRow(run: LoadRun, idleRss: number, afterRss: number): string[] {
  const l = run.report.latency;
  const perRequestUs = (run.serverCpuSeconds / Math.max(1, run.report.responses)) * 1e6;
  const serverCores = run.serverCpuSeconds / run.report.seconds;
  const loadCores = run.report.cpuSeconds / run.report.seconds;
  const otherCores = Math.max(0, run.machineBusy * CORES - serverCores - loadCores);
  return [
    run.label,
    num(run.rps),
    ms(l.p50),
    ms(l.p90),
    ms(l.p99),
    ms(l.p999),
    ms(l.max),
    `${num(serverCores, 2)} / ${num(loadCores, 2)} / ${num(otherCores, 2)}`,
    `${num(perRequestUs, 1)} µs`,
    `${mb(idleRss)} → ${mb(afterRss)}`,
    num(run.non2xx + run.report.errors),
  ];
}

export async function runFoundation(): Promise<SummaryRow[]> {
  const seconds = envNumber("BENCH_SECONDS", 10);
  const warmup = process.env.BENCH_WARMUP_SECONDS === "0" ? 0 : envNumber("BENCH_WARMUP_SECONDS", 2);
  const idleMs = envNumber("BENCH_IDLE_MS", 1000);

  heading("HTTP: bare Bun.serve vs svc serve (GET /api/v1/org)");
  keyValues([
    [
      "machine",
      `${CORES} cores, Bun ${Bun.version}, ${process.platform}/${process.arch}, load average ${num(loadAverage(), 2)}`,
    ],
    [
      "load",
      `autocannon (Bun, separate process), ${CONNECTIONS} connections, pipelining 1, ${warmup} s warm-up + ${seconds} s measured per server`,
    ],
    ["latency", "per response, from autocannon's 'response' event (sub-ms resolution)"],
  ]);

  const root = tempDir("svc-bench-http-");
  const dataDir = join(root, "data");
  try {
    const { authorization } = await initOrg(dataDir);

    // Start-up: spawn → /readyz 200, five times (default log level, as an operator starts it).
    const readyTimes: number[] = [];
    const inProcess: number[] = [];
    const readyRss: number[] = [];
    for (let i = 0; i < READY_RUNS; i++) {
      const logFile = join(root, `ready-${i}.log`);
      const { server, readyMs } = await startSvcOnPort(dataDir, logFile, undefined);
      readyTimes.push(readyMs);
      readyRss.push(procStatusMb(server.proc.pid));
      await stopProcess(server.proc);
      const line = servingLine(logFile);
      if (line) inProcess.push(line.startup_ms);
    }
    const readyMedian = median(readyTimes);

    // The server under load: warn level so request logs do not dominate.
    const svcWarn = (await startSvcOnPort(dataDir, join(root, "serve-warn.log"), "warn")).server;
    await Bun.sleep(idleMs);
    const idleRss = procStatusMb(svcWarn.proc.pid);
    const org = await fetch(`${svcWarn.base}/api/v1/org`, { headers: { authorization } });
    const body = await org.text();
    if (org.status !== 200) throw new Error(`GET /api/v1/org answered ${org.status}: ${body}`);

    const bare = await startBare(body);
    await Bun.sleep(idleMs);
    const bareIdleRss = procStatusMb(bare.proc.pid);

    console.log(`\n  loading ${bare.label} …`);
    const bareRun = await runLoad(bare, "/api/v1/org", authorization, seconds, warmup);
    const bareAfterRss = procStatusMb(bare.proc.pid);
    await stopProcess(bare.proc);

    console.log(`  loading ${svcWarn.label} …`);
    const warnRun = await runLoad(svcWarn, "/api/v1/org", authorization, seconds, warmup);
    const warnAfterRss = procStatusMb(svcWarn.proc.pid);
    const warnPeakRss = procStatusMb(svcWarn.proc.pid, "VmHWM");
    await stopProcess(svcWarn.proc);

    // Once more at the default level (info): every request is logged, to a file here.
    const svcInfo = await startSvcFromLogLine(dataDir, join(root, "serve-info.log"));
    await Bun.sleep(idleMs);
    const infoIdleRss = procStatusMb(svcInfo.proc.pid);
    console.log(`  loading ${svcInfo.label} …`);
    const infoRun = await runLoad(svcInfo, "/api/v1/org", authorization, seconds, warmup);
    const infoAfterRss = procStatusMb(svcInfo.proc.pid);
    await stopProcess(svcInfo.proc);

    heading(`Load: ${CONNECTIONS} connections, ${seconds} s`);
    table(
      [
        "server",
        "req/s",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "cores srv/load/other",
        "srv CPU/req",
        "RSS idle → after",
        "errors",
      ],
      [
        loadRow(bareRun, bareIdleRss, bareAfterRss),
        loadRow(warnRun, idleRss, warnAfterRss),
        loadRow(infoRun, infoIdleRss, infoAfterRss),
      ],
    );
    const warnRatio = warnRun.rps / bareRun.rps;
    const infoRatio = infoRun.rps / bareRun.rps;
    console.log("");
    keyValues([
      ["response bodies", `svc ${body.length} B, bare: the same bytes (captured from svc)`],
      ["ratio svc(warn) / bare", `${ratio(warnRatio)} (target ≥ ${TARGET_RATIO})`],
      ["ratio svc(info) / bare", `${ratio(infoRatio)}`],
      [
        "ratio svc(info) / svc(warn)",
        `${ratio(infoRun.rps / warnRun.rps)} (cost of the per-request info log)`,
      ],
      [
        "info-level log volume",
        `${mb(infoRun.logBytes / 1024 / 1024)} in ${num(infoRun.report.seconds, 1)} s (${num(infoRun.logBytes / Math.max(1, infoRun.report.responses))} B/request, stdout to a file)`,
      ],
      ["svc peak RSS (VmHWM, warn run)", mb(warnPeakRss)],
    ]);
    const loads = [bareRun, warnRun, infoRun].map((r) => num(r.loadBefore, 2)).join(" / ");
    console.log(
      [
        "",
        `  CPU contention: ${CORES} cores are shared by the server, the load generator (autocannon) and`,
        "  anything else running. 'cores srv/load/other' is CPU used during the measured window by the",
        "  server process, by the load generator, and by everything else on the machine. svc runs its",
        "  JavaScript on one thread, so ~1.0 server core means it is CPU-bound; 'srv CPU/req' (server",
        "  CPU time per response) and the svc/bare ratio are the figures least sensitive to contention.",
        `  1-minute load average before each run (bare / warn / info): ${loads}.`,
      ].join("\n"),
    );

    heading("Start-up and memory");
    keyValues([
      [
        `spawn → /readyz 200 (poll ${READY_POLL_MS} ms)`,
        `${readyTimes.map((t) => num(t)).join(", ")} ms → median ${ms(readyMedian)}`,
      ],
      ["  of which in-process (startup_ms)", `median ${ms(median(inProcess))} (config → listening)`],
      ["RSS when ready (median)", mb(median(readyRss))],
      [`svc idle RSS (${idleMs} ms after ready)`, `${mb(idleRss)} (bare Bun.serve: ${mb(bareIdleRss)})`],
      ["svc RSS after load (warn / info)", `${mb(warnAfterRss)} / ${mb(infoAfterRss)}`],
    ]);

    const lat = warnRun.report.latency;
    return [
      {
        name: "req/s bare Bun.serve",
        target: "-",
        figure: num(bareRun.rps),
        pass: null,
      },
      { name: "req/s svc (warn)", target: "-", figure: num(warnRun.rps), pass: null },
      { name: "req/s svc (info, default)", target: "-", figure: num(infoRun.rps), pass: null },
      {
        name: "ratio svc/bare (warn)",
        target: `≥ ${TARGET_RATIO}`,
        figure: ratio(warnRatio),
        pass: warnRatio >= TARGET_RATIO,
      },
      {
        name: "ratio svc/bare (info, default)",
        target: `≥ ${TARGET_RATIO}`,
        figure: ratio(infoRatio),
        pass: infoRatio >= TARGET_RATIO,
      },
      {
        name: `svc p50 / p99 @${CONNECTIONS} (warn)`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        figure: `${ms(lat.p50)} / ${ms(lat.p99)}`,
        pass: lat.p99 < TARGET_P99_MS,
      },
      {
        name: `svc p50 / p99 @${CONNECTIONS} (info)`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        figure: `${ms(infoRun.report.latency.p50)} / ${ms(infoRun.report.latency.p99)}`,
        pass: infoRun.report.latency.p99 < TARGET_P99_MS,
      },
      {
        name: "spawn → /readyz 200 (median of 5)",
        target: `< ${TARGET_READY_MS} ms`,
        figure: ms(readyMedian),
        pass: readyMedian < TARGET_READY_MS,
      },
      {
        name: "svc idle RSS after start",
        target: `< ${TARGET_IDLE_RSS_MB} MB`,
        figure: mb(idleRss),
        pass: idleRss < TARGET_IDLE_RSS_MB,
      },
      {
        name: "svc RSS after load (warn / info)",
        target: "-",
        figure: `${mb(warnAfterRss)} / ${mb(infoAfterRss)}`,
        pass: null,
      },
    ];
  } finally {
    removeDir(root);
  }
}

if (import.meta.main) {
  const role = process.argv[2] === "--child" ? process.argv[3] : undefined;
  if (role === "loadgen") {
    await childLoadgen();
    process.exit(0);
  } else if (role === "bare-server") childBareServer();
  else if (role !== undefined) throw new Error(`unknown child role ${role}`);
  else await runBenchmarkMain(runFoundation);
}
