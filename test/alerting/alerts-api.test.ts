/**
 * The alerts API through a real `svc serve` (DESIGN §6): listing with every filter and sort
 * (ties fall back to -fired_at, then id) and keyset paging, acknowledge and resolve with their
 * `already_*` flags, who is recorded as the actor, races between concurrent acknowledges, roles,
 * org isolation, and the timeline. Alerts are fired through the Events API. Black-box: plain
 * HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };
const rank = (alert: { severity: string }) => RANK[alert.severity] as number;

let server: TestServer;
let api: Client;
let anon: Client;
let ownerId: string;

interface Monitor {
  id: string;
  integration_key: string;
}

let monitorCount = 0;
async function createMonitor(client: Client, extra: Record<string, unknown> = {}): Promise<Monitor> {
  monitorCount += 1;
  const res = await client.post("/api/v1/monitors", {
    name: `Monitor ${monitorCount}`,
    type: "event",
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create monitor: ${res.status} ${res.text}`);
  return res.body;
}

/** Fires an alert through the Events API and returns it as the API shows it. */
async function fire(
  client: Client,
  monitor: Monitor,
  dedupKey: string,
  payload: { summary?: string; source?: string; severity?: string; component?: string } = {},
): Promise<any> {
  const res = await anon.post("/api/v1/events", {
    routing_key: monitor.integration_key,
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: { summary: `Alert ${dedupKey}`, source: "host", severity: "critical", ...payload },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await client.get(`/api/v1/alerts?monitor_id=${monitor.id}&limit=200`);
  const alert = list.body.data.find((a: { dedup_key: string }) => a.dedup_key === dedupKey);
  if (!alert) throw new Error(`no alert for ${dedupKey}`);
  return alert;
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  anon = api.as();
  ownerId = server.init?.owner.id as string;
}, SLOW);
afterAll(() => server.dispose());

describe("listing", () => {
  /** A separate org holds exactly these alerts, so every list can be compared whole. */
  let client: Client;
  let web: Monitor;
  let db: Monitor;
  let plain: Monitor;
  /** Every alert of the org, in firing order. */
  const all: any[] = [];

  beforeAll(async () => {
    const org = await server.admin([
      "org",
      "create",
      "--name",
      "Listing",
      "--slug",
      `listing-${Math.random().toString(36).slice(2, 8)}`,
      "--owner-email",
      "lister@listing.test",
    ]);
    client = api.as(org.api_key.secret);
    web = await createMonitor(client, { group_id: "g-web" });
    db = await createMonitor(client, { group_id: "g-db" });
    plain = await createMonitor(client);
    const specs: [Monitor, string, Record<string, string>][] = [
      [web, "a1", { summary: "Web 50% errors", source: "lb1", component: "nginx", severity: "critical" }],
      [web, "a2", { summary: "Latency high", source: "lb2", severity: "warning" }],
      [db, "a3", { summary: "Backup done_late", source: "db_01", severity: "info" }],
      [db, "a4", { summary: "Disk FULL", source: "db02", component: "pg", severity: "critical" }],
      [plain, "a5", { summary: "Queue 100% full", source: "mq", severity: "warning" }],
      [plain, "a6", { summary: "Cert expiring", source: "edge", severity: "info" }],
      [web, "a7", { summary: "Another web alert", source: "lb1", severity: "error" }],
      [db, "a8", { summary: "Replica lag", source: "db03", severity: "warning" }],
    ];
    for (const [monitor, key, payload] of specs) {
      all.push(await fire(client, monitor, key, payload));
      // Distinct fired_at milliseconds make every expected order exact.
      await Bun.sleep(5);
    }
    const byKey = (k: string) => all.find((a) => a.dedup_key === k);
    // a2 acknowledged, a3 and a6 resolved (a6 after an acknowledge).
    expect((await client.post(`/api/v1/alerts/${byKey("a2").id}/ack`, {})).status).toBe(200);
    expect((await client.post(`/api/v1/alerts/${byKey("a3").id}/resolve`, {})).status).toBe(200);
    expect((await client.post(`/api/v1/alerts/${byKey("a6").id}/ack`, {})).status).toBe(200);
    expect((await client.post(`/api/v1/alerts/${byKey("a6").id}/resolve`, {})).status).toBe(200);
    for (let i = 0; i < all.length; i++) {
      all[i] = (await client.get(`/api/v1/alerts/${all[i].id}`)).body;
    }
    // Another org's alerts never show up in this org's lists.
    await fire(api, await createMonitor(api), "foreign", { summary: "Web 50% errors elsewhere" });
  }, SLOW);

  const keys = (alerts: { dedup_key: string }[]) => alerts.map((a) => a.dedup_key);

  /** Follows next_cursor from the first page to the last; checks the page shape on the way. */
  async function collect(query: string, limit: number): Promise<any[]> {
    const seen: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 100; pages++) {
      const sep = query ? "&" : "";
      const res = await client.get(
        `/api/v1/alerts?${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["data", "has_more", "next_cursor"]);
      expect(res.body.data.length).toBeLessThanOrEqual(limit);
      seen.push(...res.body.data);
      if (!res.body.has_more) {
        expect(res.body.next_cursor).toBeNull();
        return seen;
      }
      expect(res.body.data).toHaveLength(limit);
      expect(typeof res.body.next_cursor).toBe("string");
      cursor = res.body.next_cursor;
    }
    throw new Error("paging did not end");
  }

  async function list(query: string): Promise<string[]> {
    const res = await client.get(`/api/v1/alerts?${query}`);
    expect(res.status).toBe(200);
    expect(res.body.has_more).toBe(false);
    return keys(res.body.data);
  }

  const newestFirst = (a: any, b: any) =>
    Date.parse(b.fired_at) - Date.parse(a.fired_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const orders: Record<string, (a: any, b: any) => number> = {
    "-fired_at": newestFirst,
    fired_at: (a, b) => Date.parse(a.fired_at) - Date.parse(b.fired_at) || newestFirst(a, b),
    severity: (a, b) => rank(a) - rank(b) || newestFirst(a, b),
    "-severity": (a, b) => rank(b) - rank(a) || newestFirst(a, b),
  };

  test("the alerts fired with distinct times and the expected fields", () => {
    expect(keys(all)).toEqual(["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]);
    expect(new Set(all.map((a) => a.fired_at)).size).toBe(8);
    expect(all.map((a) => [a.dedup_key, a.severity, a.status, a.group_id])).toEqual([
      ["a1", "critical", "firing", "g-web"],
      ["a2", "warning", "acknowledged", "g-web"],
      ["a3", "info", "resolved", "g-db"],
      ["a4", "critical", "firing", "g-db"],
      ["a5", "warning", "firing", null],
      ["a6", "info", "resolved", null],
      ["a7", "critical", "firing", "g-web"],
      ["a8", "warning", "firing", "g-db"],
    ]);
  });

  test("default order is newest first", async () => {
    expect(await list("")).toEqual(["a8", "a7", "a6", "a5", "a4", "a3", "a2", "a1"]);
    expect(await list("sort=-fired_at")).toEqual(["a8", "a7", "a6", "a5", "a4", "a3", "a2", "a1"]);
  });

  test("each sort, written out", async () => {
    expect(await list("sort=fired_at")).toEqual(["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]);
    // Critical first; within a severity, newest first.
    expect(await list("sort=-severity")).toEqual(["a7", "a4", "a1", "a8", "a5", "a2", "a6", "a3"]);
    expect(await list("sort=severity")).toEqual(["a6", "a3", "a8", "a5", "a2", "a7", "a4", "a1"]);
  });

  for (const sort of Object.keys(orders)) {
    test(`sort=${sort}: paging with every page size collects each alert exactly once, in order`, async () => {
      const expected = keys([...all].sort(orders[sort]));
      for (const limit of [1, 2, 3, 5, 8, 50]) {
        const got = await collect(`sort=${sort}`, limit);
        expect({ limit, keys: keys(got) }).toEqual({ limit, keys: expected });
      }
    });
  }

  test("paging with a filter and a sort together", async () => {
    const got = await collect("status=firing,acknowledged&sort=-severity", 2);
    expect(keys(got)).toEqual(["a7", "a4", "a1", "a8", "a5", "a2"]);
    const bySeverity = await collect("severity=warning,info&sort=fired_at", 1);
    expect(keys(bySeverity)).toEqual(["a2", "a3", "a5", "a6", "a8"]);
  });

  test("status: one value or a comma list", async () => {
    expect(await list("status=firing")).toEqual(["a8", "a7", "a5", "a4", "a1"]);
    expect(await list("status=acknowledged")).toEqual(["a2"]);
    expect(await list("status=resolved")).toEqual(["a6", "a3"]);
    expect(await list("status=acknowledged,resolved")).toEqual(["a6", "a3", "a2"]);
    expect(await list("status=firing,acknowledged,resolved")).toEqual(await list(""));
  });

  test("severity: one value or a comma list", async () => {
    expect(await list("severity=critical")).toEqual(["a7", "a4", "a1"]);
    expect(await list("severity=warning")).toEqual(["a8", "a5", "a2"]);
    expect(await list("severity=info,critical")).toEqual(["a7", "a6", "a4", "a3", "a1"]);
  });

  test("monitor_id and group_id", async () => {
    expect(await list(`monitor_id=${web.id}`)).toEqual(["a7", "a2", "a1"]);
    expect(await list(`monitor_id=${db.id}`)).toEqual(["a8", "a4", "a3"]);
    expect(await list(`monitor_id=${plain.id}`)).toEqual(["a6", "a5"]);
    expect(await list("monitor_id=mon_doesnotexist")).toEqual([]);
    expect(await list("group_id=g-web")).toEqual(["a7", "a2", "a1"]);
    expect(await list("group_id=g-db")).toEqual(["a8", "a4", "a3"]);
    expect(await list("group_id=nope")).toEqual([]);
    expect(await list(`group_id=g-db&monitor_id=${web.id}`)).toEqual([]);
    expect(await list("group_id=g-db&status=firing&severity=critical")).toEqual(["a4"]);
  });

  test("from and to on fired_at are half-open [from, to)", async () => {
    const at = (k: string) => all.find((a) => a.dedup_key === k).fired_at as string;
    const q = (v: string) => encodeURIComponent(v);
    expect(await list(`from=${q(at("a3"))}&to=${q(at("a6"))}`)).toEqual(["a5", "a4", "a3"]);
    expect(await list(`from=${q(at("a8"))}`)).toEqual(["a8"]);
    expect(await list(`to=${q(at("a2"))}`)).toEqual(["a1"]);
    expect(await list(`from=${q(at("a4"))}&to=${q(at("a4"))}`)).toEqual([]);
    // Any RFC 3339 offset: the same instant as a3 written in +02:00.
    const a3 = new Date(Date.parse(at("a3")) + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    expect(await list(`from=${q(a3)}&to=${q(at("a5"))}`)).toEqual(["a4", "a3"]);
    // An unencoded '+' arrives as a space and is read as '+'.
    expect(await list(`from=${a3}&to=${q(at("a5"))}`)).toEqual(["a4", "a3"]);
    expectError(await client.get("/api/v1/alerts?from=yesterday"), 400, "validation_failed");
  });

  test("q searches summary and reason, case-insensitively", async () => {
    expect(await list("q=disk%20full")).toEqual(["a4"]);
    expect(await list("q=DISK")).toEqual(["a4"]);
    // Reason is "source / component".
    expect(await list("q=NGINX")).toEqual(["a1"]);
    expect(await list(`q=${encodeURIComponent("db02 / pg")}`)).toEqual(["a4"]);
    expect(await list("q=lb1")).toEqual(["a7", "a1"]);
    expect(await list("q=web")).toEqual(["a7", "a1"]);
    expect(await list("q=nothing-like-this")).toEqual([]);
    expect(await list("q=web&status=firing&sort=fired_at")).toEqual(["a1", "a7"]);
  });

  test("q takes % and _ literally", async () => {
    expect(await list(`q=${encodeURIComponent("%")}`)).toEqual(["a5", "a1"]);
    expect(await list(`q=${encodeURIComponent("50%")}`)).toEqual(["a1"]);
    expect(await list(`q=${encodeURIComponent("0% f")}`)).toEqual(["a5"]);
    expect(await list(`q=${encodeURIComponent("b%e")}`)).toEqual([]);
    // "_" is in a3's summary ("done_late") and reason ("db_01") only.
    expect(await list("q=_")).toEqual(["a3"]);
    expect(await list("q=db_0")).toEqual(["a3"]);
    expect(await list("q=e_l")).toEqual(["a3"]);
    expect(await list("q=l_t")).toEqual([]);
    expect(await list(`q=${encodeURIComponent("\\")}`)).toEqual([]);
    expect(await list(`q=${encodeURIComponent("\\%")}`)).toEqual([]);
  });

  test("bad status, severity, sort, limit or cursor are 400", async () => {
    for (const query of [
      "status=open",
      "status=firing,open",
      "status=",
      "severity=error",
      "severity=critical,,info",
      "sort=summary",
      "sort=+fired_at",
      "limit=0",
      "limit=201",
      "q=",
      "unknown=1",
    ]) {
      const res = await client.get(`/api/v1/alerts?${query}`);
      expect({ query, status: res.status, code: res.body?.error?.code }).toEqual({
        query,
        status: 400,
        code: "validation_failed",
      });
    }
    const status = await client.get("/api/v1/alerts?status=open");
    expect(status.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(["status"]);
    const severity = await client.get("/api/v1/alerts?severity=error");
    expect(severity.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(["severity"]);
    const sort = await client.get("/api/v1/alerts?sort=summary");
    expect(sort.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(["sort"]);

    expectError(await client.get("/api/v1/alerts?cursor=garbage"), 400, "invalid_cursor");
    const page = await client.get("/api/v1/alerts?sort=fired_at&limit=2");
    expect(page.body.has_more).toBe(true);
    // A cursor of one sort is not one of another.
    expectError(
      await client.get(`/api/v1/alerts?sort=-severity&limit=2&cursor=${page.body.next_cursor}`),
      400,
      "invalid_cursor",
    );
  });
});

describe("acknowledge and resolve", () => {
  let monitor: Monitor;
  beforeAll(async () => {
    monitor = await createMonitor(api);
  });

  test(
    "ack answers 200 with already_acknowledged false, then true; escalation fields unchanged",
    async () => {
      const alert = await fire(api, monitor, "ack-1");
      const before = Date.now();
      const first = await api.post(`/api/v1/alerts/${alert.id}/ack`, { note: "looking" });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        ...alert,
        status: "acknowledged",
        acknowledged_at: first.body.acknowledged_at,
        acknowledged_by: ownerId,
        already_acknowledged: false,
      });
      expect(first.body.acknowledged_at).toMatch(TIMESTAMP);
      expect(Date.parse(first.body.acknowledged_at)).toBeGreaterThanOrEqual(before - 1000);
      const second = await api.post(`/api/v1/alerts/${alert.id}/ack`, {});
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ ...first.body, already_acknowledged: true });
      const { already_acknowledged: _, ...stored } = first.body;
      expect((await api.get(`/api/v1/alerts/${alert.id}`)).body).toEqual(stored);
    },
    SLOW,
  );

  test(
    "20 concurrent acks: one wins, one acknowledged timeline entry",
    async () => {
      const alert = await fire(api, monitor, "ack-race");
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.post(`/api/v1/alerts/${alert.id}/ack`, { note: `n${i}` })),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(answers.filter((r) => r.body.already_acknowledged === false)).toHaveLength(1);
      expect(answers.filter((r) => r.body.already_acknowledged === true)).toHaveLength(19);
      expect(new Set(answers.map((r) => r.body.acknowledged_at)).size).toBe(1);
      const timeline = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      const acks = timeline.body.data.filter((e: { type: string }) => e.type === "acknowledged");
      expect(acks).toHaveLength(1);
      const winner = answers.find((r) => r.body.already_acknowledged === false) as Response2;
      expect(acks[0].at).toBe(winner.body.acknowledged_at);
    },
    SLOW,
  );

  test(
    "20 concurrent resolves: one resolves, one resolved timeline entry",
    async () => {
      const alert = await fire(api, monitor, "resolve-race");
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => api.post(`/api/v1/alerts/${alert.id}/resolve`, {})),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(answers.filter((r) => r.body.already_resolved === false)).toHaveLength(1);
      const timeline = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(timeline.body.data.filter((e: { type: string }) => e.type === "resolved")).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "ack of a resolved alert is 409 alert_resolved and changes nothing",
    async () => {
      const alert = await fire(api, monitor, "ack-resolved");
      const resolved = await api.post(`/api/v1/alerts/${alert.id}/resolve`, {});
      expect(resolved.status).toBe(200);
      const res = await api.post(`/api/v1/alerts/${alert.id}/ack`, {});
      expectError(res, 409, "alert_resolved");
      expect(typeof res.body.error.message).toBe("string");
      const stored = (await api.get(`/api/v1/alerts/${alert.id}`)).body;
      expect(stored.acknowledged_at).toBeNull();
      expect(stored.acknowledged_by).toBeNull();
      expect(stored.status).toBe("resolved");
    },
    SLOW,
  );

  test(
    "resolve answers already_resolved false, then true; an acknowledged alert resolves too",
    async () => {
      const alert = await fire(api, monitor, "resolve-1");
      const ack = await api.post(`/api/v1/alerts/${alert.id}/ack`, {});
      const first = await api.post(`/api/v1/alerts/${alert.id}/resolve`, { note: "fixed" });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        ...alert,
        status: "resolved",
        acknowledged_at: ack.body.acknowledged_at,
        acknowledged_by: ownerId,
        resolved_at: first.body.resolved_at,
        resolved_by: ownerId,
        already_resolved: false,
      });
      expect(first.body.resolved_at).toMatch(TIMESTAMP);
      const second = await api.post(`/api/v1/alerts/${alert.id}/resolve`, { note: "again" });
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ ...first.body, already_resolved: true });
    },
    SLOW,
  );

  test(
    "the timeline records each change in order, with its actor and note",
    async () => {
      const alert = await fire(api, monitor, "timeline-1", {
        summary: "Timeline check",
        severity: "warning",
      });
      const ack = await api.post(`/api/v1/alerts/${alert.id}/ack`, { note: "on it" });
      await api.post(`/api/v1/alerts/${alert.id}/ack`, { note: "ignored" });
      const resolved = await api.post(`/api/v1/alerts/${alert.id}/resolve`, { note: "done" });
      await api.post(`/api/v1/alerts/${alert.id}/resolve`, { note: "ignored too" });
      const res = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: [
          { type: "fired", at: alert.fired_at, data: { summary: "Timeline check", severity: "warning" } },
          { type: "nobody_notified", at: alert.fired_at, data: { reason: "no escalation policy" } },
          { type: "acknowledged", at: ack.body.acknowledged_at, data: { by: ownerId, note: "on it" } },
          {
            type: "resolved",
            at: resolved.body.resolved_at,
            data: { by: ownerId, auto: false, note: "done" },
          },
        ],
      });
      const times = res.body.data.map((e: { at: string }) => Date.parse(e.at));
      expect(times).toEqual([...times].sort((a, b) => a - b));
    },
    SLOW,
  );

  test(
    "a resolve without ack records no acknowledgement; no note means no note field",
    async () => {
      const alert = await fire(api, monitor, "timeline-2");
      const resolved = await api.post(`/api/v1/alerts/${alert.id}/resolve`);
      expect(resolved.body.acknowledged_by).toBeNull();
      const res = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(res.body.data.map((e: { type: string }) => e.type)).toEqual([
        "fired",
        "nobody_notified",
        "resolved",
      ]);
      expect(res.body.data[2].data).toEqual({ by: ownerId, auto: false });
    },
    SLOW,
  );

  test(
    "bad bodies are 400: unknown fields, a note too long, not an object",
    async () => {
      const alert = await fire(api, monitor, "bodies");
      expectError(await api.post(`/api/v1/alerts/${alert.id}/ack`, { by: "me" }), 400, "validation_failed");
      expectError(
        await api.post(`/api/v1/alerts/${alert.id}/ack`, { note: "x".repeat(2001) }),
        400,
        "validation_failed",
      );
      expectError(await api.post(`/api/v1/alerts/${alert.id}/resolve`, [1]), 400, "validation_failed");
      expectError(
        await api.post(`/api/v1/alerts/${alert.id}/resolve`, { note: 5 }),
        400,
        "validation_failed",
      );
      expect((await api.get(`/api/v1/alerts/${alert.id}`)).body.status).toBe("firing");
    },
    SLOW,
  );

  test(
    "unknown ids are 404 not_found",
    async () => {
      const missing = "alt_01jzzzzzzzzzzzzzzzzzzzzzzz";
      expectError(await api.get(`/api/v1/alerts/${missing}`), 404, "not_found");
      expectError(await api.post(`/api/v1/alerts/${missing}/ack`, {}), 404, "not_found");
      expectError(await api.post(`/api/v1/alerts/${missing}/resolve`, {}), 404, "not_found");
      expectError(await api.get(`/api/v1/alerts/${missing}/timeline`), 404, "not_found");
    },
    SLOW,
  );
});

describe("who acts, roles and orgs", () => {
  let monitor: Monitor;
  let member: Awaited<ReturnType<typeof signUpUser>>;
  let viewer: Awaited<ReturnType<typeof signUpUser>>;

  beforeAll(async () => {
    monitor = await createMonitor(api);
    member = await signUpUser(server, "member@acme.test", "member");
    viewer = await signUpUser(server, "viewer@acme.test", "viewer");
  }, SLOW);

  test(
    "a session records the user id",
    async () => {
      const alert = await fire(api, monitor, "session");
      const session = api.as(member.token);
      const ack = await session.post(`/api/v1/alerts/${alert.id}/ack`, {});
      expect(ack.status).toBe(200);
      expect(ack.body.acknowledged_by).toBe(member.user.id);
      const resolved = await session.post(`/api/v1/alerts/${alert.id}/resolve`, {});
      expect(resolved.body.resolved_by).toBe(member.user.id);
      const timeline = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(timeline.body.data.slice(2).map((e: any) => [e.type, e.data.by])).toEqual([
        ["acknowledged", member.user.id],
        ["resolved", member.user.id],
      ]);
    },
    SLOW,
  );

  test(
    "a service-bound key records key:<id>; a user's key records the user",
    async () => {
      const service = await api.post("/api/v1/api-keys", { name: "bot", scopes: ["alerts"], service: true });
      expect(service.status).toBe(201);
      const bot = api.as(service.body.secret);
      const alert = await fire(api, monitor, "service");
      const ack = await bot.post(`/api/v1/alerts/${alert.id}/ack`, { note: "bot ack" });
      expect(ack.status).toBe(200);
      expect(ack.body.acknowledged_by).toBe(`key:${service.body.id}`);
      const resolved = await bot.post(`/api/v1/alerts/${alert.id}/resolve`, {});
      expect(resolved.body.resolved_by).toBe(`key:${service.body.id}`);
      const timeline = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(timeline.body.data.slice(2).map((e: any) => e.data)).toEqual([
        { by: `key:${service.body.id}`, note: "bot ack" },
        { by: `key:${service.body.id}`, auto: false },
      ]);

      const own = await api.as(member.token).post("/api/v1/api-keys", { name: "mine", scopes: ["alerts"] });
      expect(own.status).toBe(201);
      const other = await fire(api, monitor, "user-key");
      const byKey = await api.as(own.body.secret).post(`/api/v1/alerts/${other.id}/ack`, {});
      expect(byKey.body.acknowledged_by).toBe(member.user.id);
    },
    SLOW,
  );

  test(
    "a viewer reads but cannot ack or resolve (403 forbidden_role)",
    async () => {
      const alert = await fire(api, monitor, "viewer");
      const session = api.as(viewer.token);
      expect((await session.get(`/api/v1/alerts/${alert.id}`)).status).toBe(200);
      expect((await session.get(`/api/v1/alerts/${alert.id}/timeline`)).status).toBe(200);
      expect((await session.get("/api/v1/alerts")).status).toBe(200);
      expectError(await session.post(`/api/v1/alerts/${alert.id}/ack`, {}), 403, "forbidden_role");
      expectError(await session.post(`/api/v1/alerts/${alert.id}/resolve`, {}), 403, "forbidden_role");
      // A key the owner made for the viewer, even with scope admin, can only read as well.
      const key = await api.post("/api/v1/api-keys", {
        name: "viewer key",
        scopes: ["admin"],
        user_id: viewer.user.id,
      });
      expect(key.status).toBe(201);
      const viaKey = api.as(key.body.secret);
      expect((await viaKey.get(`/api/v1/alerts/${alert.id}`)).status).toBe(200);
      expectError(await viaKey.post(`/api/v1/alerts/${alert.id}/ack`, {}), 403, "forbidden_role");
      expectError(await viaKey.post(`/api/v1/alerts/${alert.id}/resolve`, {}), 403, "forbidden_role");
      expect((await api.get(`/api/v1/alerts/${alert.id}`)).body.status).toBe("firing");
    },
    SLOW,
  );

  test(
    "a key without scope alerts is 403 insufficient_scope; no credential is 401",
    async () => {
      const alert = await fire(api, monitor, "scope");
      const key = await api.post("/api/v1/api-keys", { name: "schedules only", scopes: ["schedules"] });
      expect(key.status).toBe(201);
      const client = api.as(key.body.secret);
      expectError(await client.get("/api/v1/alerts"), 403, "insufficient_scope");
      expectError(await client.post(`/api/v1/alerts/${alert.id}/ack`, {}), 403, "insufficient_scope");
      expectError(await anon.get("/api/v1/alerts"), 401, "unauthenticated");
      expectError(await anon.post(`/api/v1/alerts/${alert.id}/ack`, {}), 401, "unauthenticated");
    },
    SLOW,
  );

  test(
    "another org's alert is 404 everywhere and absent from lists",
    async () => {
      const other = await server.admin([
        "org",
        "create",
        "--name",
        "Other",
        "--slug",
        `other-${Math.random().toString(36).slice(2, 8)}`,
        "--owner-email",
        "boss@other.test",
      ]);
      const foreignClient = api.as(other.api_key.secret);
      const foreignAlert = await fire(foreignClient, await createMonitor(foreignClient), "theirs");
      expectError(await api.get(`/api/v1/alerts/${foreignAlert.id}`), 404, "not_found");
      expectError(await api.post(`/api/v1/alerts/${foreignAlert.id}/ack`, {}), 404, "not_found");
      expectError(await api.post(`/api/v1/alerts/${foreignAlert.id}/resolve`, {}), 404, "not_found");
      expectError(await api.get(`/api/v1/alerts/${foreignAlert.id}/timeline`), 404, "not_found");
      const mine = await api.get("/api/v1/alerts?limit=200");
      expect(mine.body.data.map((a: { id: string }) => a.id)).not.toContain(foreignAlert.id);
      expect((await foreignClient.get(`/api/v1/alerts/${foreignAlert.id}`)).body.status).toBe("firing");
    },
    SLOW,
  );
});
