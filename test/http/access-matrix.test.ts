/**
 * DESIGN §5 access rules as a table: every endpoint of the accounts module against
 * (a) missing or bad credentials → 401 with one message, (b) a key without the scope → 403,
 * (c) another org's ids → 404 (or 400 for ids in a body) with nothing changed, and the role
 * rules (viewer reads only, member is not admin, only the owner transfers ownership).
 * Black-box: a real `svc serve`, the real admin CLI on the same data dir, plain HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPair, SignJWT } from "jose";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
type Level = "public" | "read" | "write" | "admin" | "owner";
type Target = "user" | "team" | "key" | "token";

/** Ids of org A that the table's paths and bodies refer to. */
interface Ids {
  user: string;
  team: string;
  key: string;
  token: string;
}

interface Row {
  method: Method;
  /** As registered, with `:id`. */
  path: string;
  /** What `:id` names. */
  target?: Target;
  /** The scope a key needs: `any` means every scope will do; null for public endpoints. */
  scope: "admin" | "any" | null;
  level: Level;
  /** A body that would succeed for a caller allowed to make the call. */
  body?: (ids: Ids) => unknown;
  /**
   * What org B's owner gets when the call names org A's ids (in the path or the body); for
   * endpoints without ids, the call succeeds on B's own data. Public endpoints have none.
   * Made with B's admin-scope service key, or with B's owner key where the owner is needed.
   */
  cross?: { status: number; code?: string; field?: string; as?: "owner" };
}

let unique = 0;
const next = () => ++unique;

const NOT_FOUND = { status: 404, code: "not_found" } as const;

