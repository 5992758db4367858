/**
 * Benchmark helpers: child processes and temp dirs that are cleaned up on every exit path
 * (including Ctrl-C), /proc readings (RSS, CPU), percentiles and the printed tables.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

export const ROOT = resolve(import.meta.dir, "../..");
export const CLI = join(ROOT, "cli/main.ts");
export const CORES = cpus().length;

/** One line of the final summary: a target, the measured figure and whether it is met. */
export interface SummaryRow {
  name: string;
  target: string;
  figure: string;
  /** null: informational, no target. */
  pass: boolean | null;
}

export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got '${raw}'`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Cleanup: every child and temp dir is registered here and removed on exit, error or signal.

const children = new Set<Subprocess>();
const dirs = new Set<string>();
let handlersInstalled = false;

export function tempDir(prefix: string): string {
  installCleanupHandlers();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

type SpawnOptions = Parameters<typeof Bun.spawn>[1];

/** `Bun.spawn` whose process is killed when the benchmark exits for any reason. */
export function spawnTracked(cmd: string[], options: SpawnOptions): Subprocess {
  installCleanupHandlers();
  const proc = Bun.spawn(cmd, { cwd: ROOT, stdin: "ignore", ...options }) as Subprocess;
  children.add(proc);
  void proc.exited.then(() => children.delete(proc));
  return proc;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
export async function stopProcess(proc: Subprocess, graceMs = 3000): Promise<number | null> {
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill("SIGTERM");
    const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]);
    if (!exited) proc.kill("SIGKILL");
  }
  await proc.exited;
  children.delete(proc);
  return proc.exitCode;
}

function cleanupSync(): void {
  for (const proc of children) {
    try {
      proc.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  children.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", cleanupSync);
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping child processes and removing temp dirs\n`);
      cleanupSync();
      process.exit(code);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Processes and ports.

/** A loopback port that was free a moment ago (bound to port 0, then released). */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** Calls `onLine` for every line of `stream` until it ends. */
export async function eachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline = buffered.indexOf("\n");
    while (newline !== -1) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
  }
  if (buffered) onLine(buffered);
}

/** Polls `check` every `everyMs` until it returns a value; throws after `timeoutMs`. */
export async function poll<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  everyMs = 5,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------
// /proc readings (Linux).

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM …) in MB, or NaN when unreadable. */
export function procStatusMb(pid: number, field = "VmRSS"): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const CLOCK_TICKS = 100;

/** User + system CPU seconds a process has used so far (/proc/<pid>/stat utime + stime). */
export function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Busy and total jiffies of the whole machine (/proc/stat), for a busy fraction over a window. */
export function machineCpu(): { busy: number; total: number } {
  // cpu  user nice system idle iowait irq softirq steal …: busy is everything but idle and iowait.
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting.

/** The p-th percentile (0–100) of an ascending array, nearest-rank. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function num(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return "n/a";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function ms(value: number): string {
  return `${num(value, value < 10 ? 2 : 1)} ms`;
}

export function mb(value: number): string {
  return `${num(value, 1)} MB`;
}

export function ratio(value: number): string {
  return `${num(value, 2)}x`;
}

export function heading(title: string): void {
  console.log(`\n== ${title} ${"=".repeat(Math.max(0, 90 - title.length))}`);
}

/** Prints `label  value` lines with the values aligned. */
export function keyValues(rows: [string, string][]): void {
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);
}

/** A plain left-aligned table. */
export function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    `  ${cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()}`;
  console.log(line(header));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const row of rows) console.log(line(row));
}

export function printSummary(rows: SummaryRow[]): void {
  heading("Summary");
  table(
    ["measure", "target", "figure", "result"],
    rows.map((r) => [r.name, r.target, r.figure, r.pass === null ? "info" : r.pass ? "PASS" : "MISS"]),
  );
  const missed = rows.filter((r) => r.pass === false).length;
  const targets = rows.filter((r) => r.pass !== null).length;
  if (targets > 0)
    console.log(`\n  ${targets - missed}/${targets} targets met${missed ? ` (${missed} missed)` : ""}.`);
}

/**
 * The top level of a benchmark script: runs it, prints the summary and the total time. Figures
 * are for the issue note, so the exit code is 0 even when a target is missed; 1 only when the
 * benchmark itself failed.
 */
export async function runBenchmarkMain(run: () => Promise<SummaryRow[]>): Promise<never> {
  installCleanupHandlers();
  const started = performance.now();
  try {
    printSummary(await run());
    console.log(`  total time ${Math.round((performance.now() - started) / 1000)} s`);
    process.exit(0);
  } catch (error) {
    console.error(
      `\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exit(1);
  }
}

/** The 1-minute load average (other work on the machine skews every figure). */
export function loadAverage(): number {
  try {
    return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  } catch {
    return Number.NaN;
  }
}

/** One JSON API call to svc during set-up; throws on anything but success. */
export async function api(base: string, authorization: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}
