/** Users: invitations, roles and status, deletion, and password-reset requests. */
import type { Db } from "../db/store.ts";
import { AppError, errors } from "../errors.ts";
import { policiesTargeting } from "../escalation/policies.repository.ts";
import { toPage } from "../http/pagination.ts";
import { enqueueEmail } from "../mail/outbox.ts";
import { inviteEmail, resetEmail } from "../mail/templates.ts";
import { userReferences } from "../schedules/schedules.repository.ts";
import { DAY, HOUR, iso } from "../time.ts";
import { hasAdminPrivilege, type Principal, type Role } from "./access.ts";
import { revokeKeysOfUser } from "./api-keys.repository.ts";
import type { AccountsContext } from "./context.ts";
import type { OrgTable } from "./org.table.ts";
import { findOrgById } from "./orgs.repository.ts";
import { newLinkToken } from "./secrets.ts";
import { checkTeamIds } from "./team-access.ts";
import type { UserStatus, UserTable } from "./user.table.ts";
import { newUserRow, normalizeEmail, toUser } from "./user.ts";
import {
  bumpSessionVersion,
  deleteUser,
  findUser,
  findUserByEmail,
  insertUser,
  listUsers,
  setUserTeams,
  teamIdsByUser,
  updateUser,
} from "./users.repository.ts";

export const INVITE_TTL_MS = 7 * DAY;
export const RESET_TTL_MS = HOUR;

/** Issues single-use invite links and sends them through the outbox. */
export class InviteService {
  constructor(private readonly ctx: AccountsContext) {}

  /** A fresh invite for `user` (the previous link stops working), emailed through the outbox. */
  async issue(
    tx: Db,
    org: Pick<OrgTable, "id" | "name">,
    user: Pick<UserTable, "id" | "email">,
    now = Date.now(),
  ) {
    const link = newLinkToken();
    const expiresAt = now + INVITE_TTL_MS;
    await updateUser(tx, user.id, { invite_token_hash: link.hash, invite_expires_at: expiresAt });
    const url = `${this.ctx.config.base_url}/accept-invite?token=${link.token}`;
    const email = inviteEmail(org.id, org.name, user.email, url, iso(expiresAt));
    await enqueueEmail(tx, email, now);
    this.ctx.store.afterCommit(() =>
      this.ctx.log.info("email queued", {
        kind: "invite",
        to: email.to,
        subject: email.subject,
        org_id: org.id,
      }),
    );
    return { invite_token: link.token, invite_url: url, expires_at: iso(expiresAt) };
  }
}

export async function withTeams(db: Db, rows: UserTable[]) {
  const teams = await teamIdsByUser(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toUser(r, teams.get(r.id) ?? []));
}

export interface UserChanges {
  name?: string;
  role?: Role;
  status?: UserStatus;
  team_ids?: string[];
}

