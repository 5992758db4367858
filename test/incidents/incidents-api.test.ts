/**
 * The incidents API through a real `svc serve` (DESIGN §4-§6): create with its defaults, the
 * initial update, maintenance and explicit status/started_at; listing (active by default,
 * resolved, all) with keyset paging; PATCH and the status rules (any status may follow any
 * status, a status change is an update, resolved_at stamped and cleared); links to monitors and
 * status pages checked per org; updates with their edit history; deleting (owners and admins
 * only); authorship by users and service keys; scopes, roles, org isolation and Idempotency-Key.
 * Black-box: plain HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const INC_ID = /^inc_[0-9a-z]{26}$/;
const UPD_ID = /^upd_[0-9a-z]{26}$/;
const STATUSES = ["investigating", "identified", "monitoring", "resolved", "maintenance"] as const;
const OWNER_EMAIL = "owner@acme.test";

let server: TestServer;
let api: Client;
let ownerId: string;
let monitorA: string;
let monitorB: string;
let pageA: string;
let pageB: string;
let foreign: { client: Client; monitorId: string; pageId: string; incidentId: string };
let member: { client: Client; id: string; email: string };
let viewer: { client: Client; id: string };
let adminUser: { client: Client; id: string };

async function must(res: Promise<Response2> | Response2, status = 201): Promise<any> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

function fieldPaths(res: Response2): string[] {
  return res.body.error.details.fields.map((f: { path: string }) => f.path);
}

/** 400 validation_failed naming exactly these field paths. */
function expectValidation(res: Response2, ...paths: string[]) {
  expectError(res, 400, "validation_failed");
  expect(fieldPaths(res)).toEqual(paths);
}

function create(body: Record<string, unknown>, client = api): Promise<any> {
  return must(client.post("/api/v1/incidents", body));
}

async function getIncident(id: string, client = api): Promise<any> {
  return must(client.get(`/api/v1/incidents/${id}`), 200);
}

async function allIncidentIds(client = api): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await must(
      client.get(`/api/v1/incidents?status=all&limit=200${cursor ? `&cursor=${cursor}` : ""}`),
      200,
    );
    ids.push(...page.data.map((i: { id: string }) => i.id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

/** The incident as lists show it: everything but the updates. */
function listed(incident: any): any {
  const { updates: _updates, ...rest } = incident;
  return rest;
}

const ms = (t: string) => Date.parse(t);

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  ownerId = server.init?.owner.id as string;
  monitorA = (await must(api.post("/api/v1/monitors", { name: "Web", type: "event" }))).id;
  monitorB = (await must(api.post("/api/v1/monitors", { name: "DB", type: "event" }))).id;
  pageA = (await must(api.post("/api/v1/status-pages", { slug: "public", title: "Public" }))).id;
  pageB = (await must(api.post("/api/v1/status-pages", { slug: "internal", title: "Internal" }))).id;

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
  const client = api.as(other.api_key.secret);
  foreign = {
    client,
    monitorId: (await must(client.post("/api/v1/monitors", { name: "Theirs", type: "event" }))).id,
    pageId: (await must(client.post("/api/v1/status-pages", { slug: "public", title: "Theirs" }))).id,
    incidentId: (await create({ title: "Their incident", severity: "minor" }, client)).id,
  };

  const m = await signUpUser(server, "member@acme.test", "member");
  member = { client: api.as(m.token), id: m.user.id, email: "member@acme.test" };
  const v = await signUpUser(server, "viewer@acme.test", "viewer");
  viewer = { client: api.as(v.token), id: v.user.id };
  const a = await signUpUser(server, "admin@acme.test", "admin");
  adminUser = { client: api.as(a.token), id: a.user.id };
}, SLOW);
afterAll(() => server.dispose());

