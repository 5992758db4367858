/**
 * Each org's unpaused event monitors that have a CloudEvents type glob, as ingest matches events
 * against them. Kept in memory, since the list was a query inside every ingest transaction.
 * A list is read inside a write unit (the writer's view) and kept only once that unit commits;
 * a unit that creates, changes or deletes one of the org's monitors drops it once it commits.
 * Commit hooks run in unit order, so the kept list is never older than the last committed change.
 */

import { globToRegExp } from "../cloudevents/filter.ts";
import type { Db, Store } from "../db/store.ts";
import type { MonitorTable } from "./monitor.table.ts";
import { activeEventMonitors } from "./monitors.repository.ts";

export interface EventMonitor {
  id: string;
  matches: RegExp;
}

export class EventMonitorIndex {
  private readonly byOrg = new Map<string, EventMonitor[]>();

  constructor(private readonly store: Store) {}

  /** The org's event monitors; called inside a write unit. */
  async forOrg(tx: Db, orgId: string): Promise<EventMonitor[]> {
    const kept = this.byOrg.get(orgId);
    if (kept) return kept;
    const list = (await activeEventMonitors(tx, orgId)).flatMap(eventMonitor);
    this.store.afterCommit(() => this.byOrg.set(orgId, list));
    return list;
  }

  /** Called inside the write unit that creates, changes or deletes a monitor of `orgId`. */
  changedAfterCommit(orgId: string): void {
    this.store.afterCommit(() => this.byOrg.delete(orgId));
  }
}

function eventMonitor(row: MonitorTable): EventMonitor[] {
  const glob = (JSON.parse(row.config) as { cloudevents_type?: string }).cloudevents_type;
  return glob ? [{ id: row.id, matches: new RegExp(`^${globToRegExp(glob)}$`) }] : [];
}
