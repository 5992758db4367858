/** Monitors: CRUD with the team rules, type-specific config, routing credentials and timers. */
import { randomBytes } from "node:crypto";
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import { Cron } from "croner";
import type { Principal } from "../accounts/access.ts";
import type { AccountsContext } from "../accounts/context.ts";
import { checkTeamExists, checkTeamWrite } from "../accounts/team-access.ts";
import type { Db } from "../db/store.ts";
import { AppError, errors, requireName } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { check } from "../http/route.ts";
import { newId } from "../ids.ts";
import { isValidZone } from "../schedules/zoned.ts";
import type { EventMonitorIndex } from "./event-monitors.ts";
import type { MonitorTable, MonitorType, Severity } from "./monitor.table.ts";
import { configSchemaOf, type HeartbeatSettings, MONITOR_TYPES, toMonitor } from "./monitor.ts";
import {
  deleteMonitor,
  findMonitor,
  insertMonitor,
  listMonitors,
  openAlertIds,
  policyExists,
  updateMonitor,
} from "./monitors.repository.ts";

const checkers = Object.fromEntries(
  MONITOR_TYPES.map((type) => [type, TypeCompiler.Compile(configSchemaOf(type) as TSchema)]),
) as Record<MonitorType, ReturnType<typeof TypeCompiler.Compile>>;

/** The type's config with defaults, checked; errors name `config.<field>`. */
function parseConfig(type: MonitorType, raw: Record<string, unknown>): Record<string, unknown> {
  const config = check(
    checkers[type],
    Value.Default(configSchemaOf(type) as TSchema, structuredClone(raw)),
    "config",
  ) as Record<string, unknown>;
  if (type === "http" && config.method === "HEAD" && config.keyword !== undefined) {
    throw errors.field("config.keyword", "cannot be checked with HEAD, which gets no body");
  }
  if (type === "heartbeat") {
    const hb = config as HeartbeatSettings;
    if ((hb.interval_seconds === undefined) === (hb.cron === undefined)) {
      throw errors.field("config", "a heartbeat monitor takes exactly one of interval_seconds and cron");
    }
    if (!isValidZone(hb.time_zone ?? "UTC"))
      throw errors.field("config.time_zone", "must be an IANA time zone");
    if (hb.cron !== undefined) {
      let next: Date | null;
      try {
        const cron = new Cron(hb.cron, { timezone: hb.time_zone, paused: true });
        next = cron.nextRun();
        cron.stop();
      } catch {
        throw errors.field("config.cron", "is not a valid cron expression");
      }
      // A pattern that never matches (30 February) would make every ping late at once.
      if (next === null) throw errors.field("config.cron", "never matches a time");
    }
  }
  return config;
}

/**
 * The first timer of a monitor: a heartbeat's deadline (the next expected ping plus grace), an
 * HTTP monitor's first check; event monitors have none.
 */
export function firstDueAt(type: MonitorType, config: Record<string, unknown>, now: number): number | null {
  if (type === "http") return now;
  if (type === "heartbeat") return heartbeatDeadline(config as HeartbeatSettings, now);
  return null;
}

/** When a heartbeat pinged at `from` is late: the next expected ping plus grace. */
export function heartbeatDeadline(config: HeartbeatSettings, from: number): number {
  const grace = (config.grace_seconds ?? 60) * 1000;
  if (config.interval_seconds !== undefined) return from + config.interval_seconds * 1000 + grace;
  const next = new Cron(config.cron as string, { timezone: config.time_zone ?? "UTC", paused: true }).nextRun(
    new Date(from),
  );
  return (next?.getTime() ?? from) + grace;
}

/** An event monitor's integration key (32 hex, as PagerDuty's) or a heartbeat's ping token. */
function newToken(type: MonitorType): string | null {
  if (type === "event") return randomBytes(16).toString("hex");
  if (type === "heartbeat") return randomBytes(18).toString("base64url");
  return null;
}

export interface MonitorCreate {
  name: string;
  type: MonitorType;
  group_id?: string | null;
  team_id?: string | null;
  severity?: Severity;
  escalation_policy_id?: string | null;
  labels?: Record<string, string>;
  freshness_seconds?: number;
  paused?: boolean;
  config?: Record<string, unknown>;
}

export type MonitorPatch = Partial<Omit<MonitorCreate, "type">>;

