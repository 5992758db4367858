/**
 * Retention of the event log (DESIGN §2: `retention.events_days`, which org settings may
 * shorten). Old events go in chunks, each its own small transaction, so writers queue behind a
 * chunk at most; the org's horizon records the last seq removed, which makes older cursors 410.
 */
import { sql } from "kysely";
import type { Store } from "../db/store.ts";
import { DAY } from "../time.ts";
import { firstSeqAtOrAfter } from "./log.repository.ts";

const CHUNK = 2000;

/** Removes the org's events written before `now - days`; returns how many went. */
export async function pruneEvents(store: Store, orgId: string, days: number, now: number): Promise<number> {
  const cut = firstSeqAtOrAfter(store, now - days * DAY);
  let removed = 0;
  for (;;) {
    const count = await store.write(async (tx) => {
      const chunkEnd = await tx
        .selectFrom("events")
        .select("seq")
        .where("org_id", "=", orgId)
        .where("seq", "<", cut)
        .orderBy("seq")
        .offset(CHUNK - 1)
        .limit(1)
        .executeTakeFirst();
      // The horizon is the org's own last removed event: a consumer that had read it lost nothing.
      const last =
        chunkEnd ??
        (await tx
          .selectFrom("events")
          .select((eb) => eb.fn.max("seq").as("seq"))
          .where("org_id", "=", orgId)
          .where("seq", "<", cut)
          .executeTakeFirst());
      if (last?.seq == null) return 0;
      const through = last.seq;
      const result = await tx
        .deleteFrom("events")
        .where("org_id", "=", orgId)
        .where("seq", "<=", through)
        .executeTakeFirst();
      const deleted = Number(result.numDeletedRows);
      if (deleted > 0) {
        await tx
          .insertInto("event_horizons")
          .values({ org_id: orgId, pruned_through: through })
          .onConflict((oc) =>
            oc
              .column("org_id")
              .doUpdateSet({ pruned_through: sql`max(pruned_through, excluded.pruned_through)` }),
          )
          .execute();
      }
      return deleted;
    });
    removed += count;
    if (count < CHUNK) return removed;
  }
}
