/** SQL for organizations. */
import type { Db, Store } from "../db/store.ts";
import type { OrgTable } from "./org.table.ts";

export function findOrgById(db: Db, id: string): Promise<OrgTable | undefined> {
  return db.selectFrom("orgs").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findOrgBySlug(db: Db, slug: string): Promise<OrgTable | undefined> {
  return db.selectFrom("orgs").selectAll().where("slug", "=", slug).executeTakeFirst();
}

export function listOrgs(db: Db): Promise<OrgTable[]> {
  return db.selectFrom("orgs").selectAll().orderBy("id").execute();
}

export async function countOrgs(db: Db): Promise<number> {
  const row = await db
    .selectFrom("orgs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertOrg(db: Db, row: OrgTable): Promise<void> {
  await db.insertInto("orgs").values(row).execute();
}

export async function updateOrg(db: Db, id: string, changes: Partial<Omit<OrgTable, "id">>): Promise<void> {
  await db.updateTable("orgs").set(changes).where("id", "=", id).execute();
}

/** Updates settings only if nobody changed them since `expectedVersion`; returns whether it did. */
export async function updateSettingsIfVersion(
  db: Db,
  id: string,
  settings: string,
  expectedVersion: number | null,
  now: number,
): Promise<boolean> {
  let query = db
    .updateTable("orgs")
    .set((eb) => ({ settings, settings_version: eb("settings_version", "+", 1), updated_at: now }))
    .where("id", "=", id);
  if (expectedVersion !== null) query = query.where("settings_version", "=", expectedVersion);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function seatCounts(db: Db, orgIds: string[]): Promise<Map<string, number>> {
  if (orgIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("users")
    .select(["org_id", (eb) => eb.fn.countAll<number>().as("n")])
    .where("org_id", "in", orgIds)
    .where("status", "!=", "suspended")
    .groupBy("org_id")
    .execute();
  return new Map(rows.map((r) => [r.org_id, Number(r.n)]));
}

/**
 * The org with its seat count in one prepared statement: `GET /org` is the hottest read of
 * the API, and two Kysely queries cost several times the rest of the request.
 */
export function findOrgWithSeats(store: Store, id: string): (OrgTable & { seat_count: number }) | undefined {
  return (
    (store.reader
      .query(
        `SELECT o.*, (SELECT COUNT(*) FROM users u WHERE u.org_id = o.id AND u.status != 'suspended') AS seat_count
       FROM orgs o WHERE o.id = ?`,
      )
      .get(id) as (OrgTable & { seat_count: number }) | null) ?? undefined
  );
}
