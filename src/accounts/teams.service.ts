/** Teams and their members. */
import type { Db } from "../db/store.ts";
import { AppError, errors } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { firstUnknownId, newId } from "../ids.ts";
import type { AccountsContext } from "./context.ts";
import { toTeam } from "./team.ts";
import {
  deleteTeam,
  findTeam,
  findTeamByName,
  insertTeam,
  listTeams,
  memberIdsByTeam,
  renameTeam,
  setTeamMembers,
} from "./teams.repository.ts";
import { existingUserIds } from "./users.repository.ts";

export class TeamService {
  constructor(private readonly ctx: AccountsContext) {}

  async list(orgId: string, limit: number, cursor: (string | number)[] | null) {
    const db = this.ctx.store.read;
    const rows = await listTeams(db, orgId, cursor ? String(cursor[0]) : undefined, limit);
    const page = toPage(
      rows,
      limit,
      "teams",
      (r) => [r.id],
      (r) => r,
    );
    const members = await memberIdsByTeam(
      db,
      page.data.map((t) => t.id),
    );
    return { ...page, data: page.data.map((t) => toTeam(t, members.get(t.id) ?? [])) };
  }

  async get(orgId: string, id: string) {
    const db = this.ctx.store.read;
    const team = await findTeam(db, orgId, id);
    if (!team) throw errors.notFound("Team");
    const members = await memberIdsByTeam(db, [id]);
    return toTeam(team, members.get(id) ?? []);
  }

  async create(orgId: string, input: { name: string; member_ids?: string[] }) {
    const name = input.name.trim();
    const id = newId("team");
    await this.ctx.store.write(async (tx) => {
      await checkUnique(tx, orgId, name, null);
      await checkMembers(tx, orgId, input.member_ids ?? []);
      await insertTeam(tx, { id, org_id: orgId, name, created_at: Date.now() });
      await setTeamMembers(tx, id, [...new Set(input.member_ids ?? [])]);
    });
    return this.get(orgId, id);
  }

  async update(orgId: string, id: string, input: { name?: string; member_ids?: string[] }) {
    await this.ctx.store.write(async (tx) => {
      if (!(await findTeam(tx, orgId, id))) throw errors.notFound("Team");
      if (input.name !== undefined) {
        const name = input.name.trim();
        await checkUnique(tx, orgId, name, id);
        await renameTeam(tx, id, name);
      }
      if (input.member_ids !== undefined) {
        await checkMembers(tx, orgId, input.member_ids);
        await setTeamMembers(tx, id, [...new Set(input.member_ids)]);
      }
    });
    return this.get(orgId, id);
  }

  async remove(orgId: string, id: string) {
    await this.ctx.store.write(async (tx) => {
      if (!(await findTeam(tx, orgId, id))) throw errors.notFound("Team");
      await deleteTeam(tx, id);
    });
  }
}

async function checkUnique(db: Db, orgId: string, name: string, selfId: string | null) {
  if (!name) throw errors.field("name", "must not be empty");
  const existing = await findTeamByName(db, orgId, name);
  if (existing && existing.id !== selfId)
    throw new AppError("conflict", `A team named '${name}' already exists.`);
}

async function checkMembers(db: Db, orgId: string, userIds: string[]) {
  const index = await firstUnknownId(userIds, (unique) => existingUserIds(db, orgId, unique));
  if (index !== -1) throw errors.field(`member_ids.${index}`, "does not name a user of this organization");
}
