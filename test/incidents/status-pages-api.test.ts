/**
 * The status pages API through a real `svc serve` (DESIGN §6, scope incidents): CRUD with exact
 * bodies and keyset paging, slug validation, slugs unique within an org (another org may reuse
 * one), roles, scopes and org isolation, and what deleting a page does to the incidents that
 * named it. The public rendering (`/status/{org}/{page}`) is not covered here. Black-box: plain
 * HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SPG_ID = /^spg_[0-9a-z]{26}$/;
const BASE = "/api/v1/status-pages";

let server: TestServer;
let api: Client;
let other: Client;

async function must(res: Promise<Response2> | Response2, status = 201): Promise<any> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

function expectValidation(res: Response2, path: string) {
  expectError(res, 400, "validation_failed");
  expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual([path]);
}

async function newOrg(name: string): Promise<Client> {
  const org = await server.admin([
    "org",
    "create",
    "--name",
    name,
    "--slug",
    `${name.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}`,
    "--owner-email",
    `owner@${name.toLowerCase()}.test`,
  ]);
  return api.as(org.api_key.secret);
}

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  other = await newOrg("Other");
}, SLOW);
afterAll(() => server.dispose());

describe("CRUD", () => {
  test("create, read, list, PATCH and DELETE with exact bodies", async () => {
    const client = await newOrg("Crud");
    const before = Date.now();
    const res = await client.post(BASE, {
      slug: "status",
      title: "Acme Status",
      description: "Live status of Acme services.\nUpdated by the on-call team.",
    });
    expect(res.status).toBe(201);
    const page = res.body;
    expect(page).toEqual({
      id: page.id,
      slug: "status",
      title: "Acme Status",
      description: "Live status of Acme services.\nUpdated by the on-call team.",
      created_at: page.created_at,
      updated_at: page.created_at,
    });
    expect(page.id).toMatch(SPG_ID);
    expect(page.created_at).toMatch(TIMESTAMP);
    expect(Date.parse(page.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(page.created_at)).toBeLessThanOrEqual(Date.now());

    // description defaults to "".
    const bare = await must(client.post(BASE, { slug: "a1", title: "Bare" }));
    expect(bare).toEqual({
      id: bare.id,
      slug: "a1",
      title: "Bare",
      description: "",
      created_at: bare.created_at,
      updated_at: bare.created_at,
    });

    expect(await must(client.get(`${BASE}/${page.id}`), 200)).toEqual(page);
    expect(await must(client.get(BASE), 200)).toEqual({
      data: [page, bare],
      next_cursor: null,
      has_more: false,
    });

    // Keyset paging, in creation order.
    const third = await must(client.post(BASE, { slug: "x-9", title: "Third" }));
    const p1 = await must(client.get(`${BASE}?limit=2`), 200);
    expect([p1.data, p1.has_more, typeof p1.next_cursor]).toEqual([[page, bare], true, "string"]);
    const p2 = await must(client.get(`${BASE}?limit=2&cursor=${p1.next_cursor}`), 200);
    expect(p2).toEqual({ data: [third], next_cursor: null, has_more: false });
    expectError(await client.get(`${BASE}?cursor=garbage`), 400, "invalid_cursor");
    expectValidation(await client.get(`${BASE}?limit=0`), "limit");
    expectValidation(await client.get(`${BASE}?limit=201`), "limit");
    expectValidation(await client.get(`${BASE}?status=all`), "status");

    // PATCH each field; the others stay.
    await Bun.sleep(5);
    const titled = await must(client.patch(`${BASE}/${page.id}`, { title: "Acme Service Status" }), 200);
    expect(titled).toEqual({ ...page, title: "Acme Service Status", updated_at: titled.updated_at });
    expect(Date.parse(titled.updated_at)).toBeGreaterThan(Date.parse(page.updated_at));
    const described = await must(client.patch(`${BASE}/${page.id}`, { description: "" }), 200);
    expect(described).toEqual({ ...titled, description: "", updated_at: described.updated_at });
    const moved = await must(client.patch(`${BASE}/${page.id}`, { slug: "acme-status" }), 200);
    expect(moved).toEqual({ ...described, slug: "acme-status", updated_at: moved.updated_at });
    // Its own slug is not a conflict; an empty PATCH changes nothing but updated_at.
    const same = await must(client.patch(`${BASE}/${page.id}`, { slug: "acme-status" }), 200);
    expect(same).toEqual({ ...moved, updated_at: same.updated_at });
    const empty = await must(client.patch(`${BASE}/${page.id}`, {}), 200);
    expect(empty).toEqual({ ...moved, updated_at: empty.updated_at });
    expect(await must(client.get(`${BASE}/${page.id}`), 200)).toEqual(empty);

    const del = await client.delete(`${BASE}/${page.id}`);
    expect([del.status, del.text]).toEqual([204, ""]);
    expectError(await client.get(`${BASE}/${page.id}`), 404, "not_found");
    expectError(await client.patch(`${BASE}/${page.id}`, { title: "Back" }), 404, "not_found");
    expectError(await client.delete(`${BASE}/${page.id}`), 404, "not_found");
    expect(await must(client.get(BASE), 200)).toEqual({
      data: [bare, third],
      next_cursor: null,
      has_more: false,
    });
    // The slug is free again.
    expect((await must(client.post(BASE, { slug: "acme-status", title: "Again" }))).slug).toBe("acme-status");
  });

  test("unknown ids are 404", async () => {
    for (const id of ["spg_01jzzzzzzzzzzzzzzzzzzzzzzz", "nope"]) {
      expectError(await api.get(`${BASE}/${id}`), 404, "not_found");
      expectError(await api.patch(`${BASE}/${id}`, { title: "x" }), 404, "not_found");
      expectError(await api.delete(`${BASE}/${id}`), 404, "not_found");
    }
  });
});

describe("validation", () => {
  const BAD_SLUGS = [
    "Status",
    "has space",
    "-lead",
    "trail-",
    "under_score",
    "",
    "a".repeat(41),
    "café",
    "a/b",
  ];

  test("a bad slug is 400 naming `slug`, on create and on PATCH; nothing is stored", async () => {
    const client = await newOrg("Slugs");
    const page = await must(client.post(BASE, { slug: "ok", title: "OK" }));
    for (const slug of BAD_SLUGS) {
      const created = await client.post(BASE, { slug, title: "Bad" });
      expect([slug, created.status, created.body?.error?.code]).toEqual([slug, 400, "validation_failed"]);
      expect(created.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(["slug"]);
      const patched = await client.patch(`${BASE}/${page.id}`, { slug });
      expect([slug, patched.status]).toEqual([slug, 400]);
      expectValidation(patched, "slug");
    }
    // Good ones: 1 to 40 of a-z, 0-9 and inner dashes.
    for (const slug of ["a", "9", "a-b", "status-2024", "x".repeat(40), "a--b"]) {
      expect([slug, (await client.post(BASE, { slug, title: slug })).status]).toEqual([slug, 201]);
    }
    expect(await must(client.get(`${BASE}/${page.id}`), 200)).toEqual(page);
  });

  test("title, description and unknown fields", async () => {
    const client = await newOrg("Fields");
    const page = await must(client.post(BASE, { slug: "p", title: "P" }));
    const createCases: [unknown, string][] = [
      [{ slug: "t" }, "title"],
      [{ slug: "t", title: "" }, "title"],
      [{ slug: "t", title: "   " }, "title"],
      [{ slug: "t", title: "x".repeat(201) }, "title"],
      [{ title: "No slug" }, "slug"],
      [{ slug: "t", title: "T", description: "d".repeat(2001) }, "description"],
      [{ slug: "t", title: "T", description: null }, "description"],
      [{ slug: "t", title: "T", public: true }, "public"],
      [{ slug: "t", title: "T", id: "spg_mine" }, "id"],
    ];
    for (const [body, path] of createCases) expectValidation(await client.post(BASE, body), path);
    const patchCases: [unknown, string][] = [
      [{ title: "" }, "title"],
      [{ title: "  " }, "title"],
      [{ description: "d".repeat(2001) }, "description"],
      [{ created_at: "2024-01-01T00:00:00Z" }, "created_at"],
      [{ org_id: "org_x" }, "org_id"],
    ];
    for (const [body, path] of patchCases)
      expectValidation(await client.patch(`${BASE}/${page.id}`, body), path);
    expect(await must(client.get(BASE), 200)).toEqual({ data: [page], next_cursor: null, has_more: false });
    // Limits are inclusive; titles are trimmed.
    const full = await must(
      client.post(BASE, { slug: "full", title: `  ${"x".repeat(196)}  `, description: "d".repeat(2000) }),
    );
    expect([full.title, full.description.length]).toEqual(["x".repeat(196), 2000]);
  });

  test("a slug is unique within an org (409 conflict); another org may reuse it", async () => {
    const mine = await must(api.post(BASE, { slug: "shared", title: "Mine" }));
    const second = await must(api.post(BASE, { slug: "second", title: "Second" }));
    const dup = await api.post(BASE, { slug: "shared", title: "Duplicate" });
    expectError(dup, 409, "conflict");
    const moved = await api.patch(`${BASE}/${second.id}`, { slug: "shared", title: "Renamed" });
    expectError(moved, 409, "conflict");
    expect(await must(api.get(`${BASE}/${second.id}`), 200)).toEqual(second);
    expect((await must(api.get(BASE), 200)).data.filter((p: any) => p.slug === "shared")).toEqual([mine]);

    const theirs = await must(other.post(BASE, { slug: "shared", title: "Theirs" }));
    expect(theirs.slug).toBe("shared");
    // And the other way round: theirs does not block a PATCH of ours to a slug they use.
    const theirOnly = await must(other.post(BASE, { slug: "their-only", title: "Theirs only" }));
    expect(theirOnly.slug).toBe("their-only");
    expect((await must(api.patch(`${BASE}/${second.id}`, { slug: "their-only" }), 200)).slug).toBe(
      "their-only",
    );
  });
});

describe("access", () => {
  let page: any;
  let viewer: Client;
  let member: Client;

  beforeAll(async () => {
    page = await must(api.post(BASE, { slug: "access", title: "Access" }));
    viewer = api.as((await signUpUser(server, "viewer@acme.test", "viewer")).token);
    member = api.as((await signUpUser(server, "member@acme.test", "member")).token);
  }, SLOW);

  test("a viewer reads but changes nothing (403 forbidden_role)", async () => {
    expect(await must(viewer.get(`${BASE}/${page.id}`), 200)).toEqual(page);
    expect((await must(viewer.get(`${BASE}?limit=200`), 200)).data).toContainEqual(page);
    expectError(await viewer.post(BASE, { slug: "viewer", title: "V" }), 403, "forbidden_role");
    expectError(await viewer.patch(`${BASE}/${page.id}`, { title: "V" }), 403, "forbidden_role");
    expectError(await viewer.delete(`${BASE}/${page.id}`), 403, "forbidden_role");
    expect(await must(api.get(`${BASE}/${page.id}`), 200)).toEqual(page);
  });

  test("a member manages status pages", async () => {
    const made = await must(member.post(BASE, { slug: "member-page", title: "Member" }));
    expect((await must(member.patch(`${BASE}/${made.id}`, { title: "Member's" }), 200)).title).toBe(
      "Member's",
    );
    expect((await member.delete(`${BASE}/${made.id}`)).status).toBe(204);
  });

  test("scope incidents: an alerts-only key is 403 insufficient_scope; no credential is 401", async () => {
    const alertsKey = await must(api.post("/api/v1/api-keys", { name: "alerts", scopes: ["alerts"] }));
    const alertsOnly = api.as(alertsKey.secret);
    const anon = api.as();
    const calls: [string, (c: Client) => Promise<Response2>][] = [
      ["list", (c) => c.get(BASE)],
      ["create", (c) => c.post(BASE, { slug: "nope", title: "Nope" })],
      ["read", (c) => c.get(`${BASE}/${page.id}`)],
      ["patch", (c) => c.patch(`${BASE}/${page.id}`, { title: "Nope" })],
      ["delete", (c) => c.delete(`${BASE}/${page.id}`)],
    ];
    for (const [name, call] of calls) {
      const scoped = await call(alertsOnly);
      expect([name, scoped.status, scoped.body?.error?.code]).toEqual([name, 403, "insufficient_scope"]);
      const none = await call(anon);
      expect([name, none.status, none.body?.error?.code]).toEqual([name, 401, "unauthenticated"]);
    }
    expect(await must(api.get(`${BASE}/${page.id}`), 200)).toEqual(page);
    // A key with scope incidents does everything; a service key too.
    const incidentsKey = await must(
      api.post("/api/v1/api-keys", { name: "incidents", scopes: ["incidents"] }),
    );
    const service = await server.admin([
      "key",
      "create",
      "--org",
      server.orgSlug,
      "--name",
      "pages bot",
      "--scopes",
      "incidents",
      "--service",
    ]);
    for (const [i, secret] of [incidentsKey.secret, service.secret].entries()) {
      const c = api.as(secret);
      const made = await must(c.post(BASE, { slug: `scoped-${i}`, title: "Scoped" }));
      expect(await must(c.get(`${BASE}/${made.id}`), 200)).toEqual(made);
      expect((await must(c.patch(`${BASE}/${made.id}`, { description: "d" }), 200)).description).toBe("d");
      expect((await c.delete(`${BASE}/${made.id}`)).status).toBe(204);
    }
  });

  test("another org's pages are 404 and never listed", async () => {
    const theirs = await must(other.post(BASE, { slug: "private", title: "Theirs" }));
    expectError(await api.get(`${BASE}/${theirs.id}`), 404, "not_found");
    expectError(await api.patch(`${BASE}/${theirs.id}`, { title: "Mine" }), 404, "not_found");
    expectError(await api.delete(`${BASE}/${theirs.id}`), 404, "not_found");
    expect((await must(api.get(`${BASE}?limit=200`), 200)).data.map((p: any) => p.id)).not.toContain(
      theirs.id,
    );
    expect(await must(other.get(`${BASE}/${theirs.id}`), 200)).toEqual(theirs);
    // Our slug "private" is still free.
    expect((await must(api.post(BASE, { slug: "private", title: "Ours" }))).slug).toBe("private");
  });
});

describe("pages and incidents", () => {
  test("deleting a page removes it from the incidents that named it; the incidents stay", async () => {
    const client = await newOrg("Linked");
    const keep = await must(client.post(BASE, { slug: "keep", title: "Keep" }));
    const drop = await must(client.post(BASE, { slug: "drop", title: "Drop" }));
    const both = await must(
      client.post("/api/v1/incidents", {
        title: "On both",
        severity: "major",
        status_page_ids: [keep.id, drop.id],
      }),
    );
    const only = await must(
      client.post("/api/v1/incidents", {
        title: "On drop only",
        severity: "minor",
        status: "resolved",
        status_page_ids: [drop.id],
      }),
    );
    expect([both.status_page_ids, only.status_page_ids]).toEqual([[keep.id, drop.id], [drop.id]]);

    expect((await client.delete(`${BASE}/${drop.id}`)).status).toBe(204);
    const bothAfter = await must(client.get(`/api/v1/incidents/${both.id}`), 200);
    const onlyAfter = await must(client.get(`/api/v1/incidents/${only.id}`), 200);
    expect(bothAfter).toEqual({ ...both, status_page_ids: [keep.id] });
    expect(onlyAfter).toEqual({ ...only, status_page_ids: [] });
    const list = await must(client.get("/api/v1/incidents?status=all"), 200);
    expect(list.data.map((i: any) => [i.id, i.status_page_ids])).toEqual([
      [only.id, []],
      [both.id, [keep.id]],
    ]);
    // The deleted page can no longer be named.
    expectValidation(
      await client.patch(`/api/v1/incidents/${both.id}`, { status_page_ids: [keep.id, drop.id] }),
      "status_page_ids.1",
    );
    expectValidation(
      await client.post("/api/v1/incidents", { title: "x", severity: "minor", status_page_ids: [drop.id] }),
      "status_page_ids.0",
    );
  });

  test("another org's page cannot be named by an incident", async () => {
    const theirs = await must(other.post(BASE, { slug: "named", title: "Theirs" }));
    expectValidation(
      await api.post("/api/v1/incidents", { title: "x", severity: "minor", status_page_ids: [theirs.id] }),
      "status_page_ids.0",
    );
  });
});