describe("create", () => {
  test("defaults: status investigating, started_at now, created_by the caller, no updates", async () => {
    const before = Date.now();
    const res = await api.post("/api/v1/incidents", { title: "API errors", severity: "major" });
    const after = Date.now();
    expect(res.status).toBe(201);
    const body = res.body;
    expect(body).toEqual({
      id: body.id,
      title: "API errors",
      status: "investigating",
      severity: "major",
      started_at: body.created_at,
      resolved_at: null,
      created_by: ownerId,
      created_at: body.created_at,
      updated_at: body.created_at,
      monitor_ids: [],
      status_page_ids: [],
      updates: [],
    });
    expect(body.id).toMatch(INC_ID);
    expect(body.created_at).toMatch(TIMESTAMP);
    expect(ms(body.started_at)).toBeGreaterThanOrEqual(before);
    expect(ms(body.started_at)).toBeLessThanOrEqual(after);
    expect(await getIncident(body.id)).toEqual(body);
  });

  test("an initial update: public by default, line breaks kept, updates listed newest first", async () => {
    const body = await create({
      title: "Checkout failing",
      severity: "critical",
      initial_update: { body: "We are looking into it.\nMore soon.\n" },
    });
    expect(body).toEqual({
      id: body.id,
      title: "Checkout failing",
      status: "investigating",
      severity: "critical",
      started_at: body.created_at,
      resolved_at: null,
      created_by: ownerId,
      created_at: body.created_at,
      updated_at: body.created_at,
      monitor_ids: [],
      status_page_ids: [],
      updates: [
        {
          id: body.updates[0].id,
          incident_id: body.id,
          status: "investigating",
          body: "We are looking into it.\nMore soon.\n",
          public: true,
          user_id: ownerId,
          user_email: OWNER_EMAIL,
          created_at: body.created_at,
          edited_at: null,
          edit_history: [],
        },
      ],
    });
    expect(body.updates[0].id).toMatch(UPD_ID);

    // Two more updates: the incident lists all three, newest first.
    const second = await must(api.post(`/api/v1/incidents/${body.id}/updates`, { body: "Second" }));
    const third = await must(
      member.client.post(`/api/v1/incidents/${body.id}/updates`, { body: "Third", public: false }),
    );
    const read = await getIncident(body.id);
    expect(read.updates).toEqual([third, second, body.updates[0]]);
    expect(read.updates.map((u: any) => [u.body, u.public, u.user_id, u.user_email])).toEqual([
      ["Third", false, member.id, member.email],
      ["Second", true, ownerId, OWNER_EMAIL],
      ["We are looking into it.\nMore soon.\n", true, ownerId, OWNER_EMAIL],
    ]);
  });

  test("an initial update may be private", async () => {
    const body = await create({
      title: "Internal only",
      severity: "minor",
      initial_update: { body: "Not for customers", public: false },
    });
    expect(body.updates.map((u: any) => [u.status, u.body, u.public])).toEqual([
      ["investigating", "Not for customers", false],
    ]);
  });

  test("severity maintenance: the status defaults to maintenance (the initial update too)", async () => {
    const body = await create({
      title: "Database upgrade",
      severity: "maintenance",
      initial_update: { body: "Planned work" },
    });
    expect([body.status, body.severity, body.resolved_at]).toEqual(["maintenance", "maintenance", null]);
    expect(body.updates.map((u: any) => u.status)).toEqual(["maintenance"]);
    // An explicit status wins over the maintenance default.
    const explicit = await create({
      title: "Upgrade ran late",
      severity: "maintenance",
      status: "identified",
    });
    expect([explicit.status, explicit.severity]).toEqual(["identified", "maintenance"]);
  });

  test("explicit status and started_at (any offset, returned in UTC)", async () => {
    const body = await create({
      title: "Earlier trouble",
      severity: "minor",
      status: "monitoring",
      started_at: "2024-05-01T10:00:00+02:00",
      initial_update: { body: "Fix deployed" },
    });
    expect([body.status, body.started_at, body.resolved_at]).toEqual([
      "monitoring",
      "2024-05-01T08:00:00.000Z",
      null,
    ]);
    expect(body.updates.map((u: any) => u.status)).toEqual(["monitoring"]);
    // Created already resolved: resolved_at is stamped.
    const resolved = await create({ title: "Already over", severity: "minor", status: "resolved" });
    expect([resolved.status, resolved.resolved_at]).toEqual(["resolved", resolved.created_at]);
  });

  test("links to monitors and status pages of the org", async () => {
    const body = await create({
      title: "Linked",
      severity: "major",
      monitor_ids: [monitorA, monitorB],
      status_page_ids: [pageB],
    });
    expect([body.monitor_ids, body.status_page_ids]).toEqual([[monitorA, monitorB].sort(), [pageB]]);
    expect(await getIncident(body.id)).toEqual(body);
  });

  test("invalid bodies are 400 naming the field; nothing is stored", async () => {
    const before = await allIncidentIds();
    const cases: [unknown, string[]][] = [
      [{ severity: "major" }, ["title"]],
      [{ title: "", severity: "major" }, ["title"]],
      [{ title: "   ", severity: "major" }, ["title"]],
      [{ title: "x" }, ["severity"]],
      [{ title: "x", severity: "warning" }, ["severity"]],
      [{ title: "x", severity: "major", status: "closed" }, ["status"]],
      [{ title: "x", severity: "major", started_at: "yesterday" }, ["started_at"]],
      [{ title: "x", severity: "major", started_at: "2024-05-01T10:00:00" }, ["started_at"]],
      [{ title: "x", severity: "major", initial_update: {} }, ["initial_update.body"]],
      [{ title: "x", severity: "major", initial_update: { body: "" } }, ["initial_update.body"]],
      [{ title: "x", severity: "major", initial_update: { body: " \n " } }, ["initial_update.body"]],
      [
        { title: "x", severity: "major", initial_update: { body: "b", status: "resolved" } },
        ["initial_update.status"],
      ],
      [{ title: "x", severity: "major", resolved_at: null }, ["resolved_at"]],
      [{ title: "x", severity: "major", created_by: ownerId }, ["created_by"]],
      [{ title: "x", severity: "major", monitor_ids: "mon_x" }, ["monitor_ids"]],
    ];
    for (const [body, paths] of cases) {
      const res = await api.post("/api/v1/incidents", body);
      expect([body, res.status, res.body?.error?.code]).toEqual([body, 400, "validation_failed"]);
      expect(fieldPaths(res)).toEqual(paths);
    }
    expect(await allIncidentIds()).toEqual(before);
  });
});

