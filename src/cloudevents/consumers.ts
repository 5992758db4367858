/**
 * The consumer side of the CloudEvents plane (DESIGN §7): long-poll and SSE stream over the
 * org's event log, from server-kept positions that both share, woken by the broker on commit.
 */
import type { Principal } from "../accounts/access.ts";
import type { AccountsContext } from "../accounts/context.ts";
import { AppError, errors } from "../errors.ts";
import type { EventBroker } from "../events/broker.ts";
import { type LogEntry, newestSeq, orgEventsAfter, prunedThrough } from "../events/log.repository.ts";
import { decodeCursor, encodeCursor } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import { findConsumer, insertConsumer, moveConsumer } from "./consumers.repository.ts";
import { parseTypeFilter, type TypeFilter } from "./filter.ts";
import { gatedOrg, planeLimits } from "./plans.ts";
import { RateLimiter, rateLimited } from "./rate-limit.ts";

const CURSOR_LIST = "events";
/** Rows one poll looks at before answering with what it found. */
const SCAN_BUDGET = 10_000;
const PAGE_ROWS = 1000;
const CATCH_UP_PAGES_PER_TURN = 10;
/** How long a poll that found some events waits for more to fill its page. */
const LINGER_MS = 100;
/** Bytes queued for a stream whose client does not read, past which it is dropped. */
export const STREAM_BUFFER_LIMIT = 4 * 1024 * 1024;
const STREAM_RETRY_AFTER_SECONDS = 10;

export interface PollQuery {
  filter?: string;
  cursor?: string;
  from?: "now";
  limit: number;
  wait: number;
}

export interface StreamQuery {
  filter?: string;
  cursor?: string;
  from?: "now";
}

interface Consumer {
  id: string;
  orgId: string;
  position: number;
  channelId: string | null;
  matches: TypeFilter;
}

export class ConsumerService {
  private readonly limiter = new RateLimiter();
  private readonly openStreams = new Map<string, number>();
  private readonly streams = new Set<{ close: () => void }>();

  constructor(
    private readonly ctx: AccountsContext,
    private readonly broker: EventBroker,
  ) {}

  async sourceConfig(principal: Principal) {
    const org = await gatedOrg(this.ctx, principal.orgId);
    return org.settings.cloudevents.source;
  }

  /** `GET /cloudevents/poll`: a page of events as JSON text (stored bodies are not re-parsed). */
  async poll(principal: Principal, query: PollQuery): Promise<string> {
    const org = await gatedOrg(this.ctx, principal.orgId);
    const limits = planeLimits(this.ctx.config, org.plan);
    const wait = this.limiter.take(`poll:${org.id}`, limits.pollPerMinute, 60_000);
    if (wait > 0)
      throw rateLimited(wait, `At most ${limits.pollPerMinute} polls a minute for this organization.`);
    const matches = parseTypeFilter(query.filter);
    const consumer = await this.start(principal, matches, query.cursor, query.from);

    let found = this.scan(consumer, query.limit);
    if (found.entries.length < query.limit && !found.budgetSpent && query.wait > 0) {
      found = await this.waitForMore(consumer, found, query.limit, query.wait * 1000);
    }
    const cursor = encodeCursor(CURSOR_LIST, [consumer.id, found.position]);
    const data = found.entries.map((e) => bodyFor(e, consumer.channelId)).join(",");
    return `{"data":[${data}],"next_cursor":${JSON.stringify(cursor)},"has_more":${found.hasMore}}`;
  }

  /**
   * Resolves where a consumer starts: a cursor (or `Last-Event-ID`) commits the position it
   * names; without one a new consumer starts at the oldest retained event, or the newest.
   */
  private async start(
    principal: Principal,
    matches: TypeFilter,
    cursor: string | undefined,
    from: "now" | undefined,
  ): Promise<Consumer> {
    const store = this.ctx.store;
    const now = Date.now();
    const base = { orgId: principal.orgId, channelId: principal.channelId, matches };
    if (cursor !== undefined) {
      const [consumerId, position] = decodeCursor(CURSOR_LIST, cursor) ?? [];
      if (typeof consumerId !== "string" || typeof position !== "number" || !Number.isSafeInteger(position)) {
        throw errors.invalidCursor();
      }
      // A position the log never reached (a forged cursor, a backup restored under a saved
      // one) would silently skip every event up to it.
      if (position < 0 || position > newestSeq(store)) throw errors.invalidCursor();
      const row = await findConsumer(store.read, consumerId);
      if (row && row.org_id !== principal.orgId) throw errors.invalidCursor();
      if (position < prunedThrough(store, principal.orgId)) {
        throw new AppError(
          "cursor_expired",
          "Events after this cursor have been removed by retention; start again without a cursor.",
        );
      }
      // A consumer forgotten after a long absence comes back at its position.
      if (!row)
        await store.write((tx) => insertConsumer(tx, consumerRow(consumerId, principal, position, now)));
      else if (row.position !== position) await store.write((tx) => moveConsumer(tx, row.id, position, now));
      return { ...base, id: consumerId, position };
    }
    const position = from === "now" ? newestSeq(store) : prunedThrough(store, principal.orgId);
    const id = newId("csm");
    await store.write((tx) => insertConsumer(tx, consumerRow(id, principal, position, now)));
    return { ...base, id, position };
  }