/** Every endpoint registered by src/accounts/*.routes.ts. */
const TABLE: Row[] = [
  // org.routes.ts — GET /org takes any scope (a schedules-only key may read its own org).
  { method: "GET", path: "/api/v1/org", scope: "any", level: "read", cross: { status: 200 } },
  {
    method: "PATCH",
    path: "/api/v1/org",
    scope: "admin",
    level: "admin",
    body: () => ({ name: `Renamed ${next()}` }),
    cross: { status: 200 },
  },
  { method: "GET", path: "/api/v1/org/settings", scope: "admin", level: "read", cross: { status: 200 } },
  {
    method: "PUT",
    path: "/api/v1/org/settings",
    scope: "admin",
    level: "admin",
    body: () => ({ retention: { events_days: 3 } }),
    cross: { status: 200 },
  },
  {
    method: "POST",
    path: "/api/v1/org/transfer-ownership",
    scope: "admin",
    level: "owner",
    body: (ids) => ({ user_id: ids.user }),
    cross: { status: 400, code: "validation_failed", field: "user_id", as: "owner" },
  },
  {
    method: "GET",
    path: "/api/v1/org/ingest-tokens",
    scope: "admin",
    level: "admin",
    cross: { status: 200 },
  },
  {
    method: "POST",
    path: "/api/v1/org/ingest-tokens",
    scope: "admin",
    level: "admin",
    body: () => ({ name: `token-${next()}` }),
    cross: { status: 201 },
  },
  {
    method: "DELETE",
    path: "/api/v1/org/ingest-tokens/:id",
    target: "token",
    scope: "admin",
    level: "admin",
    cross: NOT_FOUND,
  },
  // users.routes.ts
  { method: "GET", path: "/api/v1/users", scope: "admin", level: "read", cross: { status: 200 } },
  {
    method: "POST",
    path: "/api/v1/users",
    scope: "admin",
    level: "admin",
    body: (ids) => ({ email: `new${next()}@acme.test`, role: "member", team_ids: [ids.team] }),
    cross: { status: 400, code: "validation_failed", field: "team_ids.0" },
  },
  {
    method: "GET",
    path: "/api/v1/users/:id",
    target: "user",
    scope: "admin",
    level: "read",
    cross: NOT_FOUND,
  },
  {
    method: "PATCH",
    path: "/api/v1/users/:id",
    target: "user",
    scope: "admin",
    level: "admin",
    body: () => ({ name: "Renamed", role: "viewer" }),
    cross: NOT_FOUND,
  },
  {
    method: "DELETE",
    path: "/api/v1/users/:id",
    target: "user",
    scope: "admin",
    level: "admin",
    cross: NOT_FOUND,
  },
  {
    method: "POST",
    path: "/api/v1/users/:id/reset-password",
    target: "user",
    scope: "admin",
    level: "write",
    cross: NOT_FOUND,
  },
  { method: "GET", path: "/api/v1/teams", scope: "admin", level: "read", cross: { status: 200 } },
  {
    method: "POST",
    path: "/api/v1/teams",
    scope: "admin",
    level: "admin",
    body: (ids) => ({ name: `team-${next()}`, member_ids: [ids.user] }),
    cross: { status: 400, code: "validation_failed", field: "member_ids.0" },
  },
  {
    method: "GET",
    path: "/api/v1/teams/:id",
    target: "team",
    scope: "admin",
    level: "read",
    cross: NOT_FOUND,
  },
  {
    method: "PATCH",
    path: "/api/v1/teams/:id",
    target: "team",
    scope: "admin",
    level: "admin",
    body: () => ({ name: `renamed-${next()}`, member_ids: [] }),
    cross: NOT_FOUND,
  },
  {
    method: "DELETE",
    path: "/api/v1/teams/:id",
    target: "team",
    scope: "admin",
    level: "admin",
    cross: NOT_FOUND,
  },
  // auth.routes.ts
  { method: "GET", path: "/api/v1/api-keys", scope: "admin", level: "read", cross: { status: 200 } },
  {
    method: "POST",
    path: "/api/v1/api-keys",
    scope: "admin",
    level: "write",
    body: (ids) => ({ name: `key-${next()}`, scopes: ["alerts"], user_id: ids.user }),
    cross: { status: 400, code: "validation_failed", field: "user_id" },
  },
  {
    method: "GET",
    path: "/api/v1/api-keys/:id",
    target: "key",
    scope: "admin",
    level: "read",
    cross: NOT_FOUND,
  },
  {
    method: "DELETE",
    path: "/api/v1/api-keys/:id",
    target: "key",
    scope: "admin",
    level: "write",
    cross: NOT_FOUND,
  },
  {
    method: "POST",
    path: "/api/v1/auth/token",
    scope: "admin",
    level: "admin",
    body: () => ({ ttl_seconds: 600 }),
    cross: { status: 201 },
  },
  // Public: no credential needed (an empty body is simply invalid).
  { method: "POST", path: "/api/v1/auth/login", scope: null, level: "public" },
  { method: "POST", path: "/api/v1/auth/accept-invite", scope: null, level: "public" },
  { method: "POST", path: "/api/v1/auth/confirm-mfa", scope: null, level: "public" },
  { method: "POST", path: "/api/v1/auth/reset-password", scope: null, level: "public" },
];

const PROTECTED = TABLE.filter((r) => r.level !== "public");
const label = (r: Row) => `${r.method} ${r.path}`;

let server: TestServer;
let owner: Client;
let slug: string;
let ids: Ids;
/** Every id of org A, to prove none leaks to org B. */
let orgAIds: string[];
let orgB: { owner: Client; service: Client; orgId: string };
let sessions: { viewer: string; member: string; admin: string; suspendee: string };
let users: { viewer: string; member: string; admin: string; suspendee: string };
let keys: {
  schedulesService: string;
  ownerMonitors: string;
  viewerAdmin: string;
  suspendee: string;
  revoked: string;
  expiring: { id: string; secret: string; expiresAt: number };
};

function pathFor(row: Row): string {
  return row.target ? row.path.replace(":id", ids[row.target]) : row.path;
}

function call(client: Client, row: Row, headers: Record<string, string> = {}): Promise<Response2> {
  const path = pathFor(row);
  const body = row.body?.(ids);
  switch (row.method) {
    case "GET":
      return client.get(path, headers);
    case "DELETE":
      return client.delete(path, headers);
    case "POST":
      return client.post(path, body ?? {}, headers);
    case "PUT":
      return client.put(path, body ?? {}, headers);
    case "PATCH":
      return client.patch(path, body ?? {}, headers);
  }
}

/** The status and code of a response, for readable table failures. */
const outcome = (row: Row, res: Response2) => ({
  endpoint: label(row),
  status: res.status,
  code: res.body?.error?.code ?? null,
});