describe("monitor_ids and status_page_ids", () => {
  test("unknown or another org's ids are 400 naming the index; nothing is stored", async () => {
    const before = await allIncidentIds();
    const cases: [Record<string, unknown>, string][] = [
      [{ monitor_ids: ["mon_01jzzzzzzzzzzzzzzzzzzzzzzz"] }, "monitor_ids.0"],
      [{ monitor_ids: [monitorA, foreign.monitorId] }, "monitor_ids.1"],
      [{ monitor_ids: [monitorA, monitorB, "nope"] }, "monitor_ids.2"],
      [{ status_page_ids: ["spg_01jzzzzzzzzzzzzzzzzzzzzzzz"] }, "status_page_ids.0"],
      [{ status_page_ids: [pageA, foreign.pageId] }, "status_page_ids.1"],
      [{ monitor_ids: [monitorA], status_page_ids: [pageB, pageA, monitorA] }, "status_page_ids.2"],
      // A page id is not a monitor id and the other way round.
      [{ monitor_ids: [pageA] }, "monitor_ids.0"],
    ];
    for (const [links, path] of cases) {
      expectValidation(
        await api.post("/api/v1/incidents", { title: "Bad links", severity: "minor", ...links }),
        path,
      );
    }
    expect(await allIncidentIds()).toEqual(before);
  });

  test("PATCH replaces the links it names and keeps the others; bad ids change nothing", async () => {
    const incident = await create({
      title: "Relinked",
      severity: "minor",
      monitor_ids: [monitorA],
      status_page_ids: [pageA],
    });
    const swapped = await must(
      api.patch(`/api/v1/incidents/${incident.id}`, { monitor_ids: [monitorB] }),
      200,
    );
    expect([swapped.monitor_ids, swapped.status_page_ids]).toEqual([[monitorB], [pageA]]);
    const pages = await must(
      api.patch(`/api/v1/incidents/${incident.id}`, { status_page_ids: [pageA, pageB] }),
      200,
    );
    expect([pages.monitor_ids, pages.status_page_ids]).toEqual([[monitorB], [pageA, pageB].sort()]);
    const before = await getIncident(incident.id);
    for (const [links, path] of [
      [{ monitor_ids: [foreign.monitorId] }, "monitor_ids.0"],
      [
        { title: "Renamed", monitor_ids: [] as string[], status_page_ids: [pageA, "spg_x"] },
        "status_page_ids.1",
      ],
      [{ status: "resolved", status_page_ids: [foreign.pageId] }, "status_page_ids.0"],
    ] as const) {
      expectValidation(await api.patch(`/api/v1/incidents/${incident.id}`, links), path);
    }
    // Nothing of a refused PATCH is kept: no title, no links, no status, no update.
    expect(await getIncident(incident.id)).toEqual(before);
    const cleared = await must(
      api.patch(`/api/v1/incidents/${incident.id}`, { monitor_ids: [], status_page_ids: [] }),
      200,
    );
    expect([cleared.monitor_ids, cleared.status_page_ids]).toEqual([[], []]);
  });
});

describe("deleting a linked monitor", () => {
  test("removes it from the incidents' monitor_ids; the incidents stay", async () => {
    const doomed = (await must(api.post("/api/v1/monitors", { name: "Short-lived", type: "event" }))).id;
    const incident = await create({
      title: "Monitor goes",
      severity: "minor",
      monitor_ids: [monitorA, doomed],
    });
    expect(incident.monitor_ids).toEqual([monitorA, doomed].sort());
    expect((await api.delete(`/api/v1/monitors/${doomed}`)).status).toBe(204);
    expect(await getIncident(incident.id)).toEqual({ ...incident, monitor_ids: [monitorA] });
    expectValidation(
      await api.patch(`/api/v1/incidents/${incident.id}`, { monitor_ids: [doomed] }),
      "monitor_ids.0",
    );
  });
});

