/** Escalation policies: CRUD with the team rules, and the checks that their targets exist. */
import type { Principal } from "../accounts/access.ts";
import type { AccountsContext } from "../accounts/context.ts";
import { checkTeamExists, checkTeamWrite } from "../accounts/team-access.ts";
import type { Db } from "../db/store.ts";
import { AppError, errors, requireName } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import {
  deletePolicy,
  existingTargetIds,
  findPolicy,
  insertPolicy,
  listPolicies,
  monitorsUsingPolicy,
  setPolicyTargets,
  updatePolicy,
} from "./policies.repository.ts";
import type { EscalationPolicyTable } from "./policy.table.ts";
import { type StoredStep, type TargetType, toPolicy } from "./policy.ts";

type StepIn = { delay_seconds: number; targets: { type: TargetType; id: string }[] };

export interface PolicyCreate {
  name: string;
  team_id?: string | null;
  repeat?: number;
  steps: StepIn[];
}

export type PolicyPatch = Partial<PolicyCreate>;

/** Every target must exist in the org (users: not suspended): 400 naming the first that does not. */
async function checkTargets(db: Db, orgId: string, steps: StepIn[]): Promise<void> {
  const found = new Set<string>();
  for (const type of ["user", "schedule", "channel"] as const) {
    const ids = [...new Set(steps.flatMap((s) => s.targets.filter((t) => t.type === type).map((t) => t.id)))];
    for (const id of await existingTargetIds(db, orgId, type, ids)) found.add(`${type}:${id}`);
  }
  steps.forEach((step, i) => {
    const j = step.targets.findIndex((t) => !found.has(`${t.type}:${t.id}`));
    if (j !== -1) {
      const target = step.targets[j] as { type: TargetType };
      throw errors.field(`steps.${i}.targets.${j}.id`, `does not name a ${target.type} of this organization`);
    }
  });
}

function storeSteps(steps: StepIn[]): StoredStep[] {
  return steps.map((s) => ({ id: newId("stp"), delay_seconds: s.delay_seconds, targets: s.targets }));
}

function targetRows(steps: StoredStep[]) {
  return steps.flatMap((s) => s.targets.map((t) => ({ target_type: t.type, target_id: t.id })));
}

export class PolicyService {
  constructor(private readonly ctx: AccountsContext) {}

  async list(orgId: string, filter: { team_id?: string; limit: number; cursor: (string | number)[] | null }) {
    const rows = await listPolicies(this.ctx.store.read, orgId, {
      teamId: filter.team_id,
      afterId: filter.cursor ? String(filter.cursor[0]) : undefined,
      limit: filter.limit,
    });
    return toPage(rows, filter.limit, "policies", (r) => [r.id], toPolicy);
  }

  async get(orgId: string, id: string) {
    return toPolicy(await this.require(this.ctx.store.read, orgId, id));
  }

  async create(orgId: string, principal: Principal, input: PolicyCreate) {
    const id = newId("pol");
    await this.ctx.store.write(async (tx) => {
      await checkTeamExists(tx, orgId, input.team_id);
      await checkTeamWrite(tx, principal, [input.team_id ?? null]);
      await checkTargets(tx, orgId, input.steps);
      const steps = storeSteps(input.steps);
      const now = Date.now();
      await insertPolicy(tx, {
        id,
        org_id: orgId,
        name: requireName(input.name),
        team_id: input.team_id ?? null,
        repeat: input.repeat ?? 0,
        steps: JSON.stringify(steps),
        created_at: now,
        updated_at: now,
      });
      await setPolicyTargets(tx, id, targetRows(steps));
    });
    return this.get(orgId, id);
  }

  async update(orgId: string, principal: Principal, id: string, patch: PolicyPatch) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamExists(tx, orgId, patch.team_id);
      await checkTeamWrite(tx, principal, [
        row.team_id,
        ...(patch.team_id !== undefined ? [patch.team_id] : []),
      ]);
      const changes: Partial<EscalationPolicyTable> = { updated_at: Date.now() };
      if (patch.name !== undefined) changes.name = requireName(patch.name);
      if (patch.team_id !== undefined) changes.team_id = patch.team_id;
      if (patch.repeat !== undefined) changes.repeat = patch.repeat;
      if (patch.steps !== undefined) {
        await checkTargets(tx, orgId, patch.steps);
        const steps = storeSteps(patch.steps);
        changes.steps = JSON.stringify(steps);
        await setPolicyTargets(tx, id, targetRows(steps));
      }
      await updatePolicy(tx, id, changes);
    });
    return this.get(orgId, id);
  }

  /** Running alerts keep their snapshot; a policy that monitors still use is 409. */
  async remove(orgId: string, principal: Principal, id: string) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamWrite(tx, principal, [row.team_id]);
      const monitorIds = await monitorsUsingPolicy(tx, id);
      if (monitorIds.length > 0) {
        throw new AppError("conflict", "Monitors still use this policy; point them elsewhere first.", {
          monitor_ids: monitorIds,
        });
      }
      await deletePolicy(tx, id);
    });
  }

  private async require(db: Db, orgId: string, id: string): Promise<EscalationPolicyTable> {
    const row = await findPolicy(db, orgId, id);
    if (!row) throw errors.notFound("Escalation policy");
    return row;
  }
}