  /** Reads the log after the consumer's position until the page is full or the budget spent. */
  private scan(consumer: Consumer, limit: number): ScanResult {
    const entries: LogEntry[] = [];
    let position = consumer.position;
    let scanned = 0;
    for (;;) {
      const rows = orgEventsAfter(this.ctx.store, consumer.orgId, position, PAGE_ROWS);
      for (const row of rows) {
        scanned += 1;
        if (!visible(consumer, row)) {
          position = row.seq;
          continue;
        }
        if (entries.length === limit) return { entries, position, hasMore: true, budgetSpent: false };
        entries.push(row);
        position = row.seq;
      }
      if (rows.length < PAGE_ROWS) return { entries, position, hasMore: false, budgetSpent: false };
      if (scanned >= SCAN_BUDGET) return { entries, position, hasMore: true, budgetSpent: true };
    }
  }

  /**
   * Waits for the broker to hand over matching events: returns once the page is full, 100 ms
   * after the first event, or empty after `waitMs`.
   */
  private waitForMore(
    consumer: Consumer,
    found: ScanResult,
    limit: number,
    waitMs: number,
  ): Promise<ScanResult> {
    return new Promise((resolve) => {
      const entries = [...found.entries];
      let position = found.position;
      let timer: ReturnType<typeof setTimeout>;
      let hasMore = false;
      const finish = () => {
        clearTimeout(timer);
        unsubscribe();
        resolve({ entries, position, hasMore, budgetSpent: false });
      };
      const unsubscribe = this.broker.subscribe(consumer.orgId, (batch) => {
        const before = entries.length;
        for (const entry of batch) {
          if (entry.seq <= position) continue;
          if (visible(consumer, entry)) {
            if (entries.length === limit) {
              hasMore = true;
              break;
            }
            entries.push(entry);
          }
          position = entry.seq;
        }
        if (entries.length === limit) finish();
        else if (before === 0 && entries.length > 0) {
          clearTimeout(timer);
          timer = setTimeout(finish, LINGER_MS);
        }
      });
      timer = setTimeout(finish, entries.length > 0 ? LINGER_MS : waitMs);
    });
  }

  /** `GET /cloudevents/stream`: Server-Sent Events from the consumer's position on. */
  async stream(principal: Principal, query: StreamQuery, lastEventId: string | null): Promise<Response> {
    const org = await gatedOrg(this.ctx, principal.orgId);
    const limits = planeLimits(this.ctx.config, org.plan);
    const open = this.openStreams.get(org.id) ?? 0;
    if (open >= limits.streamsPerOrg) {
      throw new AppError(
        "stream_limit_reached",
        `At most ${limits.streamsPerOrg} streams may be open at once for this organization.`,
        { limit: limits.streamsPerOrg },
        { "retry-after": String(STREAM_RETRY_AFTER_SECONDS) },
      );
    }
    const matches = parseTypeFilter(query.filter);
    // An EventSource reconnecting sends the last id it saw: newer than the URL's cursor.
    const cursor = lastEventId?.trim() ? lastEventId.trim() : query.cursor;
    // The slot is taken before any await, so streams opened together cannot pass the cap.
    this.openStreams.set(org.id, open + 1);
    const release = () => this.openStreams.set(org.id, (this.openStreams.get(org.id) ?? 1) - 1);
    let consumer: Consumer;
    try {
      consumer = await this.start(principal, matches, cursor, query.from);
    } catch (error) {
      release();
      throw error;
    }
    const heartbeatMs = org.settings.cloudevents.source.stream_heartbeat_seconds * 1000;
    const stream = new SseStream(this.ctx, this.broker, consumer, heartbeatMs, () => {
      release();
      this.streams.delete(stream);
    });
    this.streams.add(stream);
    return new Response(stream.body, {
      status: 200,
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
      },
    });
  }

  /** Ends every open stream (shutdown): clients reconnect elsewhere or later. */
  closeStreams(): void {
    for (const stream of [...this.streams]) stream.close();
  }

  /** Open streams per org, for metrics. */
  streamCounts(): Map<string, number> {
    return new Map(this.openStreams);
  }
}

