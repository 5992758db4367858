/** SQL for escalation policies and the index of what they target. */
import type { Db } from "../db/store.ts";
import type { EscalationPolicyTable, EscalationPolicyTargetTable } from "./policy.table.ts";
import type { TargetType } from "./policy.ts";

export function findPolicy(db: Db, orgId: string, id: string): Promise<EscalationPolicyTable | undefined> {
  return db
    .selectFrom("escalation_policies")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function listPolicies(
  db: Db,
  orgId: string,
  filter: { teamId?: string; afterId?: string; limit: number },
) {
  let query = db.selectFrom("escalation_policies").selectAll().where("org_id", "=", orgId);
  if (filter.teamId) query = query.where("team_id", "=", filter.teamId);
  if (filter.afterId) query = query.where("id", ">", filter.afterId);
  return query
    .orderBy("id")
    .limit(filter.limit + 1)
    .execute();
}

export async function insertPolicy(db: Db, row: EscalationPolicyTable): Promise<void> {
  await db.insertInto("escalation_policies").values(row).execute();
}

export async function updatePolicy(
  db: Db,
  id: string,
  changes: Partial<Omit<EscalationPolicyTable, "id" | "org_id">>,
): Promise<void> {
  await db.updateTable("escalation_policies").set(changes).where("id", "=", id).execute();
}

export async function deletePolicy(db: Db, id: string): Promise<void> {
  await db.deleteFrom("escalation_policies").where("id", "=", id).execute();
}

export async function setPolicyTargets(
  db: Db,
  policyId: string,
  targets: Omit<EscalationPolicyTargetTable, "policy_id">[],
): Promise<void> {
  await db.deleteFrom("escalation_policy_targets").where("policy_id", "=", policyId).execute();
  const unique = [...new Map(targets.map((t) => [`${t.target_type}:${t.target_id}`, t])).values()];
  if (unique.length > 0) {
    await db
      .insertInto("escalation_policy_targets")
      .values(unique.map((t) => ({ policy_id: policyId, ...t })))
      .execute();
  }
}

/** Policies whose steps name the target. */
export async function policiesTargeting(
  db: Db,
  type: "user" | "schedule" | "channel",
  id: string,
): Promise<string[]> {
  const rows = await db
    .selectFrom("escalation_policy_targets")
    .select("policy_id")
    .where("target_type", "=", type)
    .where("target_id", "=", id)
    .orderBy("policy_id")
    .execute();
  return rows.map((r) => r.policy_id);
}

/** Monitors that use the policy. */
export async function monitorsUsingPolicy(db: Db, policyId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("monitors")
    .select("id")
    .where("escalation_policy_id", "=", policyId)
    .orderBy("id")
    .execute();
  return rows.map((r) => r.id);
}

/** Which of `ids` name a target of the type in the org (users: not suspended). */
export async function existingTargetIds(
  db: Db,
  orgId: string,
  type: TargetType,
  ids: string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows =
    type === "user"
      ? await db
          .selectFrom("users")
          .select("id")
          .where("org_id", "=", orgId)
          .where("id", "in", ids)
          .where("status", "!=", "suspended")
          .execute()
      : await db
          .selectFrom(type === "schedule" ? "schedules" : "notification_channels")
          .select("id")
          .where("org_id", "=", orgId)
          .where("id", "in", ids)
          .execute();
  return rows.map((r) => r.id);
}
