/**
 * SQL of the event log read by consumers and written by ingest. The hot paths (batch insert,
 * the broker's tail, consumer pages) are bun:sqlite statements, not Kysely: per event, a Kysely
 * query costs several times the insert itself.
 */
import type { Store } from "../db/store.ts";

/** An event as consumers need it. */
export interface LogEntry {
  seq: number;
  org_id: string;
  type: string;
  channel_id: string | null;
  body: string;
}

export interface InboundRow {
  id: string;
  source: string;
  type: string;
  subject: string | null;
  body: string;
}

// bun:sqlite's `query()` compiles each SQL text once per connection and hands back the cached
// statement after that.
const INSERT = `INSERT OR IGNORE INTO events (org_id, id, source, type, subject, time, body, channel_id, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)`;
const TAIL = "SELECT seq, org_id, type, channel_id, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?";
const PAGE =
  "SELECT seq, org_id, type, channel_id, body FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?";
const MAX_SEQ = "SELECT coalesce(max(seq), 0) AS seq FROM events";
const MIN_SEQ = "SELECT coalesce(min(seq), 0) AS seq FROM events";
const CREATED_AT_FROM = "SELECT seq, created_at FROM events WHERE seq >= ? ORDER BY seq LIMIT 1";
const HORIZON = "SELECT pruned_through FROM event_horizons WHERE org_id = ?";

/**
 * Appends inbound events inside the caller's write unit; an event whose (source, id) the org
 * already holds is skipped. Returns, for each row, whether it was stored now.
 */
export function insertInbound(
  store: Store,
  orgId: string,
  rows: readonly InboundRow[],
  now: number,
): boolean[] {
  const insert = store.writer.query(INSERT);
  return rows.map(
    (row) => insert.run(orgId, row.id, row.source, row.type, row.subject, now, row.body, now).changes === 1,
  );
}

/** Events of every org after `seq`, oldest first: what the broker fans out after a commit. */
export function eventsAfter(store: Store, seq: number, limit: number): LogEntry[] {
  return store.reader.query(TAIL).all(seq, limit) as LogEntry[];
}

/** One org's events after `seq`, oldest first. */
export function orgEventsAfter(store: Store, orgId: string, seq: number, limit: number): LogEntry[] {
  return store.reader.query(PAGE).all(orgId, seq, limit) as LogEntry[];
}

/** The newest seq in the log (0 when empty). */
export function newestSeq(store: Store): number {
  return (store.reader.query(MAX_SEQ).get() as { seq: number }).seq;
}

/** The highest seq retention removed from the org's log (0 when nothing was removed). */
export function prunedThrough(store: Store, orgId: string): number {
  const row = store.reader.query(HORIZON).get(orgId) as { pruned_through: number } | null;
  return row?.pruned_through ?? 0;
}

/**
 * The first seq whose event was written at or after `time`: every event before it is older.
 * Seqs follow commit order and so, to within clock steps, `created_at`: a bisection over the
 * rowid finds the cut without an index on `created_at` slowing every insert down.
 */
export function firstSeqAtOrAfter(store: Store, time: number): number {
  let low = (store.reader.query(MIN_SEQ).get() as { seq: number }).seq;
  let high = (store.reader.query(MAX_SEQ).get() as { seq: number }).seq + 1;
  const createdAtFrom = store.reader.query(CREATED_AT_FROM);
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const row = createdAtFrom.get(mid) as { seq: number; created_at: number } | null;
    if (row === null || row.created_at >= time) high = mid;
    else low = row.seq + 1;
  }
  return low;
}
