/** SQL for alerts and their timelines. */
import { sql } from "kysely";
import type { Db } from "../db/store.ts";
import type { AlertStatus, AlertTable } from "./alert.table.ts";

export function findAlert(db: Db, orgId: string, id: string): Promise<AlertTable | undefined> {
  return db
    .selectFrom("alerts")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

/** An alert by id in any org: replies must tell another org's alert from an unknown one. */
export function findAlertInAnyOrg(db: Db, id: string): Promise<AlertTable | undefined> {
  return db.selectFrom("alerts").selectAll().where("id", "=", id).executeTakeFirst();
}

/**
 * The open alert of a monitor for a dedup key (at most one: `alerts_open_dedup`), which is also
 * its newest. A tenth of the cost of `latestAlertFor`, whose ORDER BY makes SQLite's step slow.
 */
export function openAlertFor(db: Db, monitorId: string, dedupKey: string): Promise<AlertTable | undefined> {
  return db
    .selectFrom("alerts")
    .selectAll()
    .where("monitor_id", "=", monitorId)
    .where("dedup_key", "=", dedupKey)
    .where("status", "!=", "resolved")
    .executeTakeFirst();
}

/** The newest alert of a monitor for a dedup key, open or not. */
export function latestAlertFor(db: Db, monitorId: string, dedupKey: string): Promise<AlertTable | undefined> {
  return db
    .selectFrom("alerts")
    .selectAll()
    .where("monitor_id", "=", monitorId)
    .where("dedup_key", "=", dedupKey)
    .orderBy("fired_at", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
}

export async function insertAlert(db: Db, row: AlertTable): Promise<void> {
  await db.insertInto("alerts").values(row).execute();
}

export async function updateAlert(
  db: Db,
  id: string,
  changes: Partial<Omit<AlertTable, "id" | "org_id" | "monitor_id">>,
): Promise<void> {
  await db.updateTable("alerts").set(changes).where("id", "=", id).execute();
}

export async function addTimeline(db: Db, alertId: string, at: number, type: string, data: object = {}) {
  await db
    .insertInto("alert_timeline")
    .values({ alert_id: alertId, at, type, data: JSON.stringify(data) })
    .execute();
}

export function timelineOf(db: Db, alertId: string) {
  return db.selectFrom("alert_timeline").selectAll().where("alert_id", "=", alertId).orderBy("seq").execute();
}

export type AlertSort = "fired_at" | "-fired_at" | "severity" | "-severity";

export interface AlertFilter {
  statuses?: AlertStatus[];
  severities?: string[];
  monitorId?: string;
  groupId?: string;
  from?: number;
  to?: number;
  q?: string;
  sort: AlertSort;
  /** The position after which the page starts: [severity_rank?, fired_at, id]. */
  after?: (string | number)[];
  limit: number;
}

/**
 * One page of alerts by keyset: `fired_at` ascending or descending; `severity` by rank then
 * newest first; ties always fall back to `-fired_at`, then id ascending.
 */
export function listAlerts(db: Db, orgId: string, f: AlertFilter): Promise<AlertTable[]> {
  let query = db.selectFrom("alerts").selectAll().where("org_id", "=", orgId);
  if (f.statuses?.length) query = query.where("status", "in", f.statuses);
  if (f.severities?.length) query = query.where("severity", "in", f.severities as AlertTable["severity"][]);
  if (f.monitorId) query = query.where("monitor_id", "=", f.monitorId);
  if (f.groupId) query = query.where("group_id", "=", f.groupId);
  if (f.from !== undefined) query = query.where("fired_at", ">=", f.from);
  if (f.to !== undefined) query = query.where("fired_at", "<", f.to);
  if (f.q) {
    const pattern = `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // Case-insensitive for ASCII, as SQLite's LIKE is; % and _ in q match themselves.
    query = query.where(
      sql<boolean>`(summary LIKE ${pattern} ESCAPE '\\' OR reason LIKE ${pattern} ESCAPE '\\')`,
    );
  }
  if (f.after) {
    const [a, b, c] = f.after;
    query = query.where((eb) => {
      if (f.sort === "fired_at") {
        return eb.or([
          eb("fired_at", ">", a as number),
          eb.and([eb("fired_at", "=", a as number), eb("id", ">", b as string)]),
        ]);
      }
      if (f.sort === "-fired_at") {
        return eb.or([
          eb("fired_at", "<", a as number),
          eb.and([eb("fired_at", "=", a as number), eb("id", ">", b as string)]),
        ]);
      }
      const beyond = f.sort === "severity" ? ">" : "<";
      return eb.or([
        eb("severity_rank", beyond, a as number),
        eb.and([
          eb("severity_rank", "=", a as number),
          eb.or([
            eb("fired_at", "<", b as number),
            eb.and([eb("fired_at", "=", b as number), eb("id", ">", c as string)]),
          ]),
        ]),
      ]);
    });
  }
  if (f.sort === "severity" || f.sort === "-severity") {
    query = query.orderBy("severity_rank", f.sort === "severity" ? "asc" : "desc");
  }
  query = query.orderBy("fired_at", f.sort === "fired_at" ? "asc" : "desc").orderBy("id", "asc");
  return query.limit(f.limit + 1).execute();
}

/** Alerts whose escalation is due, oldest due first. */
export function dueEscalations(db: Db, now: number, limit: number): Promise<AlertTable[]> {
  return db
    .selectFrom("alerts")
    .selectAll()
    .where("escalate_at", "<=", now)
    .orderBy("escalate_at")
    .limit(limit)
    .execute();
}

/** Alerts whose automatic resolve is due. */
export function dueAutoResolves(db: Db, now: number, limit: number): Promise<AlertTable[]> {
  return db
    .selectFrom("alerts")
    .selectAll()
    .where("auto_resolve_at", "<=", now)
    .orderBy("auto_resolve_at")
    .limit(limit)
    .execute();
}
