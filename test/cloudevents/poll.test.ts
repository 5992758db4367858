/**
 * The long-poll consumer of the CloudEvents plane (DESIGN §4, §7) through a real `svc serve`:
 * starting positions, server-kept cursors (at-least-once), `limit` and `has_more`, waiting,
 * type filters, bad and foreign cursors, outbound events in the log, credentials and scopes,
 * and the Knative source config. Black-box: plain HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, secondOrg, signUpUser, TestServer } from "../support/harness.ts";
import {
  ce,
  collect,
  createKey,
  expectError,
  ingest,
  ingestMany,
  mark,
  type PollPage,
  poll,
  pollPath,
  streamUrl,
} from "./support.ts";

const SLOW = 30_000;
const EVENT_ID = /^evt_[0-9a-z]{26}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let server: TestServer;
let api: Client;
let first: Record<string, unknown>;

beforeAll(async () => {
  // Many polls here: the default 60 a minute would get in the way.
  server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "100000" } });
  api = server.client();
  const sent = await ingest(server, [ce("com.example.first", { subject: "s1", data: { n: 1 } })]);
  first = sent[0] as Record<string, unknown>;
  await ingest(server, [ce("com.example.second"), ce("com.example.third")]);
}, SLOW);
afterAll(() => server.dispose());

const types = (page: { data: Record<string, any>[] }) => page.data.map((e) => e.type);
const ids = (events: Record<string, any>[]) => events.map((e) => e.id);

describe("where a consumer starts", () => {
  test("without a cursor a new consumer starts at the oldest retained event", async () => {
    const page = await poll(api, { limit: 1000 });
    // Exactly the event as ingested, in structured mode.
    expect(page.data[0]).toEqual(first);
    expect(types(page).slice(0, 3)).toEqual(["com.example.first", "com.example.second", "com.example.third"]);
    // Each cursor-less poll is a new consumer: it starts at the oldest again.
    const again = await poll(api, { limit: 1 });
    expect(again.data).toEqual([first]);
    expect(again.has_more).toBe(true);
    expect(again.next_cursor).not.toBe(page.next_cursor);
  });

  test("from=now starts at the newest event: only what comes later", async () => {
    const now = await poll(api, { from: "now" });
    expect(now.data).toEqual([]);
    expect(now.has_more).toBe(false);
    const sent = await ingest(server, [ce("com.example.later.a"), ce("com.example.later.b")]);
    const page = await poll(api, { cursor: now.next_cursor });
    expect(page.data).toEqual(sent);
    expect(page.has_more).toBe(false);
  });

  test("next_cursor is always a string: empty page, partial page, full page, exhausted", async () => {
    const start = await mark(api);
    const empty = await poll(api, { cursor: start });
    expect(empty).toEqual({ data: [], next_cursor: expect.any(String), has_more: false });
    await ingestMany(server, "com.example.cursor", 3);
    const full = await poll(api, { cursor: empty.next_cursor, limit: 2 });
    expect(full.data).toHaveLength(2);
    expect(typeof full.next_cursor).toBe("string");
    const partial = await poll(api, { cursor: full.next_cursor, limit: 2 });
    expect(partial.data).toHaveLength(1);
    expect(typeof partial.next_cursor).toBe("string");
    const exhausted = await poll(api, { cursor: partial.next_cursor });
    expect(exhausted).toEqual({ data: [], next_cursor: expect.any(String), has_more: false });
  });

  test("polling the same cursor twice returns the same events (at-least-once)", async () => {
    const start = await mark(api);
    const sent = await ingestMany(server, "com.example.twice", 3);
    const a = await poll(api, { cursor: start, limit: 2 });
    const b = await poll(api, { cursor: start, limit: 2 });
    expect(a.data).toEqual(sent.slice(0, 2));
    expect(b).toEqual(a);
    const rest = await poll(api, { cursor: a.next_cursor });
    expect(rest.data).toEqual(sent.slice(2));
    // Going back to an older cursor of the same consumer delivers its events again.
    const back = await poll(api, { cursor: start });
    expect(back.data).toEqual(sent);
    expect(back.next_cursor).toBe(rest.next_cursor);
  });
});

describe("limit and has_more", () => {
  test.each([
    ["0", "0"],
    ["1001", "1001"],
    ["negative", "-1"],
    ["fractional", "1.5"],
    ["not a number", "ten"],
  ])("limit %s is 400 validation_failed", async (_label, limit) => {
    const res = await api.get(`/api/v1/cloudevents/poll?wait=0&limit=${limit}`);
    expectError(res, 400, "validation_failed");
    expect(JSON.stringify(res.body.error.details)).toContain("limit");
  });

  test.each([
    ["31", "31"],
    ["negative", "-1"],
  ])("wait %s is 400 validation_failed", async (_label, wait) => {
    const res = await api.get(`/api/v1/cloudevents/poll?wait=${wait}`);
    expectError(res, 400, "validation_failed");
    expect(JSON.stringify(res.body.error.details)).toContain("wait");
  });

  test("unknown query parameters are 400", async () => {
    expectError(await api.get("/api/v1/cloudevents/poll?wait=0&since=yesterday"), 400, "validation_failed");
    expectError(await api.get("/api/v1/cloudevents/poll?wait=0&from=earliest"), 400, "validation_failed");
  });

  test("limit 1 and 1000 are the bounds", async () => {
    const start = await mark(api);
    const sent = await ingestMany(server, "com.example.bounds", 1001);
    const one = await poll(api, { cursor: start, limit: 1, filter: "com.example.bounds" });
    expect(one.data).toEqual(sent.slice(0, 1));
    expect(one.has_more).toBe(true);
    const thousand = await poll(api, { cursor: start, limit: 1000, filter: "com.example.bounds" });
    expect(ids(thousand.data)).toEqual(ids(sent.slice(0, 1000)));
    expect(thousand.has_more).toBe(true);
    const last = await poll(api, { cursor: thousand.next_cursor, limit: 1000 });
    expect(ids(last.data)).toEqual(ids(sent.slice(1000)));
    expect(last.has_more).toBe(false);
  });

  test("the default limit is 100", async () => {
    const start = await mark(api);
    const sent = await ingestMany(server, "com.example.default", 150);
    const page = await poll(api, { cursor: start });
    expect(ids(page.data)).toEqual(ids(sent.slice(0, 100)));
    expect(page.has_more).toBe(true);
    const next = await poll(api, { cursor: page.next_cursor });
    expect(ids(next.data)).toEqual(ids(sent.slice(100)));
    expect(next.has_more).toBe(false);
  });

  test("has_more is true while more matching events wait, false once none does", async () => {
    const start = await mark(api);
    const sent = await ingestMany(server, "com.example.more", 5);
    // Events the filter does not match, after the last matching one, do not count.
    await ingestMany(server, "com.example.unrelated", 3);
    const pages: PollPage[] = [];
    let cursor = start;
    for (let i = 0; i < 3; i++) {
      const page = await poll(api, { cursor, limit: 2, filter: "com.example.more" });
      pages.push(page);
      cursor = page.next_cursor;
    }
    expect(pages.map((p) => [p.data.length, p.has_more])).toEqual([
      [2, true],
      [2, true],
      [1, false],
    ]);
    expect(ids(pages.flatMap((p) => p.data))).toEqual(ids(sent));
    // Exactly `limit` matching events: the page is full but nothing more waits.
    const exact = await poll(api, { cursor: start, limit: 5, filter: "com.example.more" });
    expect(exact.data).toHaveLength(5);
    expect(exact.has_more).toBe(false);
    // Without the filter the unrelated events do wait.
    const all = await poll(api, { cursor: start, limit: 5 });
    expect(all.has_more).toBe(true);
  });
});

describe("long-poll", () => {
  test(
    "returns promptly, well under `wait`, when an event arrives while it waits",
    async () => {
      const start = await mark(api);
      const began = Date.now();
      const pending = poll(api, { cursor: start, wait: 20 });
      await Bun.sleep(400);
      const [sent] = await ingest(server, [ce("com.example.wake")]);
      const page = await pending;
      const elapsed = Date.now() - began;
      expect(page.data).toEqual([sent as Record<string, unknown>]);
      expect(elapsed).toBeGreaterThanOrEqual(350);
      expect(elapsed).toBeLessThan(2_500);
      // Nothing after it yet.
      expect((await poll(api, { cursor: page.next_cursor })).data).toEqual([]);
    },
    SLOW,
  );

  test(
    "returns empty after wait=1, and its cursor loses nothing that comes later",
    async () => {
      const start = await mark(api);
      const began = Date.now();
      const page = await poll(api, { cursor: start, wait: 1 });
      const elapsed = Date.now() - began;
      expect(page).toEqual({ data: [], next_cursor: expect.any(String), has_more: false });
      expect(elapsed).toBeGreaterThanOrEqual(900);
      expect(elapsed).toBeLessThan(2_500);
      const sent = await ingest(server, [ce("com.example.after-wait")]);
      expect((await poll(api, { cursor: page.next_cursor })).data).toEqual(sent);
    },
    SLOW,
  );

  test(
    "a waiting poll with a filter is not woken by events it does not match",
    async () => {
      const start = await mark(api);
      const began = Date.now();
      const pending = poll(api, { cursor: start, wait: 10, filter: "com.example.wanted" });
      await Bun.sleep(200);
      await ingest(server, [ce("com.example.unwanted")]);
      await Bun.sleep(600);
      const [wanted] = await ingest(server, [ce("com.example.wanted")]);
      const page = await pending;
      const elapsed = Date.now() - began;
      expect(page.data).toEqual([wanted as Record<string, unknown>]);
      expect(elapsed).toBeGreaterThanOrEqual(750);
      expect(elapsed).toBeLessThan(3_000);
      expect((await poll(api, { cursor: page.next_cursor, filter: "com.example.wanted" })).data).toEqual([]);
    },
    SLOW,
  );

  test(
    "a waiting poll whose page fills returns it with has_more, the rest follow",
    async () => {
      const start = await mark(api);
      const pending = poll(api, { cursor: start, wait: 10, limit: 1 });
      await Bun.sleep(200);
      const sent = await ingest(server, [
        ce("com.example.fill"),
        ce("com.example.fill"),
        ce("com.example.fill"),
      ]);
      const page = await pending;
      expect(page.data).toEqual(sent.slice(0, 1));
      expect(page.has_more).toBe(true);
      const rest = await poll(api, { cursor: page.next_cursor });
      expect(rest.data).toEqual(sent.slice(1));
    },
    SLOW,
  );
});

describe("type filters", () => {
  const TYPES = [
    "com.example.order.created",
    "com.example.order.deleted",
    "com.example.user.created",
    "com.examplex.order",
    "org.other.thing",
    "a+b(c)[d]",
    "com.example.v1",
    "com.example.v12",
  ];
  let start: string;

  beforeAll(async () => {
    start = await mark(api);
    await ingest(
      server,
      TYPES.map((t) => ce(t)),
    );
  });

  test.each<[string, string[]]>([
    [
      "com.example.*",
      [
        "com.example.order.created",
        "com.example.order.deleted",
        "com.example.user.created",
        "com.example.v1",
        "com.example.v12",
      ],
    ],
    ["com.example.v?", ["com.example.v1"]],
    ["com.example.v??", ["com.example.v12"]],
    ["com?example?v1", ["com.example.v1"]],
    ["*.created", ["com.example.order.created", "com.example.user.created"]],
    [
      "org.other.thing,com.example.order.*",
      ["com.example.order.created", "com.example.order.deleted", "org.other.thing"],
    ],
    [" org.other.thing , *.deleted ", ["com.example.order.deleted", "org.other.thing"]],
    ["a+b(c)[d]", ["a+b(c)[d]"]],
    ["a?b(c)[d]", ["a+b(c)[d]"]],
    ["com.example", []],
    ["nothing.*", []],
    ["*", TYPES],
  ])("filter %p", async (filter, expected) => {
    const page = await poll(api, { cursor: start, filter, limit: 1000 });
    expect(types(page)).toEqual(expected);
    expect(page.has_more).toBe(false);
  });

  test("an empty glob in the list or an over-long filter is 400", async () => {
    expectError(await api.get(pollPath({ wait: 0, filter: "a,,b" })), 400, "validation_failed");
    expectError(await api.get(pollPath({ wait: 0, filter: "a," })), 400, "validation_failed");
    expectError(await api.get(pollPath({ wait: 0, filter: "x".repeat(1025) })), 400, "validation_failed");
  });
});

describe("cursors", () => {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

  test("a garbled cursor is 400 invalid_cursor", async () => {
    const real = (await poll(api, { from: "now" })).next_cursor;
    const listCursor = await api.get("/api/v1/api-keys?limit=1");
    const bad = [
      "garbage",
      "%%%",
      real.slice(0, -6),
      `${real}AAAA`,
      b64(["events"]),
      b64({ events: 1 }),
      b64(["events", 42, 1]),
    ];
    // A real consumer with a position of the wrong kind.
    const [, consumerId] = JSON.parse(Buffer.from(real, "base64url").toString()) as [string, string, number];
    bad.push(b64(["events", consumerId, 1.5]), b64(["events", consumerId, "1"]));
    // Another list's cursor is no poll cursor.
    if (listCursor.body.next_cursor) bad.push(listCursor.body.next_cursor);
    for (const cursor of bad) {
      const res = await api.get(pollPath({ wait: 0, cursor }));
      expect({ cursor, status: res.status, code: res.body?.error?.code }).toEqual({
        cursor,
        status: 400,
        code: "invalid_cursor",
      });
    }
  });

  test("a cursor naming a position the log never had (negative, past the newest event) is 400 invalid_cursor", async () => {
    const real = (await poll(api, { from: "now" })).next_cursor;
    const [, consumerId, newest] = JSON.parse(Buffer.from(real, "base64url").toString()) as [
      string,
      string,
      number,
    ];
    const got: unknown[] = [];
    for (const position of [-1, newest + 1_000_000]) {
      const cursor = b64(["events", consumerId, position]);
      const res = await api.get(pollPath({ wait: 0, cursor }));
      got.push({ position, status: res.status, code: res.body?.error?.code });
    }
    expect(got).toEqual([
      { position: -1, status: 400, code: "invalid_cursor" },
      { position: newest + 1_000_000, status: 400, code: "invalid_cursor" },
    ]);
    // Had the far-future cursor been taken, the events that follow would never reach it.
    const sent = await ingest(server, [ce("com.example.after-forged")]);
    expect((await poll(api, { cursor: real })).data).toEqual(sent);
  });

  test(
    "a cursor of another org is 400 invalid_cursor, both ways, and orgs never see each other's events",
    async () => {
      const other = await secondOrg(server);
      const theirs = api.as(other.key);
      const theirEvents = await ingest(server, [ce("com.other.only")], other.token);
      const theirPage = await poll(theirs, { limit: 1000 });
      expect(theirPage.data).toEqual(theirEvents);
      const ourCursor = await mark(api);

      expectError(await api.get(pollPath({ wait: 0, cursor: theirPage.next_cursor })), 400, "invalid_cursor");
      expectError(await theirs.get(pollPath({ wait: 0, cursor: ourCursor })), 400, "invalid_cursor");
      const stream = await fetch(streamUrl(server, { cursor: theirPage.next_cursor }), {
        headers: { authorization: `Bearer ${server.init?.api_key.secret}` },
      });
      expect(stream.status).toBe(400);
      expect(((await stream.json()) as any).error.code).toBe("invalid_cursor");

      // Our events stay ours.
      await ingest(server, [ce("com.example.ours")]);
      expect((await poll(theirs, { cursor: theirPage.next_cursor })).data).toEqual([]);
      expect(types(await poll(api, { cursor: ourCursor }))).toEqual(["com.example.ours"]);
    },
    SLOW,
  );
});

describe("outbound events are in the log", () => {
  test("creating an incident appends run.service.incident.created.v1", async () => {
    const start = await mark(api);
    const created = await api.post("/api/v1/incidents", { title: "Checkout is down", severity: "major" });
    expect(created.status).toBe(201);
    const { events } = await collect(api, start, 1);
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({
      specversion: "1.0",
      id: expect.stringMatching(EVENT_ID),
      source: `/orgs/${server.orgSlug}/incidents/${created.body.id}`,
      type: "run.service.incident.created.v1",
      subject: created.body.id,
      time: expect.stringMatching(TIMESTAMP),
      datacontenttype: "application/json",
      data: created.body,
    });
  });

  test(
    "an alert fired by the Events API and acknowledged appears as fired and acknowledged",
    async () => {
      const start = await mark(api);
      const monitor = await api.post("/api/v1/monitors", { name: "Outbound", type: "event" });
      expect(monitor.status).toBe(201);
      const trigger = await api.as().post("/api/v1/events", {
        routing_key: monitor.body.integration_key,
        event_action: "trigger",
        dedup_key: "outbound",
        payload: { summary: "Disk full", source: "db01", severity: "critical" },
      });
      expect(trigger.status).toBe(202);
      const alert = (await api.get(`/api/v1/alerts?monitor_id=${monitor.body.id}`)).body.data[0];
      const acked = await api.post(`/api/v1/alerts/${alert.id}/ack`, {});
      expect(acked.status).toBe(200);

      const alertTypes = ["run.service.alert.fired.v1", "run.service.alert.acknowledged.v1"];
      const { events } = await collect(api, start, 2, { filter: "run.service.alert.*" });
      expect(events.map((e) => e.type)).toEqual(alertTypes);
      for (const event of events) {
        expect(event.subject).toBe(alert.id);
        expect(event.source).toBe(`/orgs/${server.orgSlug}/alerts/${alert.id}`);
        expect(event.data.id).toBe(alert.id);
      }
      expect(events[1]?.data.status).toBe("acknowledged");
      // The monitor went down too: its event is in the same log.
      const all = await poll(api, { cursor: start, limit: 1000 });
      expect(types(all)).toContain("run.service.monitor.down.v1");
    },
    SLOW,
  );
});

describe("credentials", () => {
  const ENDPOINTS = [
    pollPath({ wait: 0 }),
    "/api/v1/cloudevents/stream?from=now",
    "/api/v1/knative/source-config",
  ];

  /** Status and code of a GET; a stream that opens is cancelled at once. */
  async function probe(path: string, credential?: string): Promise<{ status: number; code: string | null }> {
    const controller = new AbortController();
    const headers: Record<string, string> = credential ? { authorization: `Bearer ${credential}` } : {};
    const res = await fetch(`${server.base}${path}`, { headers, signal: controller.signal });
    if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
      controller.abort();
      return { status: res.status, code: null };
    }
    const body = (await res.json()) as any;
    return { status: res.status, code: body?.error?.code ?? null };
  }

  test("an API key without scope `events` is 403 insufficient_scope", async () => {
    const key = await createKey(api, {
      name: "No events",
      scopes: ["monitors", "alerts", "incidents", "schedules"],
      service: true,
    });
    for (const path of ENDPOINTS) {
      expect({ path, ...(await probe(path, key)) }).toEqual({
        path,
        status: 403,
        code: "insufficient_scope",
      });
    }
  });

  test("a key with only scope `events` consumes; so does an `admin` key", async () => {
    const key = await createKey(api, { name: "Events only", scopes: ["events"], service: true });
    for (const credential of [key, server.init?.api_key.secret as string]) {
      for (const path of ENDPOINTS) {
        expect({ path, ...(await probe(path, credential)) }).toEqual({ path, status: 200, code: null });
      }
    }
    // It reads events and nothing else.
    expectError(await api.as(key).get("/api/v1/alerts"), 403, "insufficient_scope");
    const start = await mark(api.as(key));
    const sent = await ingest(server, [ce("com.example.scoped")]);
    expect((await poll(api.as(key), { cursor: start })).data).toEqual(sent);
  });

  test(
    "a session JWT is not a consumer credential: 401, like no or an unknown credential",
    async () => {
      const user = await signUpUser(server, "ops-admin@acme.test", "admin");
      const minted = await server.admin(["token", "--org", server.orgSlug, "--user", "ops-admin@acme.test"]);
      // The JWT itself is valid: it reads the console API.
      expect((await api.as(minted.token).get("/api/v1/alerts")).status).toBe(200);
      for (const credential of [minted.token, user.token, undefined, "svc_notakey", "garbage"]) {
        for (const path of ENDPOINTS) {
          expect({ path, ...(await probe(path, credential)) }).toEqual({
            path,
            status: 401,
            code: "unauthenticated",
          });
        }
      }
    },
    SLOW,
  );

  test("a revoked events key is 401", async () => {
    const res = await api.post("/api/v1/api-keys", {
      name: "Soon revoked",
      scopes: ["events"],
      service: true,
    });
    expect(res.status).toBe(201);
    expect((await probe(ENDPOINTS[0] as string, res.body.secret)).status).toBe(200);
    expect((await api.delete(`/api/v1/api-keys/${res.body.id}`)).status).toBe(204);
    const deadline = Date.now() + 3_000;
    let got = await probe(ENDPOINTS[0] as string, res.body.secret);
    while (got.status !== 401 && Date.now() < deadline) {
      await Bun.sleep(100);
      got = await probe(ENDPOINTS[0] as string, res.body.secret);
    }
    expect(got).toEqual({ status: 401, code: "unauthenticated" });
  });
});