function consumerRow(id: string, principal: Principal, position: number, now: number) {
  return {
    id,
    org_id: principal.orgId,
    key_id: principal.keyId ?? principal.actor,
    position,
    created_at: now,
    updated_at: now,
  };
}

interface ScanResult {
  entries: LogEntry[];
  position: number;
  hasMore: boolean;
  budgetSpent: boolean;
}

function visible(consumer: Consumer, entry: LogEntry): boolean {
  return (
    (entry.channel_id === null || entry.channel_id === consumer.channelId) && consumer.matches(entry.type)
  );
}

/** The event as this consumer receives it: keys bound to a channel also get `channelid`. */
function bodyFor(entry: LogEntry, channelId: string | null): string {
  return channelId === null ? entry.body : `{"channelid":${JSON.stringify(channelId)},${entry.body.slice(1)}`;
}

const encoder = new TextEncoder();

/**
 * One SSE connection: catches up from the log page by page as the client reads, then follows
 * the broker live. Writes never wait for the client: a client whose unread bytes pass
 * STREAM_BUFFER_LIMIT is dropped, so one slow reader never slows the others.
 */
class SseStream {
  readonly body: ReadableStream<Uint8Array>;
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  private unsubscribe: (() => void) | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  private position: number;

  constructor(
    private readonly ctx: AccountsContext,
    private readonly broker: EventBroker,
    private readonly consumer: Consumer,
    heartbeatMs: number,
    private readonly onClose: () => void,
  ) {
    this.position = consumer.position;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
          controller.enqueue(encoder.encode(": stream open\n\n"));
          this.heartbeat = setInterval(() => this.send(": heartbeat\n\n"), heartbeatMs);
        },
        pull: () => this.catchUp(),
        cancel: () => this.finish(),
      },
      { highWaterMark: 64 * 1024, size: (chunk) => chunk?.byteLength ?? 0 },
    );
  }

  /**
   * Called whenever the client has room: the next pages of the backlog, until caught up. A
   * pull that enqueues nothing is not repeated by the stream, so pages the filter empties are
   * skipped here, yielding to other work every few pages.
   */
  private catchUp(): void {
    for (let page = 0; page < CATCH_UP_PAGES_PER_TURN; page++) {
      if (this.closed || this.unsubscribe) return;
      const rows = orgEventsAfter(this.ctx.store, this.consumer.orgId, this.position, PAGE_ROWS);
      const sent = this.deliver(rows);
      // Caught up: subscribing in the same turn as the last read leaves no gap.
      if (rows.length < PAGE_ROWS) {
        this.unsubscribe = this.broker.subscribe(this.consumer.orgId, (entries) => this.deliver(entries));
        return;
      }
      if (sent) return;
    }
    setImmediate(() => this.catchUp());
  }

  /** Sends the entries this consumer may see; true when something was sent. */
  private deliver(entries: readonly LogEntry[]): boolean {
    let frames = "";
    for (const entry of entries) {
      if (entry.seq <= this.position) continue;
      this.position = entry.seq;
      if (!visible(this.consumer, entry)) continue;
      const id = encodeCursor(CURSOR_LIST, [this.consumer.id, entry.seq]);
      frames += `id: ${id}\ndata: ${bodyFor(entry, this.consumer.channelId)}\n\n`;
    }
    if (!frames) return false;
    this.send(frames);
    return true;
  }

  private send(text: string): void {
    const controller = this.controller;
    if (this.closed || !controller) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      this.finish();
      return;
    }
    const queued = -(controller.desiredSize ?? 0);
    if (queued > STREAM_BUFFER_LIMIT) {
      this.ctx.log.warn("slow event stream dropped", {
        org_id: this.consumer.orgId,
        consumer_id: this.consumer.id,
        queued_bytes: queued,
      });
      this.close();
    }
  }

  close(): void {
    if (this.closed) return;
    try {
      this.controller?.close();
    } catch {
      // Already errored or closed by the client.
    }
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.onClose();
  }
}
