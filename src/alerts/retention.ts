/**
 * Retention of alerts (DESIGN §2 `retention.alerts_days`, 0 = keep; org settings may shorten
 * it). A resolved alert whose resolve is older than the limit goes, with its timeline (cascade)
 * and its notification deliveries. Open alerts stay whatever their age, and so does an alert
 * resolved by hand while its source still reports the problem (`source_down = 1`): that row is
 * what holds back a new page for its dedup key, so removing it would page again. An alert with a
 * notification still pending (a server that was down for long) waits until it is sent or dead.
 * Chunks are small transactions, so writers wait behind one chunk at most.
 */
import type { AccountsContext } from "../accounts/context.ts";
import { listOrgs } from "../accounts/orgs.repository.ts";
import { parseSettings, retentionDays } from "../accounts/settings.ts";
import type { Store } from "../db/store.ts";
import { DAY } from "../time.ts";

/** Each alert takes its timeline rows along: a chunk stays a few thousand rows. */
const CHUNK = 500;

/** Every org's old resolved alerts, by its own limit or the server's. */
export async function pruneAllAlerts(ctx: AccountsContext, now: number): Promise<void> {
  for (const org of await listOrgs(ctx.store.read)) {
    const days = retentionDays(
      parseSettings(org.settings).retention.alerts_days,
      ctx.config.retention.alerts_days,
    );
    if (days <= 0) continue;
    const removed = await pruneAlerts(ctx.store, org.id, days, now);
    if (removed > 0) ctx.log.info("alerts pruned", { org_id: org.id, alerts: removed, days });
  }
}

/** Removes the org's alerts resolved before `now - days`; returns how many went. */
export async function pruneAlerts(store: Store, orgId: string, days: number, now: number): Promise<number> {
  const cut = now - days * DAY;
  let removed = 0;
  for (;;) {
    const count = await store.write(async (tx) => {
      // fired_at ≤ resolved_at, so the (org, status, fired_at) index bounds the scan.
      const ids = (
        await tx
          .selectFrom("alerts")
          .select("id")
          .where("org_id", "=", orgId)
          .where("status", "=", "resolved")
          .where("fired_at", "<", cut)
          .where("resolved_at", "<", cut)
          // Kept: resolved by hand while the source still reports the problem, the state in
          // which a new trigger is held back (only ever the newest alert of its dedup key).
          .where((eb) => eb.or([eb("source_down", "=", 0), eb("resolved_by", "like", "monitor:%")]))
          // Kept while a notification of it is still to be sent (a server down for long).
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("notification_deliveries as d")
                  .select("d.id")
                  .whereRef("d.alert_id", "=", "alerts.id")
                  .where("d.status", "=", "pending"),
              ),
            ),
          )
          .orderBy("fired_at")
          .limit(CHUNK)
          .execute()
      ).map((row) => row.id);
      if (ids.length === 0) return 0;
      await tx.deleteFrom("notification_deliveries").where("alert_id", "in", ids).execute();
      await tx.deleteFrom("alerts").where("id", "in", ids).execute();
      return ids.length;
    });
    removed += count;
    if (count < CHUNK) return removed;
  }
}
