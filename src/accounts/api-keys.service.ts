/** Creating, listing and revoking API keys, with the ownership rules of DESIGN §5. */
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import { checkBindableChannel } from "../notifications/channels.service.ts";
import { DAY, parseRfc3339 } from "../time.ts";
import { hasAdminPrivilege, type Principal, type Role, type Scope } from "./access.ts";
import type { ApiKeyTable } from "./api-key.table.ts";
import { toApiKey } from "./api-key.ts";
import { findKey, insertKey, listKeys, revokeKey } from "./api-keys.repository.ts";
import type { AccountsContext } from "./context.ts";
import { newApiKeySecret } from "./secrets.ts";
import { findUser } from "./users.repository.ts";

export const DEFAULT_KEY_LIFETIME_MS = 90 * DAY;

export interface NewKey {
  name: string;
  scopes: Scope[];
  /** The owning user; omitted means the caller. */
  user_id?: string;
  service?: boolean;
  /** Epoch ms; undefined means 90 days ahead, null means never. */
  expires_at?: number | null;
  /** A cloudevents channel the key consumes for. */
  channel_id?: string | null;
}

/**
 * `expires_at` as the API takes it (RFC 3339, null for never, absent for the default) in the
 * form of `NewKey`. The request schema has already checked the format.
 */
export function expiresAtFromApi(value: string | null | undefined): number | null | undefined {
  if (value == null) return value;
  const ms = parseRfc3339(value);
  if (ms === null) throw errors.field("expires_at", "must be an RFC 3339 timestamp");
  return ms;
}

/** Inserts a key inside the caller's transaction; the clear secret is returned once. */
export async function insertApiKey(
  db: Db,
  orgId: string,
  input: Omit<NewKey, "user_id"> & { user_id: string | null },
  now = Date.now(),
) {
  if (input.channel_id) await checkBindableChannel(db, orgId, input.channel_id);
  const secret = newApiKeySecret();
  const row: ApiKeyTable = {
    id: newId("key"),
    org_id: orgId,
    user_id: input.service ? null : input.user_id,
    service: input.service ? 1 : 0,
    name: input.name,
    prefix: secret.prefix,
    secret_hash: secret.hash,
    scopes: [...new Set(input.scopes)].join(","),
    expires_at: input.expires_at === undefined ? now + DEFAULT_KEY_LIFETIME_MS : input.expires_at,
    revoked_at: null,
    last_used_at: null,
    created_at: now,
    channel_id: input.channel_id ?? null,
  };
  await insertKey(db, row);
  return { ...toApiKey(row), secret: secret.secret };
}

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** Whether the principal's own rank reaches `role` (a service key ranks as an admin). */
function outranksOrEquals(principal: Principal, role: Role): boolean {
  const rank = principal.role === null ? RANK.admin : RANK[principal.role];
  return rank >= RANK[role];
}

export class ApiKeyService {
  constructor(private readonly ctx: AccountsContext) {}

  /** Validates ownership and creates the key. `principal` null means the operator CLI. */
  async create(orgId: string, principal: Principal | null, input: NewKey) {
    const now = Date.now();
    if (input.expires_at != null && input.expires_at <= now)
      throw errors.field("expires_at", "must be in the future");
    if (input.scopes.length === 0) throw errors.field("scopes", "must name at least one scope");
    if (input.service && input.user_id) throw errors.field("service", "a service key has no user_id");
    const ownerId = input.service ? null : (input.user_id ?? principal?.userId ?? null);
    if (!input.service && ownerId === null)
      throw errors.field("user_id", "is required for a key not marked service");
    const forSomeoneElse = input.service || ownerId !== principal?.userId;
    if (principal && forSomeoneElse && !hasAdminPrivilege(principal)) {
      throw errors.forbiddenRole("Only an owner or admin can create keys for others or service keys.");
    }
    return this.ctx.store.write(async (tx) => {
      if (ownerId !== null) {
        const owner = await findUser(tx, orgId, ownerId);
        if (!owner) throw errors.field("user_id", "does not name a user of this organization");
        if (owner.status === "suspended") throw errors.field("user_id", "names a suspended user");
        // A key acts as its user: nobody may mint one for a user who outranks them.
        if (principal && owner.id !== principal.userId && !outranksOrEquals(principal, owner.role)) {
          throw errors.forbiddenRole("You cannot create a key for a user whose role is above yours.");
        }
      }
      return insertApiKey(tx, orgId, { ...input, user_id: ownerId }, now);
    });
  }

  async list(orgId: string, principal: Principal | null, limit: number, cursor: (string | number)[] | null) {
    const seeAll = principal === null || hasAdminPrivilege(principal);
    const rows = await listKeys(this.ctx.store.read, orgId, {
      userId: seeAll ? undefined : (principal?.userId ?? undefined),
      beforeId: cursor ? String(cursor[0]) : undefined,
      limit,
    });
    return toPage(rows, limit, "api_keys", (r) => [r.id], toApiKey);
  }

  async get(orgId: string, principal: Principal | null, id: string) {
    const row = await findKey(this.ctx.store.read, orgId, id);
    if (!row || !this.mayManage(principal, row)) throw errors.notFound("API key");
    return toApiKey(row);
  }

  async revoke(orgId: string, principal: Principal | null, id: string) {
    return this.ctx.store.write(async (tx) => {
      const row = await findKey(tx, orgId, id);
      if (!row || !this.mayManage(principal, row)) throw errors.notFound("API key");
      const now = Date.now();
      await revokeKey(tx, id, now);
      return { id, revoked_at: new Date(row.revoked_at ?? now).toISOString() };
    });
  }

  /** Admins manage every key; others only their own (another's key is a 404 to them). */
  private mayManage(principal: Principal | null, row: ApiKeyTable): boolean {
    return (
      principal === null ||
      hasAdminPrivilege(principal) ||
      (row.user_id !== null && row.user_id === principal.userId)
    );
  }
}
