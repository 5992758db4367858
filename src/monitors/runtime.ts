/**
 * Monitors at work: heartbeat pings and deadlines, HTTP checks, and the down/up transitions
 * that fire an alert (and `run.service.monitor.down.v1`) or let it resolve automatically after
 * `freshness_seconds` (and `run.service.monitor.up.v1`). Every timer is the monitor's `due_at`.
 */
import type { AccountsContext } from "../accounts/context.ts";
import type { AlertService } from "../alerts/alerts.service.ts";
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { iso } from "../time.ts";
import type { MonitorTable } from "./monitor.table.ts";
import type { HeartbeatSettings, HttpSettings } from "./monitor.ts";
import { dueMonitors, findMonitorById, findMonitorByToken, updateMonitor } from "./monitors.repository.ts";
import { heartbeatDeadline } from "./monitors.service.ts";
import { setMonitorStatus } from "./status.ts";

const DUE_BATCH = 50;
/** An HTTP monitor's dedup key: one open alert per monitor (a heartbeat's is "heartbeat"). */
const dedupKeyOf = (monitor: MonitorTable) => monitor.type;

export class MonitorRuntime {
  /** HTTP checks under way, so a check slower than its interval is not started twice. */
  private readonly checking = new Set<string>();

  constructor(
    private readonly ctx: AccountsContext,
    private readonly alerts: AlertService,
  ) {}

  /** A heartbeat ping (`failed`: the `/fail` variant). Unknown tokens are 404. */
  async ping(token: string, failed: boolean, now = Date.now()): Promise<void> {
    const found = await findMonitorByToken(this.ctx.store.read, token);
    if (found?.type !== "heartbeat") throw errors.notFound("Heartbeat");
    await this.ctx.store.write(async (tx) => {
      const monitor = await findMonitorById(tx, found.id);
      if (!monitor) throw errors.notFound("Heartbeat");
      const config = JSON.parse(monitor.config) as HeartbeatSettings;
      // A failure stops the deadline until the next good ping, unless the monitor is paused
      // (then nothing goes down and the timer must keep running for when it is unpaused).
      await updateMonitor(tx, monitor.id, {
        last_checked_at: now,
        due_at: failed && monitor.paused === 0 ? null : heartbeatDeadline(config, now),
      });
      if (failed) await this.goDown(tx, monitor, `the job reported a failure at ${iso(now)}`, now);
      else await this.goUp(tx, monitor, now);
    });
  }

  /** Scheduler job: heartbeats whose deadline passed without a ping go down. */
  async heartbeatsDue(now = Date.now()): Promise<void> {
    for (const due of await dueMonitors(this.ctx.store.read, "heartbeat", now, DUE_BATCH)) {
      await this.ctx.store.write(async (tx) => {
        const monitor = await findMonitorById(tx, due.id);
        if (!monitor || monitor.paused === 1 || monitor.due_at === null || monitor.due_at > now) return;
        await updateMonitor(tx, monitor.id, { due_at: null });
        const since =
          monitor.last_checked_at === null ? "since it was created" : `since ${iso(monitor.last_checked_at)}`;
        await this.goDown(tx, monitor, `no ping ${since}; one was expected by ${iso(monitor.due_at)}`, now);
      });
    }
  }

  /** Scheduler job: HTTP checks that are due run side by side. */
  async httpChecksDue(now = Date.now()): Promise<void> {
    const due = await this.ctx.store.write(async (tx) => {
      const rows = await dueMonitors(tx, "http", now, DUE_BATCH);
      for (const row of rows) {
        const config = JSON.parse(row.config) as HttpSettings;
        await updateMonitor(tx, row.id, { due_at: now + (config.interval_seconds ?? 60) * 1000 });
      }
      return rows;
    });
    // Each check runs on its own: a target that never answers must not hold up the others.
    for (const monitor of due) {
      if (this.checking.has(monitor.id)) continue;
      this.checking.add(monitor.id);
      void this.check(monitor)
        .catch((error: unknown) =>
          this.ctx.log.error("http check failed", { monitor_id: monitor.id, error: String(error) }),
        )
        .finally(() => this.checking.delete(monitor.id));
    }
  }

  private async check(monitor: MonitorTable): Promise<void> {
    const config = JSON.parse(monitor.config) as HttpSettings;
    const problem = await probe(config);
    const now = Date.now();
    await this.ctx.store.write(async (tx) => {
      const current = await findMonitorById(tx, monitor.id);
      if (!current) return;
      const failures = problem ? current.consecutive_failures + 1 : 0;
      const successes = problem ? 0 : current.consecutive_successes + 1;
      await updateMonitor(tx, current.id, {
        consecutive_failures: failures,
        consecutive_successes: successes,
        last_checked_at: now,
      });
      if (problem && failures >= (config.failure_threshold ?? 2)) {
        await this.goDown(
          tx,
          current,
          `${config.method ?? "GET"} ${withoutCredentials(config.url)}: ${problem}`,
          now,
        );
      } else if (!problem && successes >= (config.success_threshold ?? 1)) {
        await this.goUp(tx, current, now);
      }
    });
  }

  private async goDown(tx: Db, monitor: MonitorTable, reason: string, now: number): Promise<void> {
    if (monitor.status === "down" || monitor.paused === 1) return;
    const down = await setMonitorStatus(tx, monitor, "down", now);
    await this.alerts.triggerIn(
      tx,
      down,
      {
        dedupKey: dedupKeyOf(monitor),
        summary: `${monitor.name} is down`,
        reason,
        severity: monitor.severity,
        labels: JSON.parse(monitor.labels) as Record<string, string>,
      },
      now,
    );
  }

  private async goUp(tx: Db, monitor: MonitorTable, now: number): Promise<void> {
    if (monitor.status === "up") return;
    const up = await setMonitorStatus(tx, monitor, "up", now);
    await this.alerts.sourceUpIn(tx, up, dedupKeyOf(monitor), now);
  }
}
/** A URL as it may be shown in alerts and events: without `user:password@`. */
function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}

/** One HTTP check: null when it passed, else what went wrong. */
async function probe(config: HttpSettings): Promise<string | null> {
  let response: Response;
  try {
    response = await fetch(config.url, {
      method: config.method ?? "GET",
      redirect: "follow",
      signal: AbortSignal.timeout(config.timeout_ms ?? 10_000),
    });
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    return name === "TimeoutError"
      ? `no answer within ${config.timeout_ms ?? 10_000} ms`
      : `request failed: ${String(error)}`;
  }
  // Read the body only when a keyword must be found in it; otherwise just drain it.
  let body = "";
  if (config.keyword && config.method !== "HEAD") body = await response.text();
  else await response.arrayBuffer();
  const statusOk =
    config.expected_status === undefined ? response.ok : response.status === config.expected_status;
  if (!statusOk) return `answered ${response.status}`;
  if (config.keyword && !body.includes(config.keyword))
    return `the body does not contain "${config.keyword}"`;
  return null;
}