describe("listing", () => {
  let client: Client;
  /** In creation order: investigating, resolved, maintenance, monitoring (then identified). */
  let incidents: any[];

  beforeAll(async () => {
    const org = await server.admin([
      "org",
      "create",
      "--name",
      "Lister",
      "--slug",
      `lister-${Math.random().toString(36).slice(2, 8)}`,
      "--owner-email",
      "lister@lister.test",
    ]);
    client = api.as(org.api_key.secret);
    const monitor = await must(client.post("/api/v1/monitors", { name: "M", type: "event" }));
    const page = await must(client.post("/api/v1/status-pages", { slug: "p", title: "P" }));
    incidents = [
      await create({ title: "One", severity: "major", monitor_ids: [monitor.id] }, client),
      await create({ title: "Two", severity: "minor", status_page_ids: [page.id] }, client),
      await create({ title: "Three", severity: "maintenance" }, client),
      await create(
        { title: "Four", severity: "critical", status: "monitoring", monitor_ids: [monitor.id] },
        client,
      ),
      await create({ title: "Five", severity: "minor", status: "identified" }, client),
    ];
    // Two is resolved by PATCH (it was active when created).
    incidents[1] = await must(
      client.patch(`/api/v1/incidents/${incidents[1].id}`, { status: "resolved" }),
      200,
    );
  }, SLOW);

  const idsOf = (res: Response2) => res.body.data.map((i: { id: string }) => i.id);

  test("by default only active incidents, newest first, without updates", async () => {
    const res = await client.get("/api/v1/incidents");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [incidents[4], incidents[3], incidents[2], incidents[0]].map(listed),
      next_cursor: null,
      has_more: false,
    });
    expect((await client.get("/api/v1/incidents?status=active")).body).toEqual(res.body);
    // The list items carry the links.
    expect(res.body.data[1].monitor_ids).toEqual(incidents[3].monitor_ids);
    expect(res.body.data[1].monitor_ids).toHaveLength(1);
  });

  test("status=resolved and status=all", async () => {
    const resolved = await client.get("/api/v1/incidents?status=resolved");
    expect(resolved.body).toEqual({ data: [listed(incidents[1])], next_cursor: null, has_more: false });
    expect(resolved.body.data[0].status_page_ids).toHaveLength(1);
    expect(resolved.body.data[0].resolved_at).toMatch(TIMESTAMP);
    const all = await client.get("/api/v1/incidents?status=all");
    expect(all.body).toEqual({
      data: [...incidents].reverse().map(listed),
      next_cursor: null,
      has_more: false,
    });
  });

  test("a bad status, limit or cursor is 400", async () => {
    expectValidation(await client.get("/api/v1/incidents?status=open"), "status");
    expectValidation(await client.get("/api/v1/incidents?status="), "status");
    expectValidation(await client.get("/api/v1/incidents?limit=0"), "limit");
    expectValidation(await client.get("/api/v1/incidents?limit=201"), "limit");
    expectValidation(await client.get("/api/v1/incidents?bogus=1"), "bogus");
    expectError(await client.get("/api/v1/incidents?cursor=garbage"), 400, "invalid_cursor");
  });

  test("cursor paging walks every incident once; a cursor belongs to its status list", async () => {
    const first = await client.get("/api/v1/incidents?status=all&limit=2");
    expect([idsOf(first), first.body.has_more]).toEqual([[incidents[4].id, incidents[3].id], true]);
    expect(typeof first.body.next_cursor).toBe("string");
    const second = await client.get(`/api/v1/incidents?status=all&limit=2&cursor=${first.body.next_cursor}`);
    expect([idsOf(second), second.body.has_more]).toEqual([[incidents[2].id, incidents[1].id], true]);
    const third = await client.get(`/api/v1/incidents?status=all&limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body).toEqual({ data: [listed(incidents[0])], next_cursor: null, has_more: false });

    // Paging the active list skips the resolved one.
    const a1 = await client.get("/api/v1/incidents?limit=3");
    expect([idsOf(a1), a1.body.has_more]).toEqual([
      [incidents[4].id, incidents[3].id, incidents[2].id],
      true,
    ]);
    const a2 = await client.get(`/api/v1/incidents?limit=3&cursor=${a1.body.next_cursor}`);
    expect(a2.body).toEqual({ data: [listed(incidents[0])], next_cursor: null, has_more: false });

    // A cursor of one list is not valid for another.
    expectError(
      await client.get(`/api/v1/incidents?status=resolved&cursor=${a1.body.next_cursor}`),
      400,
      "invalid_cursor",
    );
  });

  test("another org's incidents never show up", async () => {
    const theirs = await allIncidentIds(client);
    expect(theirs.sort()).toEqual(incidents.map((i) => i.id).sort());
    expect(await allIncidentIds()).not.toContain(incidents[0].id);
  });
});

describe("read", () => {
  test("unknown ids and another org's incidents are 404", async () => {
    expectError(await api.get("/api/v1/incidents/inc_01jzzzzzzzzzzzzzzzzzzzzzzz"), 404, "not_found");
    expectError(await api.get("/api/v1/incidents/nope"), 404, "not_found");
    const path = `/api/v1/incidents/${foreign.incidentId}`;
    expectError(await api.get(path), 404, "not_found");
    expectError(await api.patch(path, { title: "Mine now" }), 404, "not_found");
    expectError(await api.delete(path), 404, "not_found");
    expectError(await api.post(`${path}/updates`, { body: "Hello" }), 404, "not_found");
    // Theirs is untouched.
    const theirs = await getIncident(foreign.incidentId, foreign.client);
    expect([theirs.title, theirs.updates]).toEqual(["Their incident", []]);
  });
});

describe("PATCH", () => {
  test("title and severity change without an update; updated_at moves", async () => {
    const incident = await create({ title: "Slow pages", severity: "minor" });
    await Bun.sleep(5);
    const res = await api.patch(`/api/v1/incidents/${incident.id}`, {
      title: "Very slow pages",
      severity: "critical",
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...incident,
      title: "Very slow pages",
      severity: "critical",
      updated_at: res.body.updated_at,
    });
    expect(ms(res.body.updated_at)).toBeGreaterThan(ms(incident.updated_at));
    expect(await getIncident(incident.id)).toEqual(res.body);
    // PATCH to the same status changes nothing and records no update.
    const same = await must(api.patch(`/api/v1/incidents/${incident.id}`, { status: "investigating" }), 200);
    expect([same.status, same.updates]).toEqual(["investigating", []]);
  });

  test("a status change records an update (empty body, public); resolved stamps and leaving clears resolved_at", async () => {
    const incident = await create({ title: "Queue backlog", severity: "major" });
    const identified = await must(
      member.client.patch(`/api/v1/incidents/${incident.id}`, { status: "identified" }),
      200,
    );
    expect(identified).toEqual({
      ...incident,
      status: "identified",
      updated_at: identified.updated_at,
      updates: [
        {
          id: identified.updates[0].id,
          incident_id: incident.id,
          status: "identified",
          body: "",
          public: true,
          user_id: member.id,
          user_email: member.email,
          created_at: identified.updated_at,
          edited_at: null,
          edit_history: [],
        },
      ],
    });
    expect(identified.updates[0].id).toMatch(UPD_ID);

    const resolved = await must(api.patch(`/api/v1/incidents/${incident.id}`, { status: "resolved" }), 200);
    expect(resolved.status).toBe("resolved");
    expect(resolved.resolved_at).toBe(resolved.updated_at);
    expect(resolved.updates.map((u: any) => [u.status, u.body, u.public, u.user_id])).toEqual([
      ["resolved", "", true, ownerId],
      ["identified", "", true, member.id],
    ]);
    expect(resolved.updates[0].created_at).toBe(resolved.resolved_at);

    const reopened = await must(api.patch(`/api/v1/incidents/${incident.id}`, { status: "monitoring" }), 200);
    expect([reopened.status, reopened.resolved_at]).toEqual(["monitoring", null]);
    expect(reopened.updates.map((u: any) => u.status)).toEqual(["monitoring", "resolved", "identified"]);
    expect(await getIncident(incident.id)).toEqual(reopened);
  });

  test(
    "any status may follow any status",
    async () => {
      const incident = await create({ title: "Round and round", severity: "minor" });
      let current: string = incident.status;
      let changes = 0;
      for (const from of STATUSES) {
        for (const to of STATUSES) {
          if (from === to) continue;
          for (const status of [from, to]) {
            if (status === current) continue;
            const res = await api.patch(`/api/v1/incidents/${incident.id}`, { status });
            expect([from, to, res.status, res.body.status]).toEqual([from, to, 200, status]);
            expect(res.body.resolved_at === null).toBe(status !== "resolved");
            expect(res.body.updates[0].status).toBe(status);
            current = status;
            changes += 1;
          }
        }
      }
      const final = await getIncident(incident.id);
      expect(final.updates).toHaveLength(changes);
      expect(final.updates.every((u: any) => u.body === "" && u.public === true)).toBe(true);
    },
    SLOW,
  );

  test("severity maintenance, unknown fields and bad values are 400; nothing changes", async () => {
    const incident = await create({ title: "Strict", severity: "major" });
    const cases: [unknown, string][] = [
      [{ severity: "maintenance" }, "severity"],
      [{ severity: "info" }, "severity"],
      [{ status: "open" }, "status"],
      [{ title: "" }, "title"],
      [{ title: "  " }, "title"],
      [{ resolved_at: null }, "resolved_at"],
      [{ started_at: "2024-01-01T00:00:00Z" }, "started_at"],
      [{ created_by: "usr_x" }, "created_by"],
      [{ updates: [] }, "updates"],
      [{ initial_update: { body: "x" } }, "initial_update"],
    ];
    for (const [body, path] of cases) {
      expectValidation(await api.patch(`/api/v1/incidents/${incident.id}`, body), path);
    }
    expect(await getIncident(incident.id)).toEqual(incident);
    // Status maintenance is a status like the others; the severity stays.
    const maint = await must(api.patch(`/api/v1/incidents/${incident.id}`, { status: "maintenance" }), 200);
    expect([maint.status, maint.severity]).toEqual(["maintenance", "major"]);
    // A maintenance incident's severity can be changed to a real one.
    const planned = await create({ title: "Planned", severity: "maintenance" });
    const real = await must(api.patch(`/api/v1/incidents/${planned.id}`, { severity: "critical" }), 200);
    expect([real.status, real.severity]).toEqual(["maintenance", "critical"]);
    expectError(
      await api.patch("/api/v1/incidents/inc_01jzzzzzzzzzzzzzzzzzzzzzzz", { title: "x" }),
      404,
      "not_found",
    );
  });
});

describe("DELETE", () => {
  test("the owner's key and an admin user delete (204, then 404)", async () => {
    for (const client of [api, adminUser.client]) {
      const incident = await create({ title: "Doomed", severity: "minor", initial_update: { body: "x" } });
      const res = await client.delete(`/api/v1/incidents/${incident.id}`);
      expect([res.status, res.text]).toEqual([204, ""]);
      expectError(await api.get(`/api/v1/incidents/${incident.id}`), 404, "not_found");
      expectError(await client.delete(`/api/v1/incidents/${incident.id}`), 404, "not_found");
      expectError(
        await api.post(`/api/v1/incidents/${incident.id}/updates`, { body: "late" }),
        404,
        "not_found",
      );
      expect(await allIncidentIds()).not.toContain(incident.id);
    }
  });

  test("a member and a viewer cannot delete (403 forbidden_role)", async () => {
    const incident = await create({ title: "Survivor", severity: "minor" });
    expectError(await member.client.delete(`/api/v1/incidents/${incident.id}`), 403, "forbidden_role");
    expectError(await viewer.client.delete(`/api/v1/incidents/${incident.id}`), 403, "forbidden_role");
    expect(await getIncident(incident.id)).toEqual(incident);
  });
});

describe("updates", () => {
  test("POST → 201 with the update; the status is unchanged by default", async () => {
    const incident = await create({ title: "Updates", severity: "major", status: "identified" });
    const res = await api.post(`/api/v1/incidents/${incident.id}/updates`, {
      body: "Fix in progress\nETA 1h",
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: res.body.id,
      incident_id: incident.id,
      status: "identified",
      body: "Fix in progress\nETA 1h",
      public: true,
      user_id: ownerId,
      user_email: OWNER_EMAIL,
      created_at: res.body.created_at,
      edited_at: null,
      edit_history: [],
    });
    expect(res.body.id).toMatch(UPD_ID);
    const read = await getIncident(incident.id);
    expect(read).toEqual({ ...incident, updated_at: res.body.created_at, updates: [res.body] });
    // The same status given explicitly changes nothing either.
    const same = await must(
      api.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Still on it", status: "identified" }),
    );
    expect(same.status).toBe("identified");
    expect((await getIncident(incident.id)).status).toBe("identified");
  });

  test("a status in the update changes the incident's, and resolved_at with it", async () => {
    const incident = await create({ title: "Status by update", severity: "minor" });
    const resolved = await must(
      api.post(`/api/v1/incidents/${incident.id}/updates`, { body: "All good", status: "resolved" }),
    );
    expect([resolved.status, resolved.body, resolved.public]).toEqual(["resolved", "All good", true]);
    let read = await getIncident(incident.id);
    expect([read.status, read.resolved_at, read.updated_at]).toEqual([
      "resolved",
      resolved.created_at,
      resolved.created_at,
    ]);
    // Another update while resolved keeps resolved_at.
    await must(api.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Postmortem soon" }));
    read = await getIncident(incident.id);
    expect([read.status, read.resolved_at]).toEqual(["resolved", resolved.created_at]);
    const back = await must(
      api.post(`/api/v1/incidents/${incident.id}/updates`, {
        body: "It is back",
        status: "investigating",
        public: false,
      }),
    );
    expect([back.status, back.public]).toEqual(["investigating", false]);
    read = await getIncident(incident.id);
    expect([read.status, read.resolved_at]).toEqual(["investigating", null]);
    expect(read.updates.map((u: any) => [u.status, u.body])).toEqual([
      ["investigating", "It is back"],
      ["resolved", "Postmortem soon"],
      ["resolved", "All good"],
    ]);
  });

  test("body is required (missing or blank is 400); bad fields are 400; nothing is stored", async () => {
    const incident = await create({ title: "Strict updates", severity: "minor" });
    const path = `/api/v1/incidents/${incident.id}/updates`;
    const cases: [unknown, string][] = [
      [{}, "body"],
      [{ status: "resolved" }, "body"],
      [{ body: "" }, "body"],
      [{ body: "   \n\t " }, "body"],
      [{ body: 42 }, "body"],
      [{ body: "x", status: "done" }, "status"],
      [{ body: "x", public: "yes" }, "public"],
      [{ body: "x", user_id: ownerId }, "user_id"],
    ];
    for (const [body, field] of cases) expectValidation(await api.post(path, body), field);
    expect(await getIncident(incident.id)).toEqual(incident);
    expectError(
      await api.post("/api/v1/incidents/inc_01jzzzzzzzzzzzzzzzzzzzzzzz/updates", { body: "x" }),
      404,
      "not_found",
    );
  });

  test("editing keeps the earlier versions in edit_history with edited_by and edited_at", async () => {
    const incident = await create({
      title: "Edits",
      severity: "major",
      initial_update: { body: "Frist draft" },
    });
    const original = incident.updates[0];
    const path = `/api/v1/incidents/${incident.id}/updates/${original.id}`;
    await Bun.sleep(5);
    const first = await api.patch(path, { body: "First draft" });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      ...original,
      body: "First draft",
      edited_at: first.body.edited_at,
      edit_history: [
        { body: "Frist draft", public: true, edited_at: first.body.edited_at, edited_by: ownerId },
      ],
    });
    expect(first.body.edited_at).toMatch(TIMESTAMP);
    expect(ms(first.body.edited_at)).toBeGreaterThan(ms(original.created_at));

    await Bun.sleep(5);
    const second = await must(member.client.patch(path, { public: false }), 200);
    expect(second).toEqual({
      ...original,
      body: "First draft",
      public: false,
      edited_at: second.edited_at,
      edit_history: [
        first.body.edit_history[0],
        { body: "First draft", public: true, edited_at: second.edited_at, edited_by: member.id },
      ],
    });
    expect(ms(second.edited_at)).toBeGreaterThan(ms(first.body.edited_at));

    const third = await must(api.patch(path, { body: "Final\nwords", public: true }), 200);
    expect([third.body, third.public, third.edit_history.length]).toEqual(["Final\nwords", true, 3]);
    expect(third.edit_history[2]).toEqual({
      body: "First draft",
      public: false,
      edited_at: third.edited_at,
      edited_by: ownerId,
    });
    const read = await getIncident(incident.id);
    expect(read.updates).toEqual([third]);
    expect([read.status, read.updated_at]).toEqual(["investigating", third.edited_at]);
  });

  test("editing: blank body or unknown fields are 400, a missing update is 404", async () => {
    const incident = await create({
      title: "Edit errors",
      severity: "minor",
      initial_update: { body: "Hi" },
    });
    const other = await create({ title: "Other", severity: "minor", initial_update: { body: "Theirs" } });
    const update = incident.updates[0];
    const path = `/api/v1/incidents/${incident.id}/updates/${update.id}`;
    expectValidation(await api.patch(path, { body: "" }), "body");
    expectValidation(await api.patch(path, { body: "  " }), "body");
    expectValidation(await api.patch(path, { status: "resolved" }), "status");
    expectValidation(await api.patch(path, { public: 1 }), "public");
    expectError(
      await api.patch(`/api/v1/incidents/${incident.id}/updates/upd_01jzzzzzzzzzzzzzzzzzzzzzzz`, {
        body: "x",
      }),
      404,
      "not_found",
    );
    // An update of another incident is not found under this one.
    expectError(
      await api.patch(`/api/v1/incidents/${incident.id}/updates/${other.updates[0].id}`, { body: "x" }),
      404,
      "not_found",
    );
    expectError(
      await api.patch(`/api/v1/incidents/inc_01jzzzzzzzzzzzzzzzzzzzzzzz/updates/${update.id}`, { body: "x" }),
      404,
      "not_found",
    );
    expect(await getIncident(incident.id)).toEqual(incident);
    expect(await getIncident(other.id)).toEqual(other);
  });

  test("deleting an update: owners and admins only, and the incident's status never changes", async () => {
    const incident = await create({
      title: "Deleting updates",
      severity: "major",
      initial_update: { body: "Start" },
    });
    const resolved = await must(api.patch(`/api/v1/incidents/${incident.id}`, { status: "resolved" }), 200);
    const statusUpdate = resolved.updates[0];
    expect(statusUpdate.status).toBe("resolved");
    const path = `/api/v1/incidents/${incident.id}/updates/${statusUpdate.id}`;
    expectError(await member.client.delete(path), 403, "forbidden_role");
    expectError(await viewer.client.delete(path), 403, "forbidden_role");
    expect(await getIncident(incident.id)).toEqual(resolved);

    const res = await adminUser.client.delete(path);
    expect([res.status, res.text]).toEqual([204, ""]);
    const after = await getIncident(incident.id);
    expect([after.status, after.resolved_at]).toEqual(["resolved", resolved.resolved_at]);
    expect(after.updates).toEqual([incident.updates[0]]);
    expectError(await api.delete(path), 404, "not_found");
    // An update is only found under its own incident.
    const other = await create({ title: "Another", severity: "minor", initial_update: { body: "Keep me" } });
    expectError(
      await api.delete(`/api/v1/incidents/${incident.id}/updates/${other.updates[0].id}`),
      404,
      "not_found",
    );
    expect(await getIncident(other.id)).toEqual(other);
    expectError(await api.patch(path, { body: "resurrected" }), 404, "not_found");
    // The last update too: the incident keeps its status, with no updates at all.
    expect(
      (await api.delete(`/api/v1/incidents/${incident.id}/updates/${incident.updates[0].id}`)).status,
    ).toBe(204);
    const empty = await getIncident(incident.id);
    expect([empty.status, empty.resolved_at, empty.updates]).toEqual(["resolved", resolved.resolved_at, []]);
  });
});

describe("authorship", () => {
  test("a service key writes as key:<id> with user_email null", async () => {
    const key = await server.admin([
      "key",
      "create",
      "--org",
      server.orgSlug,
      "--name",
      "incident bot",
      "--scopes",
      "incidents",
      "--service",
    ]);
    const bot = api.as(key.secret);
    const actor = `key:${key.id}`;
    const incident = await create(
      { title: "Bot incident", severity: "minor", initial_update: { body: "Opened by a bot" } },
      bot,
    );
    expect(incident.created_by).toBe(actor);
    expect(incident.updates).toEqual([
      {
        id: incident.updates[0].id,
        incident_id: incident.id,
        status: "investigating",
        body: "Opened by a bot",
        public: true,
        user_id: actor,
        user_email: null,
        created_at: incident.created_at,
        edited_at: null,
        edit_history: [],
      },
    ]);
    const posted = await must(bot.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Bot again" }));
    expect([posted.user_id, posted.user_email]).toEqual([actor, null]);
    const patched = await must(bot.patch(`/api/v1/incidents/${incident.id}`, { status: "monitoring" }), 200);
    expect([patched.updates[0].user_id, patched.updates[0].user_email]).toEqual([actor, null]);
    // The owner edits the bot's update: edited_by names the owner; the bot edits the owner's.
    const edited = await must(
      api.patch(`/api/v1/incidents/${incident.id}/updates/${posted.id}`, { body: "Bot, edited" }),
      200,
    );
    expect([edited.user_id, edited.user_email, edited.edit_history[0].edited_by]).toEqual([
      actor,
      null,
      ownerId,
    ]);
    const mine = await must(api.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Owner says" }));
    const botEdit = await must(
      bot.patch(`/api/v1/incidents/${incident.id}/updates/${mine.id}`, { public: false }),
      200,
    );
    expect([botEdit.user_id, botEdit.user_email, botEdit.edit_history[0].edited_by]).toEqual([
      ownerId,
      OWNER_EMAIL,
      actor,
    ]);
    // Without scope admin a service key has no admin privilege: it cannot delete.
    expectError(
      await bot.delete(`/api/v1/incidents/${incident.id}/updates/${mine.id}`),
      403,
      "forbidden_role",
    );
    expectError(await bot.delete(`/api/v1/incidents/${incident.id}`), 403, "forbidden_role");
    // A service key with scope admin can.
    const adminKey = await server.admin([
      "key",
      "create",
      "--org",
      server.orgSlug,
      "--name",
      "admin bot",
      "--scopes",
      "admin",
      "--service",
    ]);
    const adminBot = api.as(adminKey.secret);
    expect((await adminBot.delete(`/api/v1/incidents/${incident.id}/updates/${mine.id}`)).status).toBe(204);
    expect((await adminBot.delete(`/api/v1/incidents/${incident.id}`)).status).toBe(204);
    expectError(await api.get(`/api/v1/incidents/${incident.id}`), 404, "not_found");
  });

  test("a member's session writes as the member", async () => {
    const incident = await create(
      { title: "Member incident", severity: "minor", initial_update: { body: "By a member" } },
      member.client,
    );
    expect(incident.created_by).toBe(member.id);
    expect([incident.updates[0].user_id, incident.updates[0].user_email]).toEqual([member.id, member.email]);
  });
});

describe("access", () => {
  test("a viewer reads but changes nothing (403 forbidden_role)", async () => {
    const incident = await create({ title: "Viewed", severity: "minor", initial_update: { body: "Look" } });
    const v = viewer.client;
    expect(await must(v.get(`/api/v1/incidents/${incident.id}`), 200)).toEqual(incident);
    expect(
      (await must(v.get("/api/v1/incidents?status=all&limit=200"), 200)).data.map((i: any) => i.id),
    ).toContain(incident.id);
    const path = `/api/v1/incidents/${incident.id}`;
    expectError(await v.post("/api/v1/incidents", { title: "No", severity: "minor" }), 403, "forbidden_role");
    expectError(await v.patch(path, { title: "No" }), 403, "forbidden_role");
    expectError(await v.post(`${path}/updates`, { body: "No" }), 403, "forbidden_role");
    expectError(
      await v.patch(`${path}/updates/${incident.updates[0].id}`, { body: "No" }),
      403,
      "forbidden_role",
    );
    expect(await getIncident(incident.id)).toEqual(incident);
  });

  test("a key without scope incidents is 403 insufficient_scope; no credential is 401", async () => {
    const incident = await create({ title: "Scoped", severity: "minor", initial_update: { body: "x" } });
    const key = await must(api.post("/api/v1/api-keys", { name: "alerts only", scopes: ["alerts"] }));
    const alertsOnly = api.as(key.secret);
    const anon = api.as();
    const path = `/api/v1/incidents/${incident.id}`;
    const calls: [string, (c: Client) => Promise<Response2>][] = [
      ["list", (c) => c.get("/api/v1/incidents")],
      ["create", (c) => c.post("/api/v1/incidents", { title: "No", severity: "minor" })],
      ["read", (c) => c.get(path)],
      ["patch", (c) => c.patch(path, { title: "No" })],
      ["delete", (c) => c.delete(path)],
      ["post update", (c) => c.post(`${path}/updates`, { body: "No" })],
      ["edit update", (c) => c.patch(`${path}/updates/${incident.updates[0].id}`, { body: "No" })],
      ["delete update", (c) => c.delete(`${path}/updates/${incident.updates[0].id}`)],
    ];
    for (const [name, call] of calls) {
      const scoped = await call(alertsOnly);
      expect([name, scoped.status, scoped.body?.error?.code]).toEqual([name, 403, "insufficient_scope"]);
      const none = await call(anon);
      expect([name, none.status, none.body?.error?.code]).toEqual([name, 401, "unauthenticated"]);
    }
    expect(await getIncident(incident.id)).toEqual(incident);
    // A key with just scope incidents works.
    const incidentsKey = await must(
      api.post("/api/v1/api-keys", { name: "incidents", scopes: ["incidents"] }),
    );
    expect((await api.as(incidentsKey.secret).get(path)).status).toBe(200);
  });
});

describe("Idempotency-Key", () => {
  test("a retried create with the same key produces one incident; another body is 409", async () => {
    const headers = { "idempotency-key": "create-incident-once" };
    const body = { title: "Exactly once", severity: "major", initial_update: { body: "Only one" } };
    const first = await api.post("/api/v1/incidents", body, headers);
    expect(first.status).toBe(201);
    const retry = await api.post("/api/v1/incidents", body, headers);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const all = await must(api.get("/api/v1/incidents?status=all&limit=200"), 200);
    expect(all.data.filter((i: any) => i.title === "Exactly once").map((i: any) => i.id)).toEqual([
      first.body.id,
    ]);
    expect((await getIncident(first.body.id)).updates).toHaveLength(1);
    expectError(
      await api.post("/api/v1/incidents", { ...body, title: "Something else" }, headers),
      409,
      "idempotency_conflict",
    );
    // Without the key, the same body makes a second incident.
    const again = await must(api.post("/api/v1/incidents", body));
    expect(again.id).not.toBe(first.body.id);
  });

  test("a retried update with the same key is posted once", async () => {
    const incident = await create({ title: "Update once", severity: "minor" });
    const headers = { "idempotency-key": "update-once" };
    const path = `/api/v1/incidents/${incident.id}/updates`;
    const first = await must(api.post(path, { body: "Once", status: "monitoring" }, headers));
    const retry = await api.post(path, { body: "Once", status: "monitoring" }, headers);
    expect([retry.status, retry.body]).toEqual([201, first]);
    expect((await getIncident(incident.id)).updates).toEqual([first]);
  });
});
