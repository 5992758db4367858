/**
 * What an org's plan allows on the CloudEvents plane (DESIGN §7). The `cloud` edition enforces
 * plans; the `oss` edition is tier-blind and takes every limit from `limits.*` and
 * `retention.*` in the configuration.
 */
import type { AccountsContext } from "../accounts/context.ts";
import type { Plan } from "../accounts/org.ts";
import { findOrgById } from "../accounts/orgs.repository.ts";
import { parseSettings, type Settings } from "../accounts/settings.ts";
import type { Config } from "../config.ts";
import { AppError, errors } from "../errors.ts";

export interface PlaneLimits {
  pollPerMinute: number;
  streamsPerOrg: number;
  repliesRetentionDays: number;
}

const CLOUD_PLANS: Record<Exclude<Plan, "free">, PlaneLimits> = {
  pro: { pollPerMinute: 30, streamsPerOrg: 5, repliesRetentionDays: 30 },
  enterprise: { pollPerMinute: 60, streamsPerOrg: 10, repliesRetentionDays: 365 },
};

/** Replies stay visible for this long on each plan, Free included (its feed is gated). */
const FREE_REPLIES_RETENTION_DAYS = 7;

export function planeLimits(config: Config, plan: Plan): PlaneLimits {
  if (config.edition === "oss" || plan === "free") {
    return {
      pollPerMinute: config.limits.poll_per_minute,
      streamsPerOrg: config.limits.streams_per_org,
      repliesRetentionDays:
        config.edition === "oss" ? config.retention.replies_days : FREE_REPLIES_RETENTION_DAYS,
    };
  }
  return CLOUD_PLANS[plan];
}

/** 402 `plan_gate_blocked` for a Free org in the `cloud` edition; called after authentication. */
export function checkPlanGate(config: Config, plan: Plan): void {
  if (config.edition === "cloud" && plan === "free") {
    throw new AppError(
      "plan_gate_blocked",
      "The CloudEvents plane is not part of the Free plan; upgrade to Pro or Enterprise.",
      { plan, required_plans: ["pro", "enterprise"] },
    );
  }
}

/** The caller's org for an endpoint of the plane, after the plan gate. */
export async function gatedOrg(
  ctx: AccountsContext,
  orgId: string,
): Promise<{ id: string; plan: Plan; settings: Settings }> {
  const org = await findOrgById(ctx.store.read, orgId);
  if (!org) throw errors.unauthenticated();
  checkPlanGate(ctx.config, org.plan);
  return { id: org.id, plan: org.plan, settings: parseSettings(org.settings) };
}
