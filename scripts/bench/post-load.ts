/**
 * The POST load generator several benches share: autocannon in its own process (so the load
 * does not share a JS thread with anything measured), posting one fixed body or a fresh id per
 * request, reporting latencies, statuses and its own CPU as one JSON line. The orchestrator
 * side reads the server's CPU and the machine's around the measured window.
 *
 *   bun scripts/bench/post-load.ts    internal: runs as the child, configured by BENCH_LOAD
 */
import { createRequire } from "node:module";
import { eachLine, machineCpu, percentile, procCpuSeconds, spawnTracked } from "./lib.ts";

const SELF = import.meta.path;

export interface PostLoadConfig {
  url: string;
  contentType: string;
  /** The body split where the id goes: request n sends `fragments.join("<prefix>-<n>")`. */
  fragments: string[];
  /** The id of the body every request sends when `prefix` is null. */
  fixedId: string;
  /** Set: a fresh id per request (the warm-up uses `<prefix>-w-<n>`); null: the fixed body. */
  prefix: string | null;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

export interface PostLoadReport {
  event: "result";
  seconds: number;
  responses: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  latency: { p50: number; p99: number; max: number };
  cpuSeconds: number;
  requestBytes: number;
}

export interface LoadResult {
  label: string;
  report: PostLoadReport;
  ok: number;
  rps: number;
  serverCpuSeconds: number;
  /** Share of the whole machine busy during the window (0..1), to see other load. */
  machineBusy: number;
}

type AutocannonInstance = PromiseLike<{ errors: number; timeouts: number }> & {
  on(event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
};
type Autocannon = (options: Record<string, unknown>) => AutocannonInstance;

async function childLoadgen(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_LOAD ?? "{}") as PostLoadConfig;
  const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;
  const fixedBody = config.fragments.join(config.fixedId);
  const optionsFor = (prefix: string | null) => {
    const base = {
      url: config.url,
      method: "POST",
      connections: config.connections,
      pipelining: 1,
      headers: { "content-type": config.contentType },
      body: fixedBody,
    };
    if (prefix === null) return base;
    let n = 0;
    return {
      ...base,
      requests: [
        {
          setupRequest: (request: Record<string, unknown>) => {
            n += 1;
            return { ...request, body: config.fragments.join(`${prefix}-${n}`) };
          },
        },
      ],
    };
  };
  const prefix = config.prefix;
  if (config.warmupSeconds > 0) {
    await autocannon({
      ...optionsFor(prefix === null ? null : `${prefix}-w`),
      duration: config.warmupSeconds,
    });
  }
  let latencies = new Float64Array(1 << 20);
  let count = 0;
  const statuses: Record<string, number> = {};
  console.log(JSON.stringify({ event: "start" }));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const instance = autocannon({ ...optionsFor(prefix), duration: config.seconds });
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
  const report: PostLoadReport = {
    event: "result",
    seconds,
    responses: count,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    latency: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: percentile(sorted, 100) },
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    requestBytes: Buffer.byteLength(fixedBody),
  };
  console.log(JSON.stringify(report));
}

/**
 * Runs a child bench process configured by the JSON in `envName`; it prints `{event:"start"}`
 * when its measured window opens and `{event:"result",…}` when it closes. Returns that result
 * with the CPU the watched process used in between and the machine's busy share.
 */
export async function runChild<R>(
  cmd: string[],
  envName: string,
  config: unknown,
  watchPid: number,
): Promise<{ report: R; serverCpuSeconds: number; machineBusy: number }> {
  const proc = spawnTracked(cmd, {
    env: { ...process.env, [envName]: JSON.stringify(config) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr as ReadableStream).text();
  let before = { cpu: 0, machine: machineCpu() };
  let after = before;
  let report: R | undefined;
  await eachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => {
    const message = JSON.parse(line) as { event: string };
    if (message.event === "start") before = { cpu: procCpuSeconds(watchPid), machine: machineCpu() };
    else if (message.event === "result") {
      after = { cpu: procCpuSeconds(watchPid), machine: machineCpu() };
      report = message as R;
    }
  });
  const code = await proc.exited;
  if (!report) throw new Error(`${cmd.slice(1).join(" ")} failed (${code}): ${await stderr}`);
  const machineBusy =
    (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total);
  return { report, serverCpuSeconds: after.cpu - before.cpu, machineBusy };
}

/** Runs the POST load against a server process and counts its 2xx answers per second. */
export async function runPostLoad(
  label: string,
  serverPid: number,
  config: PostLoadConfig,
): Promise<LoadResult> {
  const { report, serverCpuSeconds, machineBusy } = await runChild<PostLoadReport>(
    [process.execPath, SELF],
    "BENCH_LOAD",
    config,
    serverPid,
  );
  const ok = Object.entries(report.statuses)
    .filter(([status]) => status.startsWith("2"))
    .reduce((sum, [, n]) => sum + n, 0);
  return { label, report, ok, rps: ok / report.seconds, serverCpuSeconds, machineBusy };
}

if (import.meta.main) {
  await childLoadgen();
  process.exit(0);
}