/** Org A as its owner sees it (key `last_used_at` is left out: it is written off the request path). */
async function snapshotOrgA() {
  const list = async (path: string) => {
    const res = await owner.get(`${path}?limit=200`);
    expect(res.body.has_more).toBe(false);
    return res.body.data;
  };
  const settings = await owner.get("/api/v1/org/settings");
  return {
    org: (await owner.get("/api/v1/org")).body,
    settings: settings.body,
    etag: settings.headers.get("etag"),
    users: await list("/api/v1/users"),
    teams: await list("/api/v1/teams"),
    keys: (await list("/api/v1/api-keys")).map(({ last_used_at: _, ...k }: any) => k),
    tokens: await list("/api/v1/org/ingest-tokens"),
  };
}

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function randomBase62(length: number): string {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  return Array.from(crypto.getRandomValues(new Uint8Array(length)), (b) => alphabet[b % 62]).join("");
}

beforeAll(async () => {
  server = await TestServer.start();
  owner = server.client();
  slug = server.orgSlug;
  const init = server.init as NonNullable<typeof server.init>;

  // First, alone so that the CLI answers well before it expires: a key that expires 2.5 s from now.
  const expiresAt = Date.now() + 2500;
  const expiring = await server.admin([
    "key",
    "create",
    "--org",
    slug,
    "--name",
    "short-lived",
    "--scopes",
    "admin",
    "--service",
    "--expires-at",
    new Date(expiresAt).toISOString(),
  ]);

  /** A key made through the API by `by` (org A's owner unless given). */
  const keyFor = async (body: Record<string, unknown>, by = owner) => {
    const res = await by.post("/api/v1/api-keys", { name: `k${next()}`, ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  };
  const [viewer, member, adminUser, suspendee, schedulesService, ownerMonitors, revoked, b] =
    await Promise.all([
      signUpUser(server, "viewer@acme.test", "viewer"),
      signUpUser(server, "member@acme.test", "member"),
      signUpUser(server, "admin@acme.test", "admin"),
      signUpUser(server, "suspendee@acme.test", "member"),
      server.admin([
        "key",
        "create",
        "--org",
        slug,
        "--name",
        "schedules-only",
        "--scopes",
        "schedules",
        "--service",
      ]),
      keyFor({ scopes: ["monitors"] }),
      keyFor({ scopes: ["admin"], service: true }),
      server.admin([
        "org",
        "create",
        "--name",
        "Beta",
        "--slug",
        `beta-${Math.random().toString(36).slice(2, 8)}`,
        "--owner-email",
        "owner@beta.test",
      ]),
    ]);
  const [viewerAdmin, suspendeeKey, bService] = await Promise.all([
    keyFor({ scopes: ["admin"], user_id: viewer.user.id }),
    keyFor({ scopes: ["admin"], user_id: suspendee.user.id }),
    keyFor({ scopes: ["admin"], service: true }, server.client(b.api_key.secret)),
  ]);
  expect((await owner.delete(`/api/v1/api-keys/${revoked.id}`)).status).toBe(204);
  const team = await owner.post("/api/v1/teams", { name: "Ops", member_ids: [member.user.id] });
  expect(team.status).toBe(201);

  sessions = {
    viewer: viewer.token,
    member: member.token,
    admin: adminUser.token,
    suspendee: suspendee.token,
  };
  users = {
    viewer: viewer.user.id,
    member: member.user.id,
    admin: adminUser.user.id,
    suspendee: suspendee.user.id,
  };
  keys = {
    schedulesService: schedulesService.secret,
    ownerMonitors: ownerMonitors.secret,
    viewerAdmin: viewerAdmin.secret,
    suspendee: suspendeeKey.secret,
    revoked: revoked.secret,
    expiring: { id: expiring.id, secret: expiring.secret, expiresAt },
  };
  // The member is active (so a transfer to them would succeed); the key is the viewer's own.
  ids = { user: member.user.id, team: team.body.id, key: viewerAdmin.id, token: init.ingest_token.id };
  orgAIds = [
    init.org.id,
    init.owner.id,
    init.api_key.id,
    ...Object.values(users),
    ...Object.values(ids),
    schedulesService.id,
    ownerMonitors.id,
    suspendeeKey.id,
  ];
  orgB = { owner: server.client(b.api_key.secret), service: server.client(bService.secret), orgId: b.org.id };
}, 30_000);
afterAll(() => server?.dispose());

describe("the table", () => {
  test("lists exactly the accounts endpoints of the OpenAPI document, with their scope and access", async () => {
    const doc = (await owner.as().get("/api/v1/openapi.json")).body;
    const tags = new Set(["Organization", "Users", "Teams", "API keys", "Auth"]);
    const documented: Record<string, { scope: string | null; level: string }> = {};
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(operations)) {
        if (!op.tags.some((t: string) => tags.has(t))) continue;
        const key = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`;
        const isPublic = Array.isArray(op.security) && op.security.length === 0;
        documented[key] = isPublic
          ? { scope: null, level: "public" }
          : { scope: op["x-svc-scope"], level: op["x-svc-access"] };
      }
    }
    const table: Record<string, unknown> = Object.fromEntries(
      TABLE.map((r) => [label(r), { scope: r.scope, level: r.level }]),
    );
    expect(table).toEqual(documented);
  });
});

describe("(a) no valid credential → 401 unauthenticated, one message for all", () => {
  async function badCredentials(): Promise<[string, Record<string, string>][]> {
    const ownerKey = server.init?.api_key.secret as string;
    const [header, payload] = sessions.member.split(".");
    const claims = JSON.parse(Buffer.from(payload as string, "base64url").toString());
    // A session JWT whose payload was edited to name the owner: its signature no longer matches.
    const edited = `${header}.${b64url({ ...claims, sub: server.init?.owner.id })}.${sessions.member.split(".")[2]}`;
    // Well-formed claims of an active admin, signed by a key that is not this server's.
    const { privateKey } = await generateKeyPair("ES256");
    const foreign = await new SignJWT({ org: claims.org, sv: claims.sv })
      .setProtectedHeader({ alg: "ES256", typ: "JWT" })
      .setIssuer("svc")
      .setSubject(users.admin)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(privateKey);
    const unsigned = `${b64url({ alg: "none", typ: "JWT" })}.${b64url({ ...claims, sub: users.admin })}.`;

    const now = Date.now();
    if (now <= keys.expiring.expiresAt) await Bun.sleep(keys.expiring.expiresAt - now + 50);
    const bearer = (c: string) => ({ authorization: `Bearer ${c}` });
    return [
      ["no Authorization header", {}],
      ["an empty bearer", { authorization: "Bearer" }],
      ["Basic auth", { authorization: "Basic b3duZXI6cGFzc3dvcmQ=" }],
      ["a valid key under another scheme", { authorization: `Token ${ownerKey}` }],
      ["garbage", bearer("not-a-credential")],
      ["an unknown, well-formed key", bearer(`svc_${randomBase62(40)}`)],
      ["a known prefix with the wrong secret", bearer(`${ownerKey.slice(0, 12)}${randomBase62(32)}`)],
      ["an edited session JWT", bearer(edited)],
      ["a JWT signed by another key", bearer(foreign)],
      ["an unsigned JWT", bearer(unsigned)],
      ["a revoked key", bearer(keys.revoked)],
      ["an expired key", bearer(keys.expiring.secret)],
    ];
  }

  test("the short-lived key is a real service key whose only fault will be its expiry", async () => {
    const res = await owner.get(`/api/v1/api-keys/${keys.expiring.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      prefix: keys.expiring.secret.slice(0, 12),
      scopes: ["admin"],
      service: true,
      revoked_at: null,
      expires_at: new Date(keys.expiring.expiresAt).toISOString(),
    });
  });

  test("every protected endpoint × every bad credential", async () => {
    const before = await snapshotOrgA();
    const anonymous = owner.as();
    const reference = await anonymous.get("/api/v1/org");
    expect(reference.status).toBe(401);
    const message = reference.body.error.message as string;
    expect(message.length).toBeGreaterThan(0);

    const credentials = await badCredentials();
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const row of PROTECTED) {
      for (const [name, headers] of credentials) {
        const res = await call(anonymous, row, headers);
        seen.push({ endpoint: label(row), credential: name, status: res.status, body: res.body });
        expected.push({
          endpoint: label(row),
          credential: name,
          status: 401,
          body: { error: { code: "unauthenticated", message } },
        });
      }
    }
    expect(seen).toEqual(expected);
    expect(await snapshotOrgA()).toEqual(before);
  });

  test("public endpoints do not ask for a credential, and ignore a bad one", async () => {
    for (const row of TABLE.filter((r) => r.level === "public")) {
      const variants: Record<string, string>[] = [{}, { authorization: "Bearer not-a-credential" }];
      for (const headers of variants) {
        const res = await call(owner.as(), row, headers);
        expect(outcome(row, res)).toEqual({ endpoint: label(row), status: 400, code: "validation_failed" });
      }
    }
  });

  test("a key revoked with `svc admin key revoke` while the server runs is refused within 2 s", async () => {
    const key = await server.admin([
      "key",
      "create",
      "--org",
      slug,
      "--name",
      "revoke-live",
      "--scopes",
      "admin",
      "--service",
    ]);
    const client = server.client(key.secret);
    expect((await client.get("/api/v1/users")).status).toBe(200);

    const revoked = await server.admin(["key", "revoke", "--org", slug, "--id", key.id]);
    expect(revoked.id).toBe(key.id);
    const deadline = Date.now() + 2000;
    let res = await client.get("/api/v1/users");
    while (res.status !== 401 && Date.now() < deadline) {
      await Bun.sleep(50);
      res = await client.get("/api/v1/users");
    }
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("unauthenticated");
    for (const path of ["/api/v1/org", "/api/v1/users", "/api/v1/api-keys"]) {
      expect((await client.get(path)).status).toBe(401);
    }
    const listed = (await owner.get(`/api/v1/api-keys/${key.id}`)).body;
    expect(listed.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe("(b) a key without the scope → 403 insufficient_scope", () => {
  test("every protected endpoint × a schedules-only service key and an owner's monitors-only key", async () => {
    const before = await snapshotOrgA();
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const [name, secret] of [
      ["service key, scope schedules", keys.schedulesService],
      ["owner's key, scope monitors", keys.ownerMonitors],
    ] as const) {
      for (const row of PROTECTED) {
        const res = await call(server.client(secret), row);
        seen.push({ credential: name, ...outcome(row, res), details: res.body?.error?.details ?? null });
        expected.push({
          credential: name,
          endpoint: label(row),
          // GET /api/v1/org takes any scope: every key may read its own organization.
          ...(row.scope === "any"
            ? { status: 200, code: null, details: null }
            : { status: 403, code: "insufficient_scope", details: { required_scope: "admin" } }),
        });
      }
    }
    expect(seen).toEqual(expected);
    expect(await snapshotOrgA()).toEqual(before);
  });

  test("GET /api/v1/org with a schedules-only key is the caller's own organization", async () => {
    const res = await server.client(keys.schedulesService).get("/api/v1/org");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: server.init?.org.id, slug });
  });
});

describe("(c) another org's ids → 404, never a leak, nothing changed", () => {
  test("org B's admin key against org A's user, team, key and ingest-token ids", async () => {
    const before = await snapshotOrgA();
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const row of PROTECTED) {
      const cross = row.cross as NonNullable<Row["cross"]>;
      const res = await call(cross.as === "owner" ? orgB.owner : orgB.service, row);
      const fields = res.body?.error?.details?.fields?.map((f: { path: string }) => f.path) ?? null;
      const leaked = orgAIds.filter((id) => res.text.includes(id));
      seen.push({ ...outcome(row, res), fields, leaked });
      expected.push({
        endpoint: label(row),
        status: cross.status,
        code: cross.code ?? null,
        fields: cross.field ? [cross.field] : null,
        leaked: [],
      });
    }
    expect(seen).toEqual(expected);
    expect(await snapshotOrgA()).toEqual(before);
    // The calls that succeeded acted on org B.
    const bOrg = await orgB.service.get("/api/v1/org");
    expect(bOrg.body.id).toBe(orgB.orgId);
    expect(bOrg.body.name).toMatch(/^Renamed \d+$/);
    expect(before.org.name).toBe("Acme");
  });
});

describe("roles", () => {
  /** What a credential limited by `role` gets at an endpoint of `level` when it is refused. */
  function refusal(role: "viewer" | "member" | "admin", level: Level): string | null {
    if (level === "owner") return "owner_required";
    if (level === "admin" && role !== "admin") return "forbidden_role";
    if (level === "write" && role === "viewer") return "forbidden_role";
    return null;
  }

  test("viewer session and viewer-owned admin-scope key read everything readable, change nothing", async () => {
    const before = await snapshotOrgA();
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const [name, credential] of [
      ["viewer session", sessions.viewer],
      ["viewer's admin-scope key", keys.viewerAdmin],
    ] as const) {
      for (const row of PROTECTED) {
        const res = await call(server.client(credential), row);
        const code = refusal("viewer", row.level);
        seen.push({ credential: name, ...outcome(row, res) });
        expected.push({ credential: name, endpoint: label(row), status: code ? 403 : 200, code });
      }
    }
    expect(seen).toEqual(expected);
    expect(await snapshotOrgA()).toEqual(before);
  });

  test("a member session is refused every admin-level endpoint; an admin session is refused owner-only ones", async () => {
    const before = await snapshotOrgA();
    const seen: unknown[] = [];
    const expected: unknown[] = [];
    for (const role of ["member", "admin"] as const) {
      for (const row of PROTECTED) {
        const code = refusal(role, row.level);
        if (!code) continue;
        const res = await call(server.client(sessions[role]), row);
        seen.push({ role, ...outcome(row, res) });
        expected.push({ role, endpoint: label(row), status: 403, code });
      }
    }
    expect(expected.length).toBeGreaterThan(10);
    expect(seen).toEqual(expected);
    expect(await snapshotOrgA()).toEqual(before);
  });

  test("viewer: GET /users 200, POST /users and PATCH /org 403 forbidden_role", async () => {
    const viewer = server.client(sessions.viewer);
    const list = await viewer.get("/api/v1/users");
    expect(list.status).toBe(200);
    expect(list.body.data.map((u: { id: string }) => u.id)).toContain(users.viewer);

    const invite = await viewer.post("/api/v1/users", { email: "sneaky@acme.test", role: "admin" });
    expect(invite.status).toBe(403);
    expect(invite.body.error.code).toBe("forbidden_role");
    const rename = await viewer.patch("/api/v1/org", { name: "Viewer Corp" });
    expect(rename.status).toBe(403);
    expect(rename.body.error.code).toBe("forbidden_role");

    const emails = (await owner.get("/api/v1/users?limit=200")).body.data.map(
      (u: { email: string }) => u.email,
    );
    expect(emails).not.toContain("sneaky@acme.test");
    expect((await owner.get("/api/v1/org")).body.name).toBe("Acme");
  });

  test("transfer-ownership by an admin (session, or admin-scope service key) is 403 owner_required", async () => {
    const service = await owner.post("/api/v1/api-keys", {
      name: "svc-admin",
      scopes: ["admin"],
      service: true,
    });
    expect(service.status).toBe(201);
    for (const credential of [sessions.admin, service.body.secret]) {
      const res = await server
        .client(credential)
        .post("/api/v1/org/transfer-ownership", { user_id: users.admin });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("owner_required");
    }
    const admin = await owner.get(`/api/v1/users/${users.admin}`);
    expect(admin.body.role).toBe("admin");
    expect((await owner.get(`/api/v1/users/${server.init?.owner.id}`)).body.role).toBe("owner");
  });

  test("a suspended user's session and keys are refused", async () => {
    const session = server.client(sessions.suspendee);
    const key = server.client(keys.suspendee);
    expect((await session.get("/api/v1/org")).status).toBe(200);
    expect((await key.get("/api/v1/org")).status).toBe(200);

    const suspended = await owner.patch(`/api/v1/users/${users.suspendee}`, { status: "suspended" });
    expect(suspended.status).toBe(200);
    expect(suspended.body.status).toBe("suspended");

    const message = (await owner.as().get("/api/v1/org")).body.error.message;
    for (const client of [session, key]) {
      for (const path of ["/api/v1/org", "/api/v1/users"]) {
        const res = await client.get(path);
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: { code: "unauthenticated", message } });
      }
    }
  });
});