describe("GET /api/v1/knative/source-config", () => {
  const DEFAULTS = {
    mode: "auto",
    poll_interval_seconds: 5,
    stream_heartbeat_seconds: 20,
    refresh_after_seconds: 300,
  };

  test("defaults, then whatever the org settings say, then defaults again", async () => {
    const key = await createKey(api, { name: "Connector", scopes: ["events"], service: true });
    const connector = api.as(key);
    const initial = await connector.get("/api/v1/knative/source-config");
    expect(initial.status).toBe(200);
    expect(initial.body).toEqual(DEFAULTS);

    const source = {
      mode: "poll",
      poll_interval_seconds: 2,
      stream_heartbeat_seconds: 7,
      refresh_after_seconds: 60,
    };
    const put = await api.put("/api/v1/org/settings", { cloudevents: { source } });
    expect(put.status).toBe(200);
    expect((await connector.get("/api/v1/knative/source-config")).body).toEqual(source);

    // Only some fields: the others take their defaults.
    await api.put("/api/v1/org/settings", { cloudevents: { source: { mode: "stream" } } });
    expect((await connector.get("/api/v1/knative/source-config")).body).toEqual({
      ...DEFAULTS,
      mode: "stream",
    });

    // A section left out of a PUT returns to its defaults.
    await api.put("/api/v1/org/settings", {});
    expect((await connector.get("/api/v1/knative/source-config")).body).toEqual(DEFAULTS);
  });

  test("invalid source settings are refused and change nothing", async () => {
    for (const source of [
      { mode: "push" },
      { poll_interval_seconds: 0 },
      { stream_heartbeat_seconds: 0 },
      { refresh_after_seconds: 5 },
    ]) {
      expectError(
        await api.put("/api/v1/org/settings", { cloudevents: { source } }),
        400,
        "validation_failed",
      );
    }
    expect((await api.get("/api/v1/knative/source-config")).body).toEqual(DEFAULTS);
  });
});
