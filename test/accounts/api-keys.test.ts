import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI, sign users up (argon2id) or wait for email get more than the default 5 s. */
const SLOW = 20_000;

let server: TestServer;
let admin: Client;
let ownerId: string;

beforeAll(async () => {
  server = await TestServer.start();
  admin = server.client();
  ownerId = server.init?.owner.id as string;
}, SLOW);
afterAll(() => server.dispose());

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SECRET = /^svc_[0-9A-Za-z]{40}$/;
const DAY = 86_400_000;

function fieldPaths(body: { error: { details: { fields: { path: string }[] } } }): string[] {
  return body.error.details.fields.map((f) => f.path);
}

async function allKeys(client: Client = admin): Promise<Record<string, unknown>[]> {
  const res = await client.get("/api/v1/api-keys?limit=200");
  expect(res.status).toBe(200);
  expect(res.body.has_more).toBe(false);
  return res.body.data;
}

describe("creating keys", () => {
  test("create returns the secret once; prefix is its first 12 characters", async () => {
    const before = Date.now();
    const res = await admin.post("/api/v1/api-keys", { name: "ci", scopes: ["monitors", "alerts"] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
      name: "ci",
      prefix: expect.any(String),
      scopes: ["monitors", "alerts"],
      user_id: ownerId,
      service: false,
      channel_id: null,
      expires_at: expect.stringMatching(TIMESTAMP),
      revoked_at: null,
      last_used_at: null,
      created_at: expect.stringMatching(TIMESTAMP),
      secret: expect.stringMatching(SECRET),
    });
    const { secret, prefix, id } = res.body as { secret: string; prefix: string; id: string };
    expect(prefix).toBe(secret.slice(0, 12));
    expect(prefix.startsWith("svc_")).toBe(true);

    // Default lifetime: 90 days ahead.
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 90 * DAY - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 90 * DAY + 1000);

    // The secret works as a credential.
    expect((await server.client(secret).get("/api/v1/org")).status).toBe(200);

    // Reading never shows it again.
    const read = await admin.get(`/api/v1/api-keys/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty("secret");
    expect(read.text).not.toContain(secret);
    const { secret: _secret, ...rest } = res.body;
    expect(read.body).toMatchObject({ ...rest, last_used_at: read.body.last_used_at });
  });

  test("the list never includes a secret", async () => {
    const secrets: string[] = [];
    for (const name of ["list-a", "list-b"]) {
      const res = await admin.post("/api/v1/api-keys", { name, scopes: ["incidents"] });
      expect(res.status).toBe(201);
      secrets.push(res.body.secret);
    }
    const res = await admin.get("/api/v1/api-keys?limit=200");
    expect(res.status).toBe(200);
    for (const key of res.body.data) expect(key).not.toHaveProperty("secret");
    for (const secret of [...secrets, server.init?.api_key.secret as string])
      expect(res.text).not.toContain(secret);
    const names = res.body.data.map((k: { name: string }) => k.name);
    expect(names).toEqual(expect.arrayContaining(["list-a", "list-b", "initial admin key"]));
  });

  test("each secret is unique and well formed", async () => {
    const secrets = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = await admin.post("/api/v1/api-keys", { name: `bulk-${i}`, scopes: ["events"] });
      expect(res.body.secret).toMatch(SECRET);
      secrets.add(res.body.secret);
    }
    expect(secrets.size).toBe(5);
  });

  test("expires_at null means never; an explicit time with an offset is returned in UTC", async () => {
    const never = await admin.post("/api/v1/api-keys", {
      name: "forever",
      scopes: ["admin"],
      expires_at: null,
    });
    expect(never.status).toBe(201);
    expect(never.body.expires_at).toBeNull();
    expect((await server.client(never.body.secret).get("/api/v1/org")).status).toBe(200);
    expect((await admin.get(`/api/v1/api-keys/${never.body.id}`)).body.expires_at).toBeNull();

    const when = new Date(Date.now() + 10 * DAY);
    when.setUTCMilliseconds(0);
    const local = `${new Date(when.getTime() + 2 * 3600_000).toISOString().slice(0, 19)}+02:00`;
    const explicit = await admin.post("/api/v1/api-keys", {
      name: "dated",
      scopes: ["admin"],
      expires_at: local,
    });
    expect(explicit.status).toBe(201);
    expect(explicit.body.expires_at).toBe(when.toISOString());
  });

  test(
    "a key past its expires_at gets 401",
    async () => {
      const soon = new Date(Date.now() + 3000).toISOString();
      const res = await admin.post("/api/v1/api-keys", {
        name: "short-lived",
        scopes: ["admin"],
        expires_at: soon,
      });
      expect(res.status).toBe(201);
      const client = server.client(res.body.secret);
      expect((await client.get("/api/v1/org")).status).toBe(200);
      await Bun.sleep(Date.parse(soon) - Date.now() + 100);
      const expired = await client.get("/api/v1/org");
      expect(expired.status).toBe(401);
      expect(expired.body.error.code).toBe("unauthenticated");
    },
    SLOW,
  );

  test("bad bodies are 400 naming the field", async () => {
    const cases: [unknown, string][] = [
      [{ scopes: ["admin"] }, "name"],
      [{ name: "x", scopes: [] }, "scopes"],
      [{ name: "x", scopes: ["root"] }, "scopes.0"],
      [{ name: "x", scopes: ["admin"], expires_at: "tomorrow" }, "expires_at"],
      [
        { name: "x", scopes: ["admin"], expires_at: new Date(Date.now() - 60_000).toISOString() },
        "expires_at",
      ],
      [{ name: "x", scopes: ["admin"], user_id: "usr_01jzzzzzzzzzzzzzzzzzzzzzzz" }, "user_id"],
      [{ name: "x", scopes: ["admin"], service: true, user_id: ownerId }, "service"],
      [{ name: "x", scopes: ["admin"], secret: "svc_mine" }, "secret"],
    ];
    for (const [body, path] of cases) {
      const res = await admin.post("/api/v1/api-keys", body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toContain(path);
    }
  });

  test("an admin may create a service key (no user) and keys for other users", async () => {
    const service = await admin.post("/api/v1/api-keys", {
      name: "robot",
      scopes: ["alerts"],
      service: true,
    });
    expect(service.status).toBe(201);
    expect(service.body).toMatchObject({ service: true, user_id: null, scopes: ["alerts"] });
    expect((await server.client(service.body.secret).get("/api/v1/org")).status).toBe(200);

    const invited = await admin.post("/api/v1/users", { email: "keyholder@acme.test", role: "viewer" });
    const theirs = await admin.post("/api/v1/api-keys", {
      name: "for a viewer",
      scopes: ["admin"],
      user_id: invited.body.id,
    });
    expect(theirs.status).toBe(201);
    expect(theirs.body).toMatchObject({ service: false, user_id: invited.body.id });
    // A viewer's key can only read, whatever its scopes.
    const viewerKey = server.client(theirs.body.secret);
    expect((await viewerKey.get("/api/v1/users")).status).toBe(200);
    const write = await viewerKey.post("/api/v1/teams", { name: "viewer team" });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe("forbidden_role");
  });
});

describe("revoking keys", () => {
  test("DELETE is 204; the key then gets 401 and stays listed with revoked_at", async () => {
    const res = await admin.post("/api/v1/api-keys", { name: "to revoke", scopes: ["admin"] });
    const client = server.client(res.body.secret);
    expect((await client.get("/api/v1/org")).status).toBe(200);

    const del = await admin.delete(`/api/v1/api-keys/${res.body.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");

    const refused = await client.get("/api/v1/org");
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe("unauthenticated");

    const read = await admin.get(`/api/v1/api-keys/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.revoked_at).toMatch(TIMESTAMP);
    const listed = (await allKeys()).find((k) => k.id === res.body.id);
    expect(listed?.revoked_at).toBe(read.body.revoked_at);

    // Revoking again changes nothing.
    expect((await admin.delete(`/api/v1/api-keys/${res.body.id}`)).status).toBe(204);
    expect((await admin.get(`/api/v1/api-keys/${res.body.id}`)).body.revoked_at).toBe(read.body.revoked_at);
  });

  test("unknown, revoked and garbage credentials get the same 401", async () => {
    const revoked = await admin.post("/api/v1/api-keys", { name: "gone", scopes: ["admin"] });
    await admin.delete(`/api/v1/api-keys/${revoked.body.id}`);
    const unknown = `svc_${"A".repeat(40)}`;
    const messages = new Set<string>();
    for (const credential of [
      revoked.body.secret,
      unknown,
      "not-a-key",
      `${revoked.body.prefix}${"x".repeat(32)}`,
    ]) {
      const res = await server.client(credential).get("/api/v1/org");
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("unauthenticated");
      messages.add(res.body.error.message);
    }
    const none = await server.client().as().get("/api/v1/org");
    expect(none.status).toBe(401);
    messages.add(none.body.error.message);
    expect(messages.size).toBe(1);
  });

  test(
    "a key revoked with `svc admin key revoke` is refused by the running server",
    async () => {
      const res = await admin.post("/api/v1/api-keys", { name: "cli revoke", scopes: ["admin"] });
      const client = server.client(res.body.secret);
      expect((await client.get("/api/v1/org")).status).toBe(200);
      const out = await server.admin(["key", "revoke", "--org", server.orgSlug, "--id", res.body.id]);
      expect(out).toEqual({ id: res.body.id, revoked_at: expect.stringMatching(TIMESTAMP) });
      const deadline = Date.now() + 2000;
      let status = 200;
      while (Date.now() < deadline) {
        status = (await client.get("/api/v1/org")).status;
        if (status === 401) break;
        await Bun.sleep(100);
      }
      expect(status).toBe(401);
    },
    SLOW,
  );
});

describe("keys and roles", () => {
  test(
    "members see and manage only their own keys",
    async () => {
      const member = await signUpUser(server, "member@acme.test", "member");
      const session = server.client(member.token);

      const own = await session.post("/api/v1/api-keys", { name: "mine", scopes: ["monitors"] });
      expect(own.status).toBe(201);
      expect(own.body).toMatchObject({ user_id: member.user.id, service: false });

      const adminMade = await admin.post("/api/v1/api-keys", {
        name: "made by admin",
        scopes: ["alerts"],
        user_id: member.user.id,
      });
      expect(adminMade.status).toBe(201);

      const seen = await allKeys(session);
      expect(seen.map((k) => k.id).sort()).toEqual([own.body.id, adminMade.body.id].sort());
      expect(seen.every((k) => k.user_id === member.user.id)).toBe(true);

      const ownerKey = server.init?.api_key.id as string;
      for (const res of [
        await session.get(`/api/v1/api-keys/${ownerKey}`),
        await session.delete(`/api/v1/api-keys/${ownerKey}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
      expect((await admin.get(`/api/v1/api-keys/${ownerKey}`)).body.revoked_at).toBeNull();

      // The member's admin-scope key lists the same keys.
      const adminScoped = await session.post("/api/v1/api-keys", {
        name: "member admin scope",
        scopes: ["admin"],
      });
      expect(adminScoped.status).toBe(201);
      const viaKey = await allKeys(server.client(adminScoped.body.secret));
      expect(viaKey.every((k) => k.user_id === member.user.id)).toBe(true);
      expect(viaKey).toHaveLength(3);

      // A key without the admin scope cannot manage keys at all.
      const monitorsOnly = await server.client(own.body.secret).get("/api/v1/api-keys");
      expect(monitorsOnly.status).toBe(403);
      expect(monitorsOnly.body.error.code).toBe("insufficient_scope");

      // A member may revoke their own key.
      expect((await session.delete(`/api/v1/api-keys/${own.body.id}`)).status).toBe(204);
      expect((await server.client(own.body.secret).get("/api/v1/org")).status).toBe(401);

      // An admin sees every key.
      const everything = (await allKeys()).map((k) => k.id);
      expect(everything).toEqual(expect.arrayContaining([ownerKey, own.body.id, adminMade.body.id]));
    },
    SLOW,
  );

  test(
    "a member cannot create a service key or a key for someone else (403 forbidden_role)",
    async () => {
      const member = await signUpUser(server, "member2@acme.test", "member");
      const session = server.client(member.token);
      for (const body of [
        { name: "svc", scopes: ["alerts"], service: true },
        { name: "someone else's", scopes: ["alerts"], user_id: ownerId },
      ]) {
        const res = await session.post("/api/v1/api-keys", body);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe("forbidden_role");
      }
      const keys = await allKeys(session);
      expect(keys).toHaveLength(0);
    },
    SLOW,
  );

  test(
    "a viewer cannot create keys (403 forbidden_role)",
    async () => {
      const viewer = await signUpUser(server, "viewer@acme.test", "viewer");
      const res = await server
        .client(viewer.token)
        .post("/api/v1/api-keys", { name: "v", scopes: ["monitors"] });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("forbidden_role");
    },
    SLOW,
  );
});

describe("last_used_at", () => {
  test(
    "becomes set after the key is used",
    async () => {
      const res = await admin.post("/api/v1/api-keys", { name: "used", scopes: ["admin"] });
      expect(res.body.last_used_at).toBeNull();
      const before = Date.now();
      expect((await server.client(res.body.secret).get("/api/v1/org")).status).toBe(200);
      let lastUsed: string | null = null;
      const deadline = Date.now() + 3000;
      while (Date.now() < deadline) {
        lastUsed = (await admin.get(`/api/v1/api-keys/${res.body.id}`)).body.last_used_at;
        if (lastUsed) break;
        await Bun.sleep(50);
      }
      expect(lastUsed).toMatch(TIMESTAMP);
      expect(Date.parse(lastUsed as string)).toBeGreaterThanOrEqual(before - 5);
      expect(Date.parse(lastUsed as string)).toBeLessThanOrEqual(Date.now());
    },
    SLOW,
  );

  test(
    "an unused key keeps last_used_at null",
    async () => {
      const res = await admin.post("/api/v1/api-keys", { name: "unused", scopes: ["admin"] });
      await Bun.sleep(200);
      expect((await admin.get(`/api/v1/api-keys/${res.body.id}`)).body.last_used_at).toBeNull();
    },
    SLOW,
  );
});
