/**
 * Monitors through a real `svc serve` (CRUD only: the Events API, heartbeat pings, HTTP checks
 * and alerts are not built yet): each type with exact bodies, the routing credentials
 * (`integration_key`, `ping_url` under the configured base URL), list filters and paging,
 * PATCH with config replaced whole, validation naming the field, team rules, the `monitors`
 * scope and other orgs. Black-box: plain HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AccessCall, expectReadOnly, expectRefused, UNKNOWN_KEY } from "../support/access.ts";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI or sign users up (argon2id) get more than the default 5 s. */
const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MONITOR_ID = /^mon_[0-9a-z]{26}$/;
const INTEGRATION_KEY = /^[0-9a-f]{32}$/;
const BASE_URL = "https://svc.example.test";
const PING_URL = /^https:\/\/svc\.example\.test\/ping\/[A-Za-z0-9_-]{16,}$/;
const BASE = "/api/v1/monitors";
/** HTTP defaults (docs/api.md "Monitor"). */
const HTTP_DEFAULTS = {
  method: "GET",
  timeout_ms: 10_000,
  interval_seconds: 60,
  failure_threshold: 2,
  success_threshold: 1,
};

let server: TestServer;
let admin: Client;
let anon: Client;
let policy: string;
let foreign: { client: Client; monitorId: string; policyId: string; teamId: string };

