/**
 * Fan-out of the event log to live consumers. After every commit the broker reads the new
 * events once (one indexed range read, whatever the number of consumers) and hands each org's
 * events to the consumers of that org in memory: a waiting poll or an open stream is woken by
 * the commit, and no consumer ever polls the database.
 */
import type { Store } from "../db/store.ts";
import { eventsAfter, type LogEntry, newestSeq } from "./log.repository.ts";

export type EventListener = (entries: readonly LogEntry[]) => void;

const TAIL_PAGE = 5000;

export class EventBroker {
  private readonly listeners = new Map<string, Set<EventListener>>();
  /** The highest seq handed out; meaningful only while someone listens. */
  private lastSeq = 0;

  constructor(private readonly store: Store) {
    store.onCommit(() => this.fanOut());
  }

  /**
   * Calls `listener` with every event of `orgId` committed from now on. Synchronous: a caller
   * that reads the log and subscribes in the same turn misses nothing in between (commits and
   * their fan-out run in other turns), though it may see an event twice and must skip by seq.
   */
  subscribe(orgId: string, listener: EventListener): () => void {
    if (this.listeners.size === 0) this.lastSeq = newestSeq(this.store);
    let set = this.listeners.get(orgId);
    if (!set) {
      set = new Set();
      this.listeners.set(orgId, set);
    }
    set.add(listener);
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(orgId);
    };
  }

  private fanOut(): void {
    if (this.listeners.size === 0) return;
    for (;;) {
      const entries = eventsAfter(this.store, this.lastSeq, TAIL_PAGE);
      if (entries.length === 0) return;
      this.lastSeq = (entries[entries.length - 1] as LogEntry).seq;
      const byOrg = new Map<string, LogEntry[]>();
      for (const entry of entries) {
        if (!this.listeners.has(entry.org_id)) continue;
        let list = byOrg.get(entry.org_id);
        if (!list) {
          list = [];
          byOrg.set(entry.org_id, list);
        }
        list.push(entry);
      }
      for (const [orgId, list] of byOrg) {
        for (const listener of [...(this.listeners.get(orgId) ?? [])]) {
          try {
            listener(list);
          } catch {
            // One consumer's failure (a closed socket) must not stop the others.
          }
        }
      }
      if (entries.length < TAIL_PAGE) return;
    }
  }
}
