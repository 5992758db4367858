/** SQL for API keys. */
import type { Db, Store } from "../db/store.ts";
import type { Role } from "./access.ts";
import type { ApiKeyTable } from "./api-key.table.ts";
import type { UserStatus } from "./user.table.ts";

export function findKey(db: Db, orgId: string, id: string): Promise<ApiKeyTable | undefined> {
  return db
    .selectFrom("api_keys")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function findKeyById(db: Db, id: string): Promise<ApiKeyTable | undefined> {
  return db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
}

/** A key as authentication needs it: its columns and, for an owner-bound key, its user's role and status. */
export interface KeyWithOwner
  extends Pick<
    ApiKeyTable,
    "id" | "org_id" | "user_id" | "secret_hash" | "scopes" | "expires_at" | "revoked_at" | "channel_id"
  > {
  role: Role | null;
  status: UserStatus | null;
}

/**
 * The keys with this prefix and their owners, in one prepared statement: every request with an
 * API key that is not cached runs it, and a Kysely query costs several times as much.
 */
export function findKeysWithOwnerByPrefix(store: Store, prefix: string): KeyWithOwner[] {
  return store.reader
    .query(
      `SELECT k.id, k.org_id, k.user_id, k.secret_hash, k.scopes, k.expires_at, k.revoked_at, k.channel_id, u.role, u.status
       FROM api_keys k LEFT JOIN users u ON u.id = k.user_id WHERE k.prefix = ?`,
    )
    .all(prefix) as KeyWithOwner[];
}

export function listKeys(
  db: Db,
  orgId: string,
  filter: { userId?: string; beforeId?: string; limit: number },
): Promise<ApiKeyTable[]> {
  let query = db.selectFrom("api_keys").selectAll().where("org_id", "=", orgId);
  if (filter.userId) query = query.where("user_id", "=", filter.userId);
  if (filter.beforeId) query = query.where("id", "<", filter.beforeId);
  return query
    .orderBy("id", "desc")
    .limit(filter.limit + 1)
    .execute();
}

/** Keys that can still be used, for the expiry gauge. */
export function liveKeys(db: Db): Promise<Pick<ApiKeyTable, "id" | "org_id" | "expires_at">[]> {
  return db
    .selectFrom("api_keys")
    .select(["id", "org_id", "expires_at"])
    .where("revoked_at", "is", null)
    .execute();
}

export async function insertKey(db: Db, row: ApiKeyTable): Promise<void> {
  await db.insertInto("api_keys").values(row).execute();
}

export async function revokeKey(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("id", "=", id)
    .where("revoked_at", "is", null)
    .execute();
}

export async function revokeKeysOfUser(db: Db, userId: string, now: number): Promise<void> {
  await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .execute();
}

export async function touchKeys(db: Db, ids: string[], now: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable("api_keys").set({ last_used_at: now }).where("id", "in", ids).execute();
}
