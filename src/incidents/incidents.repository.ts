/** SQL for incidents, their links to monitors and status pages, and their updates. */
import type { Db } from "../db/store.ts";
import type { IncidentTable, IncidentUpdateTable } from "./incident.table.ts";

export function findIncident(db: Db, orgId: string, id: string): Promise<IncidentTable | undefined> {
  return db
    .selectFrom("incidents")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function listIncidents(
  db: Db,
  orgId: string,
  filter: { which: "active" | "resolved" | "all"; beforeId?: string; limit: number },
) {
  let query = db.selectFrom("incidents").selectAll().where("org_id", "=", orgId);
  if (filter.which === "active") query = query.where("status", "!=", "resolved");
  if (filter.which === "resolved") query = query.where("status", "=", "resolved");
  if (filter.beforeId) query = query.where("id", "<", filter.beforeId);
  return query
    .orderBy("id", "desc")
    .limit(filter.limit + 1)
    .execute();
}

export async function insertIncident(db: Db, row: IncidentTable): Promise<void> {
  await db.insertInto("incidents").values(row).execute();
}

export async function updateIncident(
  db: Db,
  id: string,
  changes: Partial<Omit<IncidentTable, "id" | "org_id">>,
) {
  await db.updateTable("incidents").set(changes).where("id", "=", id).execute();
}

export async function deleteIncident(db: Db, id: string): Promise<void> {
  await db.deleteFrom("incidents").where("id", "=", id).execute();
}

export async function setLinks(db: Db, incidentId: string, monitorIds?: string[], pageIds?: string[]) {
  if (monitorIds !== undefined) {
    await db.deleteFrom("incident_monitors").where("incident_id", "=", incidentId).execute();
    const unique = [...new Set(monitorIds)];
    if (unique.length) {
      await db
        .insertInto("incident_monitors")
        .values(unique.map((monitor_id) => ({ incident_id: incidentId, monitor_id })))
        .execute();
    }
  }
  if (pageIds !== undefined) {
    await db.deleteFrom("incident_status_pages").where("incident_id", "=", incidentId).execute();
    const unique = [...new Set(pageIds)];
    if (unique.length) {
      await db
        .insertInto("incident_status_pages")
        .values(unique.map((status_page_id) => ({ incident_id: incidentId, status_page_id })))
        .execute();
    }
  }
}

/** Monitor and status page ids of each incident, in two queries for a whole page. */
export async function linksOf(db: Db, incidentIds: string[]) {
  const monitors = new Map<string, string[]>(incidentIds.map((id) => [id, []]));
  const pages = new Map<string, string[]>(incidentIds.map((id) => [id, []]));
  if (incidentIds.length > 0) {
    for (const r of await db
      .selectFrom("incident_monitors")
      .selectAll()
      .where("incident_id", "in", incidentIds)
      .orderBy("monitor_id")
      .execute()) {
      monitors.get(r.incident_id)?.push(r.monitor_id);
    }
    for (const r of await db
      .selectFrom("incident_status_pages")
      .selectAll()
      .where("incident_id", "in", incidentIds)
      .orderBy("status_page_id")
      .execute()) {
      pages.get(r.incident_id)?.push(r.status_page_id);
    }
  }
  return { monitors, pages };
}

export function updatesOf(db: Db, incidentId: string): Promise<IncidentUpdateTable[]> {
  return db
    .selectFrom("incident_updates")
    .selectAll()
    .where("incident_id", "=", incidentId)
    .orderBy("id", "desc")
    .execute();
}

export function findUpdate(db: Db, incidentId: string, id: string): Promise<IncidentUpdateTable | undefined> {
  return db
    .selectFrom("incident_updates")
    .selectAll()
    .where("incident_id", "=", incidentId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export async function insertUpdate(db: Db, row: IncidentUpdateTable): Promise<void> {
  await db.insertInto("incident_updates").values(row).execute();
}

export async function changeUpdate(
  db: Db,
  id: string,
  changes: Partial<Omit<IncidentUpdateTable, "id" | "incident_id">>,
) {
  await db.updateTable("incident_updates").set(changes).where("id", "=", id).execute();
}

export async function deleteUpdate(db: Db, id: string): Promise<void> {
  await db.deleteFrom("incident_updates").where("id", "=", id).execute();
}

/** Which of `ids` name monitors of the org. */
export async function existingMonitorIds(db: Db, orgId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("monitors")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "in", ids)
    .execute();
  return rows.map((r) => r.id);
}