export class MonitorService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly eventMonitors: EventMonitorIndex,
  ) {}

  private view(row: MonitorTable) {
    return toMonitor(row, this.ctx.config.base_url);
  }

  async list(
    orgId: string,
    filter: {
      type?: string;
      team_id?: string;
      group_id?: string;
      limit: number;
      cursor: (string | number)[] | null;
    },
  ) {
    const rows = await listMonitors(this.ctx.store.read, orgId, {
      type: filter.type,
      teamId: filter.team_id,
      groupId: filter.group_id,
      afterId: filter.cursor ? String(filter.cursor[0]) : undefined,
      limit: filter.limit,
    });
    return toPage(
      rows,
      filter.limit,
      "monitors",
      (r) => [r.id],
      (r) => this.view(r),
    );
  }

  async get(orgId: string, id: string) {
    return this.view(await this.require(this.ctx.store.read, orgId, id));
  }

  async create(orgId: string, principal: Principal, input: MonitorCreate) {
    const config = parseConfig(input.type, input.config ?? {});
    const id = newId("mon");
    const now = Date.now();
    const row: MonitorTable = {
      id,
      org_id: orgId,
      name: requireName(input.name),
      type: input.type,
      group_id: input.group_id ?? null,
      team_id: input.team_id ?? null,
      severity: input.severity ?? "critical",
      escalation_policy_id: input.escalation_policy_id ?? null,
      labels: JSON.stringify(checkLabels(input.labels ?? {})),
      freshness_seconds: input.freshness_seconds ?? 60,
      paused: input.paused ? 1 : 0,
      status: "up",
      config: JSON.stringify(config),
      token: newToken(input.type),
      due_at: firstDueAt(input.type, config, now),
      consecutive_failures: 0,
      consecutive_successes: 0,
      last_checked_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.ctx.store.write(async (tx) => {
      await checkTeamExists(tx, orgId, input.team_id);
      await checkTeamWrite(tx, principal, [input.team_id ?? null]);
      await checkPolicy(tx, orgId, input.escalation_policy_id);
      await insertMonitor(tx, row);
      this.eventMonitors.changedAfterCommit(orgId);
    });
    return this.view(row);
  }

  /** `config`, when given, replaces the whole config and restarts the monitor's timer. */
  async update(orgId: string, principal: Principal, id: string, patch: MonitorPatch) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamExists(tx, orgId, patch.team_id);
      await checkTeamWrite(tx, principal, [
        row.team_id,
        ...(patch.team_id !== undefined ? [patch.team_id] : []),
      ]);
      await checkPolicy(tx, orgId, patch.escalation_policy_id);
      const now = Date.now();
      const changes: Partial<MonitorTable> = { updated_at: now };
      if (patch.name !== undefined) changes.name = requireName(patch.name);
      if (patch.group_id !== undefined) changes.group_id = patch.group_id;
      if (patch.team_id !== undefined) changes.team_id = patch.team_id;
      if (patch.severity !== undefined) changes.severity = patch.severity;
      if (patch.escalation_policy_id !== undefined) changes.escalation_policy_id = patch.escalation_policy_id;
      if (patch.labels !== undefined) changes.labels = JSON.stringify(checkLabels(patch.labels));
      if (patch.freshness_seconds !== undefined) changes.freshness_seconds = patch.freshness_seconds;
      if (patch.paused !== undefined) {
        changes.paused = patch.paused ? 1 : 0;
        // Unpausing starts the timer afresh: a deadline that passed while paused is no miss.
        if (!patch.paused && row.paused === 1)
          changes.due_at = firstDueAt(row.type, JSON.parse(row.config), now);
      }
      if (patch.config !== undefined) {
        const config = parseConfig(row.type, patch.config);
        changes.config = JSON.stringify(config);
        changes.due_at = firstDueAt(row.type, config, now);
      }
      await updateMonitor(tx, id, changes);
      this.eventMonitors.changedAfterCommit(orgId);
    });
    return this.get(orgId, id);
  }

  /** A monitor with open alerts is 409; deleting one deletes its resolved alerts too. */
  async remove(orgId: string, principal: Principal, id: string) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamWrite(tx, principal, [row.team_id]);
      const open = await openAlertIds(tx, id);
      if (open.length > 0) {
        throw new AppError("conflict", "This monitor has open alerts; resolve them first.", {
          alert_ids: open,
        });
      }
      await deleteMonitor(tx, id);
      this.eventMonitors.changedAfterCommit(orgId);
    });
  }

  private async require(db: Db, orgId: string, id: string): Promise<MonitorTable> {
    const row = await findMonitor(db, orgId, id);
    if (!row) throw errors.notFound("Monitor");
    return row;
  }
}

async function checkPolicy(db: Db, orgId: string, policyId: string | null | undefined): Promise<void> {
  if (policyId == null) return;
  if (!(await policyExists(db, orgId, policyId))) {
    throw errors.field("escalation_policy_id", "does not name an escalation policy of this organization");
  }
}

/** Label names are 1..100 characters (the schema's key constraints are not checked by TypeBox). */
function checkLabels(labels: Record<string, string>): Record<string, string> {
  for (const name of Object.keys(labels)) {
    if (name.length === 0 || name.length > 100) {
      throw errors.field("labels", "label names must be 1 to 100 characters");
    }
  }
  return labels;
}
