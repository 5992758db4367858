/** SQL for status pages. */
import type { Db } from "../db/store.ts";
import type { StatusPageTable } from "./status-page.table.ts";

export function findPage(db: Db, orgId: string, id: string) {
  return db
    .selectFrom("status_pages")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export async function slugTaken(
  db: Db,
  orgId: string,
  slug: string,
  selfId: string | null,
): Promise<boolean> {
  const row = await db
    .selectFrom("status_pages")
    .select("id")
    .where("org_id", "=", orgId)
    .where("slug", "=", slug)
    .executeTakeFirst();
  return row !== undefined && row.id !== selfId;
}

/** Which of `ids` name status pages of the org. */
export async function existingPageIds(db: Db, orgId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("status_pages")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "in", ids)
    .execute();
  return rows.map((r) => r.id);
}

export async function insertPage(db: Db, row: StatusPageTable): Promise<void> {
  await db.insertInto("status_pages").values(row).execute();
}

export async function updatePage(
  db: Db,
  id: string,
  changes: Partial<Omit<StatusPageTable, "id" | "org_id">>,
) {
  await db.updateTable("status_pages").set(changes).where("id", "=", id).execute();
}

export async function deletePage(db: Db, id: string): Promise<void> {
  await db.deleteFrom("status_pages").where("id", "=", id).execute();
}

export function listPages(db: Db, orgId: string, afterId: string | undefined, limit: number) {
  let query = db.selectFrom("status_pages").selectAll().where("org_id", "=", orgId);
  if (afterId) query = query.where("id", ">", afterId);
  return query
    .orderBy("id")
    .limit(limit + 1)
    .execute();
}

export function findPageBySlugs(db: Db, orgSlug: string, pageSlug: string) {
  return db
    .selectFrom("status_pages")
    .innerJoin("orgs", "orgs.id", "status_pages.org_id")
    .selectAll("status_pages")
    .where("orgs.slug", "=", orgSlug)
    .where("status_pages.slug", "=", pageSlug)
    .executeTakeFirst();
}

/** The page's incidents that are active or were resolved since `resolvedSince`. */
export function incidentsOnPage(db: Db, pageId: string, resolvedSince: number) {
  return db
    .selectFrom("incident_status_pages")
    .innerJoin("incidents", "incidents.id", "incident_status_pages.incident_id")
    .selectAll("incidents")
    .where("incident_status_pages.status_page_id", "=", pageId)
    .where((eb) =>
      eb.or([eb("incidents.status", "!=", "resolved"), eb("incidents.resolved_at", ">=", resolvedSince)]),
    )
    .orderBy("incidents.started_at", "desc")
    .execute();
}

/** The public updates of some incidents, newest first. */
export function publicUpdatesOf(db: Db, incidentIds: string[]) {
  if (incidentIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom("incident_updates")
    .selectAll()
    .where("incident_id", "in", incidentIds)
    .where("public", "=", 1)
    .orderBy("id", "desc")
    .execute();
}
