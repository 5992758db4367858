/**
 * Retention of the event log and 410 `cursor_expired` (DESIGN §2 `retention.events_days`, §4,
 * §7). Time passing is simulated on a stopped server: the events' `created_at` (and, where a
 * consumer is said to have been away, its last use) are moved back in the SQLite file, then
 * `svc serve` restarts on the same data dir and its retention job runs on the first scheduler
 * tick. Everything else is HTTP.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Client, secondOrg, TestServer } from "../support/harness.ts";
import {
  ce,
  eventually,
  expectError,
  ingest,
  ingestMany,
  logLines,
  mark,
  poll,
  streamUrl,
} from "./support.ts";

const SLOW = 60_000;
const DAY = 86_400_000;

let before: TestServer;
let server: TestServer;
let api: Client;
let other: { id: string; slug: string; key: string; token: string };
let otherApi: Client;
const cursors: Record<string, string> = {};
const events: Record<string, Record<string, unknown>[]> = {};

/** Runs SQL on the stopped server's database. */
function onDisk(dataDir: string, fn: (db: Database) => void): void {
  const db = new Database(join(dataDir, "svc.db"));
  try {
    fn(db);
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  before = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "100000" } });
  const beforeApi = before.client();
  other = await secondOrg(before);
  const beforeOther = beforeApi.as(other.key);
  // The other org keeps events for one day only.
  const settings = await beforeOther.put("/api/v1/org/settings", { retention: { events_days: 1 } });
  expect(settings.status).toBe(200);

  // Oldest first, as time would have written them: 40 days old, 2 days old, then today.
  events.old = await ingestMany(before, "com.example.old", 5);
  events.otherAncient = await ingest(before, [ce("com.other.ancient")], other.token);
  events.recent = await ingestMany(before, "com.example.recent", 2);
  events.otherOld = await ingest(before, [ce("com.other.old"), ce("com.other.old")], other.token);
  events.fresh = await ingestMany(before, "com.example.fresh", 2);

  // Consumers of the first org: in the middle of the old events, caught up to the end of
  // them, in the middle of the recent ones; and one that will have been away for 40 days.
  cursors.midOld = (await poll(beforeApi, { limit: 2 })).next_cursor;
  cursors.endOld = (await poll(beforeApi, { limit: 5 })).next_cursor;
  cursors.midRecent = (await poll(beforeApi, { limit: 6 })).next_cursor;
  cursors.away = (await poll(beforeApi, { limit: 1 })).next_cursor;
  cursors.otherMid = (await poll(beforeOther, { limit: 1 })).next_cursor;
  cursors.now = await mark(beforeApi);

  expect(await before.stop("SIGTERM")).toBe(0);
  const now = Date.now();
  onDisk(before.dataDir, (db) => {
    const age = db.prepare("UPDATE events SET created_at = ? WHERE type = ?");
    expect(age.run(now - 40 * DAY, "com.example.old").changes).toBe(5);
    expect(age.run(now - 2 * DAY, "com.example.recent").changes).toBe(2);
    expect(age.run(now - 2 * DAY, "com.other.old").changes).toBe(2);
    expect(age.run(now - 40 * DAY, "com.other.ancient").changes).toBe(1);
    // The consumer behind `away` was last used 40 days ago.
    const [, consumerId] = JSON.parse(Buffer.from(cursors.away as string, "base64url").toString()) as [
      string,
      string,
    ];
    const away = db.prepare("UPDATE event_consumers SET updated_at = ?, created_at = ? WHERE id = ?");
    expect(away.run(now - 40 * DAY, now - 40 * DAY, consumerId).changes).toBe(1);
  });

  server = await TestServer.start({
    init: false,
    dataDir: before.dataDir,
    env: { SVC_LIMITS_POLL_PER_MINUTE: "100000" },
  });
  api = server.client(before.init?.api_key.secret);
  otherApi = server.client(other.key);
  await eventually(() => logLines(server, "event log pruned").length >= 2, 10_000, "the retention job");
}, SLOW);
afterAll(async () => {
  await server?.dispose();
  await before?.dispose();
});

describe("the retention job", () => {
  test("prunes each org by its own retention, on the first tick after start", () => {
    const lines = logLines(server, "event log pruned")
      .map((l) => [l.org_id, l.events, l.days] as [string, number, number])
      .sort((a, b) => a[2] - b[2]);
    expect(lines).toEqual([
      [other.id, 3, 1],
      [before.init?.org.id as string, 5, 30],
    ]);
  });

  test("a fresh poll without a cursor starts at the oldest retained event", async () => {
    const page = await poll(api, { limit: 1000 });
    expect(page.data).toEqual([...(events.recent ?? []), ...(events.fresh ?? [])]);
    const theirs = await poll(otherApi, { limit: 1000 });
    expect(theirs.data).toEqual([]);
  });
});

describe("cursors after retention", () => {
  test("a cursor whose following events were removed is 410 cursor_expired, for poll and stream", async () => {
    expectError(
      await api.get(`/api/v1/cloudevents/poll?wait=0&cursor=${cursors.midOld}`),
      410,
      "cursor_expired",
    );
    expectError(
      await otherApi.get(`/api/v1/cloudevents/poll?wait=0&cursor=${cursors.otherMid}`),
      410,
      "cursor_expired",
    );
    const stream = await fetch(streamUrl(server, { cursor: cursors.midOld }), {
      headers: { authorization: `Bearer ${before.init?.api_key.secret}` },
    });
    expect(stream.status).toBe(410);
    expect(((await stream.json()) as any).error.code).toBe("cursor_expired");
    const lastEventId = await fetch(streamUrl(server), {
      headers: {
        authorization: `Bearer ${before.init?.api_key.secret}`,
        "last-event-id": cursors.midOld as string,
      },
    });
    expect(lastEventId.status).toBe(410);
  });

  test("a consumer past everything retention removed loses nothing and goes on", async () => {
    const mid = await poll(api, { cursor: cursors.midRecent as string, limit: 1000 });
    expect(mid.data).toEqual([...(events.recent ?? []).slice(1), ...(events.fresh ?? [])]);
    expect((await poll(api, { cursor: cursors.now as string })).data).toEqual([]);
    const sent = await ingest(server, [ce("com.example.after-restart")], before.init?.ingest_token.token);
    expect((await poll(api, { cursor: cursors.now as string })).data).toEqual(sent);
  });

  test("a consumer that had read up to its org's last removed event is not expired by another org's events", async () => {
    // Between this org's last old event and its first retained one the log holds only another
    // org's event: nothing this consumer would have received was removed.
    // The filter leaves out what earlier tests of this file ingested after the restart.
    const res = await api.get(
      `/api/v1/cloudevents/poll?wait=0&limit=1000&filter=com.example.recent,com.example.fresh&cursor=${cursors.endOld}`,
    );
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 200, code: undefined });
    expect(res.body.data).toEqual([...(events.recent ?? []), ...(events.fresh ?? [])]);
  });

  test("a consumer away for longer than retention gets 410 cursor_expired, not 400", async () => {
    // Its events are gone and so, by the same job, is its position: the answer must still tell
    // it to start again (410), which a connector handles, rather than call its cursor garbage.
    const res = await api.get(`/api/v1/cloudevents/poll?wait=0&cursor=${cursors.away}`);
    expectError(res, 410, "cursor_expired");
  });
});