export class UserService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly invites: InviteService,
  ) {}

  async list(
    orgId: string,
    filter: { role?: string; status?: string; limit: number; cursor: (string | number)[] | null },
  ) {
    const db = this.ctx.store.read;
    const rows = await listUsers(db, orgId, {
      ...filter,
      afterId: filter.cursor ? String(filter.cursor[0]) : undefined,
    });
    const page = toPage(
      rows,
      filter.limit,
      "users",
      (r) => [r.id],
      (r) => r,
    );
    return { ...page, data: await withTeams(db, page.data) };
  }

  async get(orgId: string, id: string) {
    const row = await findUser(this.ctx.store.read, orgId, id);
    if (!row) throw errors.notFound("User");
    return (await withTeams(this.ctx.store.read, [row]))[0];
  }

  async getByEmail(orgId: string, email: string): Promise<UserTable> {
    const row = await findUserByEmail(this.ctx.store.read, orgId, normalizeEmail(email));
    if (!row) throw errors.notFound(`User '${email}'`);
    return row;
  }

  async invite(orgId: string, input: { email: string; name?: string; role: Role; team_ids?: string[] }) {
    if (input.role === "owner") throw errors.field("role", "cannot be owner; transfer ownership instead");
    const email = normalizeEmail(input.email);
    return this.ctx.store.write(async (tx) => {
      const org = await findOrgById(tx, orgId);
      if (!org) throw errors.notFound("Organization");
      if (await findUserByEmail(tx, orgId, email)) {
        throw new AppError("conflict", `A user with the email '${email}' already exists.`);
      }
      await checkTeamIds(tx, orgId, input.team_ids ?? []);
      const now = Date.now();
      const row = newUserRow({ orgId, email, name: input.name?.trim() ?? "", role: input.role, now });
      const teamIds = [...new Set(input.team_ids ?? [])].sort();
      await insertUser(tx, row);
      await setUserTeams(tx, row.id, teamIds);
      await this.invites.issue(tx, org, row, now);
      return toUser(row, teamIds);
    });
  }

  async update(orgId: string, id: string, changes: UserChanges) {
    if (changes.role === "owner") throw errors.field("role", "cannot be owner; transfer ownership instead");
    await this.ctx.store.write(async (tx) => {
      const user = await findUser(tx, orgId, id);
      if (!user) throw errors.notFound("User");
      if (
        user.role === "owner" &&
        ((changes.role && changes.role !== "owner") || changes.status === "suspended")
      ) {
        throw new AppError(
          "owner_protected",
          "The owner cannot be demoted or suspended; transfer ownership first.",
        );
      }
      const set: Partial<UserTable> = {};
      if (changes.name !== undefined) set.name = changes.name.trim();
      if (changes.role !== undefined) set.role = changes.role;
      if (changes.status !== undefined && changes.status !== user.status) {
        set.status = this.nextStatus(user, changes.status);
        if (set.status === "suspended") {
          // Sessions, keys and a pending invite all stop; a restored invitee needs a fresh link.
          await bumpSessionVersion(tx, id);
          set.invite_token_hash = null;
          set.invite_expires_at = null;
        }
      }
      if (Object.keys(set).length > 0) await updateUser(tx, id, set);
      if (changes.team_ids !== undefined) {
        await checkTeamIds(tx, orgId, changes.team_ids);
        await setUserTeams(tx, id, [...new Set(changes.team_ids)]);
      }
    });
    return this.get(orgId, id);
  }

  /**
   * `suspended` stops sessions, keys and a pending invite. `active` restores a user who finished
   * sign-up; an invited user becomes active only by accepting (409 `invite_pending`), and a
   * suspended user who never signed up goes back to `invited`.
   */
  private nextStatus(user: UserTable, wanted: UserStatus): UserStatus {
    if (wanted === "suspended") return "suspended";
    if (wanted === "invited")
      throw errors.field("status", "cannot be set to invited; send a new invite instead");
    if (user.signed_up_at !== null) return "active";
    if (user.status === "suspended") return "invited";
    throw new AppError("invite_pending", "This user has not accepted the invite yet.");
  }

  async remove(orgId: string, id: string) {
    await this.ctx.store.write(async (tx) => {
      const user = await findUser(tx, orgId, id);
      if (!user) throw errors.notFound("User");
      if (user.role === "owner")
        throw new AppError("owner_protected", "The owner cannot be deleted; transfer ownership first.");
      const references = {
        ...(await userReferences(tx, id, Date.now())),
        policy_ids: await policiesTargeting(tx, "user", id),
      };
      if (Object.values(references).some((ids) => ids.length > 0)) {
        throw new AppError(
          "user_in_use",
          "This user is still named in a schedule, a future override or an escalation policy; take them out first.",
          references,
        );
      }
      await revokeKeysOfUser(tx, id, Date.now());
      await deleteUser(tx, id);
    });
  }

  /** Emails a single-use reset link. Admins may reset anyone; others only themselves. */
  async requestReset(orgId: string, principal: Principal, id: string) {
    if (!hasAdminPrivilege(principal) && principal.userId !== id) {
      throw errors.forbiddenRole("Only an owner or admin can reset another user's password.");
    }
    await this.ctx.store.write(async (tx) => {
      const user = await findUser(tx, orgId, id);
      if (!user) throw errors.notFound("User");
      if (user.signed_up_at === null)
        throw new AppError("invite_pending", "This user has not accepted the invite yet.");
      if (user.status === "suspended")
        throw new AppError("conflict", "A suspended user cannot reset a password.");
      const org = await findOrgById(tx, orgId);
      const link = newLinkToken();
      const now = Date.now();
      const expiresAt = now + RESET_TTL_MS;
      await updateUser(tx, id, { reset_token_hash: link.hash, reset_expires_at: expiresAt });
      const url = `${this.ctx.config.base_url}/reset-password?token=${link.token}`;
      const email = resetEmail(orgId, org?.name ?? "svc", user.email, url, iso(expiresAt));
      await enqueueEmail(tx, email, now);
      this.ctx.store.afterCommit(() =>
        this.ctx.log.info("email queued", {
          kind: "password_reset",
          to: email.to,
          subject: email.subject,
          org_id: orgId,
        }),
      );
    });
  }

  /** A fresh invite link for a user who has not finished sign-up (for hosts without SMTP). */
  async inviteLink(orgId: string, email: string) {
    const user = await this.getByEmail(orgId, email);
    if (user.signed_up_at !== null) throw new AppError("conflict", "This user has already finished sign-up.");
    if (user.status === "suspended") throw new AppError("conflict", "This user is suspended.");
    return this.ctx.store.write(async (tx) => {
      const org = await findOrgById(tx, orgId);
      if (!org) throw errors.notFound("Organization");
      return this.invites.issue(tx, org, user);
    });
  }
}
