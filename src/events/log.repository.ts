/**
 * SQL of the event log read by consumers and written by ingest. The hot paths (batch insert,
 * the broker's tail, consumer pages) are prepared bun:sqlite statements: per event, a Kysely
 * query costs several times the insert itself.
 */
import type { Statement } from "bun:sqlite";
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

type Statements = ReturnType<typeof prepare>;

function prepare(store: Store) {
  const r = store.reader;
  const w = store.writer;
  return {
    insert: w.prepare(
      `INSERT OR IGNORE INTO events (org_id, id, source, type, subject, time, body, channel_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
    ),
    tail: r.prepare(
      "SELECT seq, org_id, type, channel_id, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
    ),
    page: r.prepare(
      "SELECT seq, org_id, type, channel_id, body FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    ),
    maxSeq: r.prepare("SELECT coalesce(max(seq), 0) AS seq FROM events"),
    createdAtFrom: r.prepare("SELECT seq, created_at FROM events WHERE seq >= ? ORDER BY seq LIMIT 1"),
    minSeq: r.prepare("SELECT coalesce(min(seq), 0) AS seq FROM events"),
    horizon: r.prepare("SELECT pruned_through FROM event_horizons WHERE org_id = ?"),
  };
}

const cache = new WeakMap<Store, Statements>();

function statements(store: Store): Statements {
  let prepared = cache.get(store);
  if (!prepared) {
    prepared = prepare(store);
    cache.set(store, prepared);
  }
  return prepared;
}

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
  const insert: Statement = statements(store).insert;
  return rows.map(
    (row) => insert.run(orgId, row.id, row.source, row.type, row.subject, now, row.body, now).changes === 1,
  );
}

/** Events of every org after `seq`, oldest first: what the broker fans out after a commit. */
export function eventsAfter(store: Store, seq: number, limit: number): LogEntry[] {
  return statements(store).tail.all(seq, limit) as LogEntry[];
}

/** One org's events after `seq`, oldest first. */
export function orgEventsAfter(store: Store, orgId: string, seq: number, limit: number): LogEntry[] {
  return statements(store).page.all(orgId, seq, limit) as LogEntry[];
}

/** The newest seq in the log (0 when empty). */
export function newestSeq(store: Store): number {
  return (statements(store).maxSeq.get() as { seq: number }).seq;
}

/** The highest seq retention removed from the org's log (0 when nothing was removed). */
export function prunedThrough(store: Store, orgId: string): number {
  const row = statements(store).horizon.get(orgId) as { pruned_through: number } | null;
  return row?.pruned_through ?? 0;
}

/**
 * The first seq whose event was written at or after `time`: every event before it is older.
 * Seqs follow commit order and so, to within clock steps, `created_at`: a bisection over the
 * rowid finds the cut without an index on `created_at` slowing every insert down.
 */
export function firstSeqAtOrAfter(store: Store, time: number): number {
  const s = statements(store);
  let low = (s.minSeq.get() as { seq: number }).seq;
  let high = (s.maxSeq.get() as { seq: number }).seq + 1;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const row = s.createdAtFrom.get(mid) as { seq: number; created_at: number } | null;
    if (row === null || row.created_at >= time) high = mid;
    else low = row.seq + 1;
  }
  return low;
}