async function must(res: Promise<Response2>, status = 201): Promise<any> {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${r.text}`);
  return r.body;
}

beforeAll(async () => {
  server = await TestServer.start({ args: ["--base-url", BASE_URL] });
  admin = server.client();
  anon = admin.as();
  policy = (
    await must(
      admin.post("/api/v1/escalation-policies", {
        name: "Primary",
        steps: [{ delay_seconds: 300, targets: [{ type: "user", id: server.init?.owner.id }] }],
      }),
    )
  ).id;
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
  const client = admin.as(other.api_key.secret);
  const theirPolicy = await must(
    client.post("/api/v1/escalation-policies", {
      name: "Their policy",
      steps: [{ delay_seconds: 60, targets: [{ type: "user", id: other.owner.id }] }],
    }),
  );
  const theirTeam = await must(client.post("/api/v1/teams", { name: "Their team" }));
  const theirMonitor = await must(
    client.post(BASE, { name: "Their monitor", type: "event", escalation_policy_id: theirPolicy.id }),
  );
  foreign = { client, monitorId: theirMonitor.id, policyId: theirPolicy.id, teamId: theirTeam.id };
}, SLOW);
afterAll(() => server.dispose());

function fieldPaths(res: Response2): string[] {
  return res.body.error.details.fields.map((f: { path: string }) => f.path);
}

function expectValidation(res: Response2, path: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({
    status: 400,
    code: "validation_failed",
  });
  expect(fieldPaths(res)).toContain(path);
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

async function createMonitor(body: Record<string, unknown>, client = admin): Promise<any> {
  const res = await client.post(BASE, body);
  if (res.status !== 201) throw new Error(`create monitor: ${res.status} ${res.text}`);
  return res.body;
}

async function monitorIds(query = ""): Promise<string[]> {
  const res = await admin.get(`${BASE}?limit=200${query}`);
  expect(res.status).toBe(200);
  expect(res.body.has_more).toBe(false);
  return res.body.data.map((m: { id: string }) => m.id);
}

/** Every field of a monitor as created with only name and type. */
const defaults = {
  group_id: null,
  team_id: null,
  severity: "critical",
  escalation_policy_id: null,
  labels: {},
  freshness_seconds: 60,
  paused: false,
  status: "up",
};

describe("create each type", () => {
  test("an event monitor gets a 32-hex integration_key and defaults for everything else", async () => {
    const created = await admin.post(BASE, { name: "  Payments API  ", type: "event" });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(MONITOR_ID),
      name: "Payments API",
      type: "event",
      ...defaults,
      config: {},
      integration_key: expect.stringMatching(INTEGRATION_KEY),
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    expect(Object.keys(created.body)).not.toContain("ping_url");

    const read = await admin.get(`${BASE}/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    const list = await admin.get(`${BASE}?limit=200`);
    expect(list.body.data).toContainEqual(created.body);

    // Every field given.
    const full = await admin.post(BASE, {
      name: "Checkout events",
      type: "event",
      group_id: "payments",
      severity: "warning",
      escalation_policy_id: policy,
      labels: { env: "prod", region: "eu-west-1", empty: "" },
      freshness_seconds: 0,
      paused: true,
      config: { cloudevents_type: "com.example.checkout.*" },
    });
    expect(full.status).toBe(201);
    expect(full.body).toEqual({
      id: expect.stringMatching(MONITOR_ID),
      name: "Checkout events",
      type: "event",
      group_id: "payments",
      team_id: null,
      severity: "warning",
      escalation_policy_id: policy,
      labels: { env: "prod", region: "eu-west-1", empty: "" },
      freshness_seconds: 0,
      paused: true,
      status: "up",
      config: { cloudevents_type: "com.example.checkout.*" },
      integration_key: expect.stringMatching(INTEGRATION_KEY),
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: full.body.created_at,
    });
    expect(full.body.integration_key).not.toBe(created.body.integration_key);
    expect((await admin.get(`${BASE}/${full.body.id}`)).body).toEqual(full.body);
  });

  test("a heartbeat monitor gets a ping_url under the base URL; interval or cron", async () => {
    const byInterval = await admin.post(BASE, {
      name: "Nightly backup",
      type: "heartbeat",
      config: { interval_seconds: 3600 },
    });
    expect(byInterval.status).toBe(201);
    expect(byInterval.body).toEqual({
      id: expect.stringMatching(MONITOR_ID),
      name: "Nightly backup",
      type: "heartbeat",
      ...defaults,
      config: { interval_seconds: 3600, time_zone: "UTC", grace_seconds: 60 },
      ping_url: expect.stringMatching(PING_URL),
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: byInterval.body.created_at,
    });
    expect(Object.keys(byInterval.body)).not.toContain("integration_key");
    expect((await admin.get(`${BASE}/${byInterval.body.id}`)).body).toEqual(byInterval.body);

    const byCron = await admin.post(BASE, {
      name: "Report job",
      type: "heartbeat",
      severity: "info",
      config: { cron: "30 2 * * 1-5", time_zone: "Europe/Berlin", grace_seconds: 900 },
    });
    expect(byCron.status).toBe(201);
    expect(byCron.body).toEqual({
      id: expect.stringMatching(MONITOR_ID),
      name: "Report job",
      type: "heartbeat",
      ...defaults,
      severity: "info",
      config: { cron: "30 2 * * 1-5", time_zone: "Europe/Berlin", grace_seconds: 900 },
      ping_url: expect.stringMatching(PING_URL),
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: byCron.body.created_at,
    });
    expect(byCron.body.ping_url).not.toBe(byInterval.body.ping_url);

    // A rare pattern that does match (29 February), and croner's seconds field.
    for (const cron of ["0 0 29 2 *", "*/30 * * * * *"]) {
      const res = await admin.post(BASE, { name: `Cron ${cron}`, type: "heartbeat", config: { cron } });
      expect({ cron, status: res.status }).toEqual({ cron, status: 201 });
      expect(res.body.config).toEqual({ cron, time_zone: "UTC", grace_seconds: 60 });
    }
    expect((await admin.get(`${BASE}/${byCron.body.id}`)).body).toEqual(byCron.body);
  });

  test("an http monitor has its config defaults filled in", async () => {
    const created = await admin.post(BASE, {
      name: "Homepage",
      type: "http",
      config: { url: "https://www.example.test/" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(MONITOR_ID),
      name: "Homepage",
      type: "http",
      ...defaults,
      config: { url: "https://www.example.test/", ...HTTP_DEFAULTS },
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    expect(Object.keys(created.body)).not.toContain("integration_key");
    expect(Object.keys(created.body)).not.toContain("ping_url");
    expect((await admin.get(`${BASE}/${created.body.id}`)).body).toEqual(created.body);

    const full = await admin.post(BASE, {
      name: "Login API",
      type: "http",
      paused: true,
      config: {
        url: "http://127.0.0.1:9/login",
        method: "POST",
        expected_status: 401,
        keyword: "sign in",
        timeout_ms: 2500,
        interval_seconds: 30,
        failure_threshold: 5,
        success_threshold: 3,
      },
    });
    expect(full.status).toBe(201);
    expect(full.body.config).toEqual({
      url: "http://127.0.0.1:9/login",
      method: "POST",
      expected_status: 401,
      keyword: "sign in",
      timeout_ms: 2500,
      interval_seconds: 30,
      failure_threshold: 5,
      success_threshold: 3,
    });
    expect((await admin.get(`${BASE}/${full.body.id}`)).body).toEqual(full.body);
  });

  test("delete answers 204; the monitor is gone", async () => {
    const monitor = await createMonitor({ name: "Short-lived", type: "event" });
    const res = await admin.delete(`${BASE}/${monitor.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expectError(await admin.get(`${BASE}/${monitor.id}`), 404, "not_found");
    expectError(await admin.patch(`${BASE}/${monitor.id}`, { name: "x" }), 404, "not_found");
    expectError(await admin.delete(`${BASE}/${monitor.id}`), 404, "not_found");
    expect(await monitorIds()).not.toContain(monitor.id);
  });
});

describe("list", () => {
  test("filters by type, team and group, alone and together, and pages by cursor", async () => {
    const teamA = await must(admin.post("/api/v1/teams", { name: "Filter A" }));
    const teamB = await must(admin.post("/api/v1/teams", { name: "Filter B" }));
    const group = `grp-${Math.random().toString(36).slice(2, 8)}`;
    const hb = { interval_seconds: 600 };
    const m = {
      eventA: (await createMonitor({ name: "e-A", type: "event", team_id: teamA.id, group_id: group })).id,
      heartbeatA: (
        await createMonitor({
          name: "h-A",
          type: "heartbeat",
          team_id: teamA.id,
          group_id: group,
          config: hb,
        })
      ).id,
      heartbeatB: (await createMonitor({ name: "h-B", type: "heartbeat", team_id: teamB.id, config: hb })).id,
      httpGroup: (
        await createMonitor({
          name: "x-G",
          type: "http",
          group_id: group,
          paused: true,
          config: { url: "https://x.example.test" },
        })
      ).id,
      eventB: (await createMonitor({ name: "e-B", type: "event", team_id: teamB.id, group_id: "other" })).id,
    };
    const all = await monitorIds();
    expect([...all].sort()).toEqual(all);
    for (const id of Object.values(m)) expect(all).toContain(id);

    const typed = async (type: string) => {
      const res = await admin.get(`${BASE}?limit=200&type=${type}`);
      expect(res.status).toBe(200);
      for (const monitor of res.body.data) expect(monitor.type).toBe(type);
      return res.body.data.map((x: { id: string }) => x.id) as string[];
    };
    const heartbeats = await typed("heartbeat");
    expect(heartbeats).toEqual(expect.arrayContaining([m.heartbeatA, m.heartbeatB]));
    expect(heartbeats).not.toContain(m.eventA);
    const events = await typed("event");
    expect(events).toEqual(expect.arrayContaining([m.eventA, m.eventB]));
    expect(events).not.toContain(m.httpGroup);
    expect(await typed("http")).toContain(m.httpGroup);

    expect(await monitorIds(`&team_id=${teamA.id}`)).toEqual([m.eventA, m.heartbeatA]);
    expect(await monitorIds(`&team_id=${teamB.id}`)).toEqual([m.heartbeatB, m.eventB]);
    expect(await monitorIds(`&group_id=${group}`)).toEqual([m.eventA, m.heartbeatA, m.httpGroup]);
    expect(await monitorIds(`&group_id=${group}&type=heartbeat`)).toEqual([m.heartbeatA]);
    expect(await monitorIds(`&team_id=${teamB.id}&type=event`)).toEqual([m.eventB]);
    expect(await monitorIds(`&team_id=${teamA.id}&group_id=other`)).toEqual([]);
    expect(await monitorIds(`&team_id=${foreign.teamId}`)).toEqual([]);

    // Paging through a filter.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const res = await admin.get(
        `${BASE}?limit=2&group_id=${group}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((x: { id: string }) => x.id));
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      expect(res.body.data.length).toBe(res.body.has_more ? 2 : 1);
      cursor = res.body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toEqual([m.eventA, m.heartbeatA, m.httpGroup]);

    // Paging the whole list, one at a time.
    const everything: string[] = [];
    cursor = null;
    for (let page = 0; page < 200; page++) {
      const res = await admin.get(`${BASE}?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      everything.push(...res.body.data.map((x: { id: string }) => x.id));
      cursor = res.body.next_cursor;
      if (cursor === null) break;
    }
    expect(everything).toEqual(all);

    expectValidation(await admin.get(`${BASE}?type=ping`), "type");
    expectValidation(await admin.get(`${BASE}?bogus=1`), "bogus");
    expectValidation(await admin.get(`${BASE}?limit=0`), "limit");
    expectError(await admin.get(`${BASE}?cursor=garbage`), 400, "invalid_cursor");
  });
});

describe("PATCH", () => {
  test("fields change one by one; the routing credentials stay", async () => {
    const team = await must(admin.post("/api/v1/teams", { name: "Patch team" }));
    const created = await createMonitor({
      name: "Patch me",
      type: "event",
      group_id: "g1",
      labels: { a: "1", b: "2" },
      config: { cloudevents_type: "com.example.*" },
    });
    const changed = await admin.patch(`${BASE}/${created.id}`, {
      name: "  Patched  ",
      group_id: null,
      team_id: team.id,
      severity: "info",
      escalation_policy_id: policy,
      labels: { c: "3" },
      freshness_seconds: 300,
      paused: true,
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({
      ...created,
      name: "Patched",
      group_id: null,
      team_id: team.id,
      severity: "info",
      escalation_policy_id: policy,
      labels: { c: "3" },
      freshness_seconds: 300,
      paused: true,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(changed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect((await admin.get(`${BASE}/${created.id}`)).body).toEqual(changed.body);

    // Config replaced whole: a config without cloudevents_type drops it.
    const emptied = await admin.patch(`${BASE}/${created.id}`, { config: {}, escalation_policy_id: null });
    expect(emptied.status).toBe(200);
    expect(emptied.body).toEqual({
      ...changed.body,
      config: {},
      escalation_policy_id: null,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(emptied.body.integration_key).toBe(created.integration_key);

    const empty = await admin.patch(`${BASE}/${created.id}`, {});
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ ...emptied.body, updated_at: expect.stringMatching(TIMESTAMP) });

    // The largest labels allowed: 50 of them, names of 100 characters, values of 500.
    const largest = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [`${i}`.padStart(100, "k"), "v".repeat(500)]),
    );
    const relabelled = await admin.patch(`${BASE}/${created.id}`, { labels: largest });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body.labels).toEqual(largest);
    const unlabelled = await admin.patch(`${BASE}/${created.id}`, { labels: {} });
    expect(unlabelled.body.labels).toEqual({});
  });

  test("heartbeat and http configs are replaced whole, defaults filled in again", async () => {
    const hb = await createMonitor({
      name: "Cron job",
      type: "heartbeat",
      config: { interval_seconds: 300, time_zone: "America/New_York", grace_seconds: 5 },
    });
    const toCron = await admin.patch(`${BASE}/${hb.id}`, { config: { cron: "*/5 * * * *" } });
    expect(toCron.status).toBe(200);
    expect(toCron.body).toEqual({
      ...hb,
      config: { cron: "*/5 * * * *", time_zone: "UTC", grace_seconds: 60 },
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(toCron.body.ping_url).toBe(hb.ping_url);
    const back = await admin.patch(`${BASE}/${hb.id}`, { config: { interval_seconds: 120 } });
    expect(back.body.config).toEqual({ interval_seconds: 120, time_zone: "UTC", grace_seconds: 60 });

    const http = await createMonitor({
      name: "API",
      type: "http",
      paused: true,
      config: { url: "https://api.example.test/health", method: "POST", keyword: "ok", interval_seconds: 15 },
    });
    // HEAD gets no body, so a keyword could never be found.
    const headWithKeyword = await admin.patch(`${BASE}/${http.id}`, {
      config: { url: "https://api.example.test/health", method: "HEAD", keyword: "ok" },
    });
    expect(headWithKeyword.status).toBe(400);
    expect(headWithKeyword.body.error.details.fields).toEqual([
      { path: "config.keyword", problem: "cannot be checked with HEAD, which gets no body" },
    ]);
    const replaced = await admin.patch(`${BASE}/${http.id}`, {
      config: { url: "https://api.example.test/v2" },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      ...http,
      config: { url: "https://api.example.test/v2", ...HTTP_DEFAULTS },
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect((await admin.get(`${BASE}/${http.id}`)).body).toEqual(replaced.body);
  });

  test("the type cannot change; bad changes are 400 and change nothing", async () => {
    const hb = await createMonitor({
      name: "Immutable",
      type: "heartbeat",
      config: { interval_seconds: 60 },
    });
    const cases: [unknown, string][] = [
      [{ type: "event" }, "type"],
      [{ type: "heartbeat" }, "type"],
      [{ config: {} }, "config"],
      [{ config: { interval_seconds: 60, cron: "* * * * *" } }, "config"],
      [{ config: { cron: "whenever" } }, "config.cron"],
      [{ config: { interval_seconds: 60, time_zone: "Mars/Olympus" } }, "config.time_zone"],
      [{ config: { url: "https://x.example.test" } }, "config.url"],
      [{ name: "   " }, "name"],
      [{ severity: "fatal" }, "severity"],
      [{ escalation_policy_id: foreign.policyId }, "escalation_policy_id"],
      [{ team_id: foreign.teamId }, "team_id"],
      [{ labels: { env: 1 } }, "labels.env"],
      [{ labels: { "": "x" } }, "labels"],
      [{ config: { cron: "0 0 30 2 *" } }, "config.cron"],
      [{ integration_key: "0".repeat(32) }, "integration_key"],
      [{ status: "down" }, "status"],
    ];
    for (const [body, path] of cases) {
      expectValidation(await admin.patch(`${BASE}/${hb.id}`, body), path);
    }
    expect((await admin.get(`${BASE}/${hb.id}`)).body).toEqual(hb);
  });
});

describe("validation: 400 naming the field, nothing stored", () => {
  test("bad monitor bodies", async () => {
    const heartbeat = (config: unknown) => ({ name: "Bad", type: "heartbeat", config });
    const http = (config: unknown) => ({ name: "Bad", type: "http", config });
    const cases: [string, unknown, string][] = [
      [
        "heartbeat with both interval and cron",
        heartbeat({ interval_seconds: 60, cron: "* * * * *" }),
        "config",
      ],
      ["heartbeat with neither", heartbeat({ grace_seconds: 10 }), "config"],
      ["heartbeat with an empty config", heartbeat({}), "config"],
      ["heartbeat without config", { name: "Bad", type: "heartbeat" }, "config"],
      ["bad cron", heartbeat({ cron: "not a cron" }), "config.cron"],
      ["cron out of range", heartbeat({ cron: "61 * * * *" }), "config.cron"],
      ["empty cron", heartbeat({ cron: "" }), "config.cron"],
      ["cron that never matches (30 February)", heartbeat({ cron: "0 0 30 2 *" }), "config.cron"],
      ["cron that never matches (31 April)", heartbeat({ cron: "0 9 31 4 *" }), "config.cron"],
      ["bad zone", heartbeat({ interval_seconds: 60, time_zone: "Mars/Olympus" }), "config.time_zone"],
      ["bad zone with cron", heartbeat({ cron: "0 * * * *", time_zone: "Not/AZone" }), "config.time_zone"],
      ["interval too short", heartbeat({ interval_seconds: 0 }), "config.interval_seconds"],
      ["negative grace", heartbeat({ interval_seconds: 60, grace_seconds: -1 }), "config.grace_seconds"],
      ["heartbeat unknown field", heartbeat({ interval_seconds: 60, url: "https://x.test" }), "config.url"],
      ["http url not a url", http({ url: "notaurl" }), "config.url"],
      ["http url ftp", http({ url: "ftp://files.example.test" }), "config.url"],
      ["http without url", http({}), "config.url"],
      ["http without config", { name: "Bad", type: "http" }, "config.url"],
      ["http method PUT", http({ url: "https://x.test", method: "PUT" }), "config.method"],
      ["http status 700", http({ url: "https://x.test", expected_status: 700 }), "config.expected_status"],
      ["http threshold 0", http({ url: "https://x.test", failure_threshold: 0 }), "config.failure_threshold"],
      ["http unknown field", http({ url: "https://x.test", cron: "* * * * *" }), "config.cron"],
      ["event unknown field", { name: "Bad", type: "event", config: { foo: 1 } }, "config.foo"],
      ["config not an object", { name: "Bad", type: "event", config: [] }, "config"],
      [
        "unknown escalation policy",
        { name: "Bad", type: "event", escalation_policy_id: "pol_01jzzzzzzzzzzzzzzzzzzzzzzz" },
        "escalation_policy_id",
      ],
      [
        "another org's escalation policy",
        { name: "Bad", type: "event", escalation_policy_id: foreign.policyId },
        "escalation_policy_id",
      ],
      [
        "a label with a number",
        { name: "Bad", type: "event", labels: { env: "prod", tier: 1 } },
        "labels.tier",
      ],
      ["a label with null", { name: "Bad", type: "event", labels: { env: null } }, "labels.env"],
      ["labels not an object", { name: "Bad", type: "event", labels: ["env"] }, "labels"],
      ["a label with an empty name", { name: "Bad", type: "event", labels: { "": "x" } }, "labels"],
      [
        "a label name over 100 characters",
        { name: "Bad", type: "event", labels: { ["k".repeat(101)]: "x" } },
        "labels",
      ],
      [
        "51 labels",
        {
          name: "Bad",
          type: "event",
          labels: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])),
        },
        "labels",
      ],
      [
        "a label value over 500 characters",
        { name: "Bad", type: "event", labels: { env: "v".repeat(501) } },
        "labels.env",
      ],
      ["unknown type", { name: "Bad", type: "ping" }, "type"],
      ["no type", { name: "Bad" }, "type"],
      ["no name", { type: "event" }, "name"],
      ["blank name", { name: "   ", type: "event" }, "name"],
      ["bad severity", { name: "Bad", type: "event", severity: "error" }, "severity"],
      ["negative freshness", { name: "Bad", type: "event", freshness_seconds: -1 }, "freshness_seconds"],
      ["unknown team", { name: "Bad", type: "event", team_id: "team_01jzzzzzzzzzzzzzzzzzzzzzzz" }, "team_id"],
      ["another org's team", { name: "Bad", type: "event", team_id: foreign.teamId }, "team_id"],
      ["empty group", { name: "Bad", type: "event", group_id: "" }, "group_id"],
      ["status given", { name: "Bad", type: "event", status: "down" }, "status"],
      [
        "integration_key given",
        { name: "Bad", type: "event", integration_key: "0".repeat(32) },
        "integration_key",
      ],
    ];
    const before = await monitorIds();
    for (const [label, body, path] of cases) {
      const res = await admin.post(BASE, body);
      expect({ label, status: res.status, code: res.body?.error?.code }).toEqual({
        label,
        status: 400,
        code: "validation_failed",
      });
      expect({ label, paths: fieldPaths(res) }).toEqual({ label, paths: expect.arrayContaining([path]) });
    }
    expect(await monitorIds()).toEqual(before);
  });
});

describe("access", () => {
  let monitor: any;
  let viewer: Client;
  let alertsKey: Client;
  let monitorsKey: Client;

  beforeAll(async () => {
    monitor = await createMonitor({ name: "Access", type: "event" });
    viewer = admin.as((await signUpUser(server, "viewer@acme.test", "viewer")).token);
    alertsKey = admin.as(
      (await must(admin.post("/api/v1/api-keys", { name: "alerts only", scopes: ["alerts"] }))).secret,
    );
    monitorsKey = admin.as(
      (await must(admin.post("/api/v1/api-keys", { name: "monitors only", scopes: ["monitors"] }))).secret,
    );
  }, SLOW);

  const calls = (): AccessCall[] => [
    { label: "list", write: false, run: (c) => c.get(BASE) },
    { label: "read", write: false, run: (c) => c.get(`${BASE}/${monitor.id}`) },
    { label: "create", write: true, run: (c) => c.post(BASE, { name: "New", type: "event" }) },
    { label: "patch", write: true, run: (c) => c.patch(`${BASE}/${monitor.id}`, { name: "Changed" }) },
    { label: "delete", write: true, run: (c) => c.delete(`${BASE}/${monitor.id}`) },
  ];

  test("no credential → 401; a key without the monitors scope → 403 insufficient_scope", async () => {
    const before = await monitorIds();
    await expectRefused(calls(), [
      [anon, 401, "unauthenticated"],
      [admin.as(UNKNOWN_KEY), 401, "unauthenticated"],
      [alertsKey, 403, "insufficient_scope"],
    ]);
    expect(await monitorIds()).toEqual(before);
    expect((await admin.get(`${BASE}/${monitor.id}`)).body).toEqual(monitor);
  });

  test("a key with the monitors scope reads and changes monitors", async () => {
    expect((await monitorsKey.get(BASE)).status).toBe(200);
    expect((await monitorsKey.get(`${BASE}/${monitor.id}`)).body).toEqual(monitor);
    const made = await monitorsKey.post(BASE, {
      name: "Via monitors key",
      type: "heartbeat",
      config: { cron: "0 * * * *" },
    });
    expect(made.status).toBe(201);
    expect(made.body.ping_url).toMatch(PING_URL);
    expect((await monitorsKey.patch(`${BASE}/${made.body.id}`, { paused: true })).body.paused).toBe(true);
    // Naming a policy in a monitor needs no alerts scope.
    expect(
      (await monitorsKey.patch(`${BASE}/${made.body.id}`, { escalation_policy_id: policy })).body
        .escalation_policy_id,
    ).toBe(policy);
    expect((await monitorsKey.delete(`${BASE}/${made.body.id}`)).status).toBe(204);
  });

  test("a viewer reads monitors and changes nothing (403 forbidden_role)", async () => {
    const before = await monitorIds();
    await expectReadOnly(calls(), viewer);
    expect(await monitorIds()).toEqual(before);
    expect((await viewer.get(`${BASE}/${monitor.id}`)).body).toEqual(monitor);
  });

  test("another org's monitor is 404 on every endpoint and absent from the list", async () => {
    const theirs = (await foreign.client.get(`${BASE}/${foreign.monitorId}`)).body;
    for (const res of [
      await admin.get(`${BASE}/${foreign.monitorId}`),
      await admin.patch(`${BASE}/${foreign.monitorId}`, { name: "Mine now" }),
      await admin.patch(`${BASE}/${foreign.monitorId}`, { config: { bogus: true } }),
      await admin.delete(`${BASE}/${foreign.monitorId}`),
    ]) {
      expectError(res, 404, "not_found");
    }
    expect(await monitorIds()).not.toContain(foreign.monitorId);
    expect((await foreign.client.get(`${BASE}/${foreign.monitorId}`)).body).toEqual(theirs);
    expectError(await foreign.client.get(`${BASE}/${monitor.id}`), 404, "not_found");
    expectValidation(
      await foreign.client.patch(`${BASE}/${foreign.monitorId}`, { escalation_policy_id: policy }),
      "escalation_policy_id",
    );
    const theirList = await foreign.client.get(`${BASE}?limit=200`);
    expect(theirList.body.data).toEqual([theirs]);
  });

  test(
    "team rules: a member changes monitors of their teams or of no team",
    async () => {
      const mia = await signUpUser(server, "mia@acme.test", "member");
      const teamA = await must(admin.post("/api/v1/teams", { name: "Team A", member_ids: [mia.user.id] }));
      const teamB = await must(admin.post("/api/v1/teams", { name: "Team B" }));
      const A = teamA.id as string;
      const B = teamB.id as string;
      const member = admin.as(mia.token);

      // Create: team A or no team; not team B.
      const ofA = await member.post(BASE, { name: "A's", type: "event", team_id: A });
      expect(ofA.status).toBe(201);
      expect(ofA.body.team_id).toBe(A);
      const ofNone = await member.post(BASE, {
        name: "Nobody's",
        type: "heartbeat",
        config: { interval_seconds: 60 },
      });
      expect(ofNone.status).toBe(201);
      expect(ofNone.body.team_id).toBeNull();
      const before = await monitorIds();
      expectError(await member.post(BASE, { name: "B's", type: "event", team_id: B }), 403, "forbidden_role");
      expect(await monitorIds()).toEqual(before);

      // Change: A's and no team's monitors.
      expect(
        (await member.patch(`${BASE}/${ofA.body.id}`, { name: "A's (changed)", paused: true })).status,
      ).toBe(200);
      expect((await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: A })).status).toBe(200);
      expect((await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: null })).status).toBe(200);
      expect(
        (await member.patch(`${BASE}/${ofNone.body.id}`, { config: { cron: "0 9 * * *" } })).status,
      ).toBe(200);

      // Team B's monitor: readable, not changeable.
      const ofB = await createMonitor({ name: "B's", type: "event", team_id: B });
      expect((await member.get(`${BASE}/${ofB.id}`)).body).toEqual(ofB);
      expect((await member.get(`${BASE}?team_id=${B}`)).body.data).toEqual([ofB]);
      for (const res of [
        await member.patch(`${BASE}/${ofB.id}`, { name: "Mine now" }),
        await member.patch(`${BASE}/${ofB.id}`, { team_id: A }),
        await member.patch(`${BASE}/${ofB.id}`, { team_id: null }),
        await member.patch(`${BASE}/${ofB.id}`, { paused: true }),
        await member.delete(`${BASE}/${ofB.id}`),
        // Moving one of their own monitors to team B.
        await member.patch(`${BASE}/${ofA.body.id}`, { team_id: B }),
        await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: B }),
      ]) {
        expectError(res, 403, "forbidden_role");
      }
      expect((await admin.get(`${BASE}/${ofB.id}`)).body).toEqual(ofB);
      expect((await admin.get(`${BASE}/${ofA.body.id}`)).body.team_id).toBe(A);
      expect((await admin.get(`${BASE}/${ofNone.body.id}`)).body.team_id).toBeNull();

      // A team of another org is 400 for members too.
      expectValidation(await member.patch(`${BASE}/${ofA.body.id}`, { team_id: foreign.teamId }), "team_id");

      // A member's own API key is held to the same team rules.
      const key = await member.post("/api/v1/api-keys", { name: "mia's key", scopes: ["monitors"] });
      expect(key.status).toBe(201);
      const miaKey = admin.as(key.body.secret);
      expectError(await miaKey.patch(`${BASE}/${ofB.id}`, { name: "Via key" }), 403, "forbidden_role");
      expectError(
        await miaKey.post(BASE, { name: "B's via key", type: "event", team_id: B }),
        403,
        "forbidden_role",
      );
      expect((await miaKey.patch(`${BASE}/${ofA.body.id}`, { severity: "warning" })).status).toBe(200);

      // An admin changes anything, and may move monitors between teams.
      const moved = await admin.patch(`${BASE}/${ofB.id}`, { team_id: A });
      expect(moved.status).toBe(200);
      expect(moved.body.team_id).toBe(A);
      expect((await member.patch(`${BASE}/${ofB.id}`, { name: "Now A's" })).status).toBe(200);
      expect((await admin.patch(`${BASE}/${ofA.body.id}`, { team_id: B })).status).toBe(200);
      expectError(await member.patch(`${BASE}/${ofA.body.id}`, { name: "Gone" }), 403, "forbidden_role");
      expectError(await member.delete(`${BASE}/${ofA.body.id}`), 403, "forbidden_role");
      expect((await member.delete(`${BASE}/${ofB.id}`)).status).toBe(204);
      expect((await member.delete(`${BASE}/${ofNone.body.id}`)).status).toBe(204);
      expect((await admin.delete(`${BASE}/${ofA.body.id}`)).status).toBe(204);
    },
    SLOW,
  );
});
