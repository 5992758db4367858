/**
 * The retention job of the CloudEvents plane: each org's event log by `events_days`, its reply
 * audit records by plan (DESIGN §7), and consumers nobody has used for longer than the log.
 */
import type { AccountsContext } from "../accounts/context.ts";
import { listOrgs } from "../accounts/orgs.repository.ts";
import { parseSettings, retentionDays } from "../accounts/settings.ts";
import { pruneEvents } from "../events/retention.ts";
import { DAY } from "../time.ts";
import { pruneConsumers } from "./consumers.repository.ts";
import { planeLimits } from "./plans.ts";
import type { ReplyDispatcher } from "./replies.ts";

export async function pruneCloudEvents(
  ctx: AccountsContext,
  replies: ReplyDispatcher,
  now: number,
): Promise<void> {
  const { config, store } = ctx;
  for (const org of await listOrgs(store.read)) {
    const days = retentionDays(
      parseSettings(org.settings).retention.events_days,
      config.retention.events_days,
    );
    const removed = await pruneEvents(store, org.id, days, now);
    if (removed > 0) ctx.log.info("event log pruned", { org_id: org.id, events: removed, days });
    await replies.prune(org.id, planeLimits(config, org.plan).repliesRetentionDays, now);
  }
  await store.write((tx) => pruneConsumers(tx, now - config.retention.events_days * DAY));
}
