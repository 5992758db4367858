import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, signUpUser, svc, TestServer, totpNow } from "../support/harness.ts";

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

function fieldPaths(body: { error: { details: { fields: { path: string }[] } } }): string[] {
  return body.error.details.fields.map((f) => f.path);
}

async function seatCount(): Promise<number> {
  const res = await admin.get("/api/v1/org");
  expect(res.status).toBe(200);
  return res.body.seat_count;
}

async function invite(email: string, role = "member", extra: Record<string, unknown> = {}) {
  const res = await admin.post("/api/v1/users", { email, role, ...extra });
  expect(res.status).toBe(201);
  return res.body as { id: string; email: string; status: string; team_ids: string[] };
}

async function createTeam(name: string): Promise<string> {
  const res = await admin.post("/api/v1/teams", { name });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe("inviting users", () => {
  test("POST /users returns 201 with the User in status invited", async () => {
    const before = await seatCount();
    const res = await admin.post("/api/v1/users", { email: "Ann@Acme.test", name: " Ann ", role: "admin" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^usr_[0-9a-z]{26}$/),
      email: "ann@acme.test",
      name: "Ann",
      role: "admin",
      status: "invited",
      team_ids: [],
      mfa_enabled: false,
      created_at: expect.stringMatching(TIMESTAMP),
      last_login_at: null,
    });
    const read = await admin.get(`/api/v1/users/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    expect(await seatCount()).toBe(before + 1);
  });

  test("a second invite for the same email (any case) is 409 conflict", async () => {
    await invite("dup@acme.test");
    for (const email of ["dup@acme.test", "DUP@acme.TEST"]) {
      const res = await admin.post("/api/v1/users", { email, role: "viewer" });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("conflict");
    }
    const owner = await admin.post("/api/v1/users", { email: "owner@acme.test", role: "admin" });
    expect(owner.status).toBe(409);
    expect(owner.body.error.code).toBe("conflict");
  });

  test("role owner cannot be invited (400 naming role)", async () => {
    const res = await admin.post("/api/v1/users", { email: "would-be-owner@acme.test", role: "owner" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_failed");
    expect(fieldPaths(res.body)).toEqual(["role"]);
    const list = await admin.get("/api/v1/users?limit=200");
    expect(list.body.data.map((u: { email: string }) => u.email)).not.toContain("would-be-owner@acme.test");
  });

  test("bad invite bodies are 400 naming the field", async () => {
    const cases: [unknown, string][] = [
      [{ email: "not-an-email", role: "member" }, "email"],
      [{ email: "x@acme.test", role: "superuser" }, "role"],
      [{ email: "x@acme.test" }, "role"],
      [{ email: "x@acme.test", role: "member", status: "active" }, "status"],
    ];
    for (const [body, path] of cases) {
      const res = await admin.post("/api/v1/users", body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toContain(path);
    }
  });

  test("team_ids naming an unknown team are 400 naming team_ids.<index>", async () => {
    const res = await admin.post("/api/v1/users", {
      email: "teamless@acme.test",
      role: "member",
      team_ids: ["team_01jzzzzzzzzzzzzzzzzzzzzzzz"],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_failed");
    expect(fieldPaths(res.body)).toEqual(["team_ids.0"]);

    const team = await createTeam("Invitees");
    const second = await admin.post("/api/v1/users", {
      email: "teamless@acme.test",
      role: "member",
      team_ids: [team, "team_nope"],
    });
    expect(second.status).toBe(400);
    expect(fieldPaths(second.body)).toEqual(["team_ids.1"]);
    const absent = await admin.get("/api/v1/users?limit=200");
    expect(absent.body.data.map((u: { email: string }) => u.email)).not.toContain("teamless@acme.test");
  });

  test("an invite may name teams, a team named twice counts once", async () => {
    const team = await createTeam("Invite twice");
    const res = await admin.post("/api/v1/users", {
      email: "twice@acme.test",
      role: "member",
      team_ids: [team, team],
    });
    expect(res.status).toBe(201);
    expect(res.body.team_ids).toEqual([team]);
    expect((await admin.get(`/api/v1/users/${res.body.id}`)).body.team_ids).toEqual([team]);
    expect((await admin.get(`/api/v1/teams/${team}`)).body.member_ids).toEqual([res.body.id]);
  });

  test(
    "a member cannot invite (403 forbidden_role); a key without admin scope gets 403 insufficient_scope",
    async () => {
      const member = await signUpUser(server, "plain-member@acme.test", "member");
      const res = await server
        .client(member.token)
        .post("/api/v1/users", { email: "x2@acme.test", role: "viewer" });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("forbidden_role");

      const key = await admin.post("/api/v1/api-keys", { name: "monitors only", scopes: ["monitors"] });
      expect(key.status).toBe(201);
      const scoped = await server
        .client(key.body.secret)
        .post("/api/v1/users", { email: "x3@acme.test", role: "viewer" });
      expect(scoped.status).toBe(403);
      expect(scoped.body.error.code).toBe("insufficient_scope");
    },
    SLOW,
  );
});

describe("changing users", () => {
  test("PATCH changes name, role and team_ids", async () => {
    const user = await invite("patchme@acme.test", "viewer");
    const ops = await createTeam("Ops");
    const dev = await createTeam("Dev");
    const res = await admin.patch(`/api/v1/users/${user.id}`, {
      name: "Pat",
      role: "member",
      team_ids: [dev, ops],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, name: "Pat", role: "member", status: "invited" });
    expect(res.body.team_ids).toEqual([dev, ops].sort());

    const read = await admin.get(`/api/v1/users/${user.id}`);
    expect(read.body).toEqual(res.body);

    const fewer = await admin.patch(`/api/v1/users/${user.id}`, { team_ids: [ops] });
    expect(fewer.status).toBe(200);
    expect(fewer.body.team_ids).toEqual([ops]);
    expect(fewer.body.name).toBe("Pat");
    expect(fewer.body.role).toBe("member");

    const none = await admin.patch(`/api/v1/users/${user.id}`, { team_ids: [] });
    expect(none.body.team_ids).toEqual([]);
  });

  test("PATCH with an unknown team is 400 naming team_ids.<index> and changes nothing", async () => {
    const user = await invite("patch-teams@acme.test", "viewer");
    const team = await createTeam("Patch teams");
    const res = await admin.patch(`/api/v1/users/${user.id}`, {
      name: "Changed",
      team_ids: [team, "team_unknown"],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_failed");
    expect(fieldPaths(res.body)).toEqual(["team_ids.1"]);
    const read = await admin.get(`/api/v1/users/${user.id}`);
    expect(read.body.name).toBe("");
    expect(read.body.team_ids).toEqual([]);
  });

  test("PATCH to role owner is 400; unknown fields are 400", async () => {
    const user = await invite("no-owner@acme.test", "admin");
    const res = await admin.patch(`/api/v1/users/${user.id}`, { role: "owner" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_failed");
    expect(fieldPaths(res.body)).toEqual(["role"]);
    expect((await admin.get(`/api/v1/users/${user.id}`)).body.role).toBe("admin");

    const unknown = await admin.patch(`/api/v1/users/${user.id}`, { email: "other@acme.test" });
    expect(unknown.status).toBe(400);
    expect(fieldPaths(unknown.body)).toEqual(["email"]);
  });

  test("the owner cannot be demoted, suspended or deleted (409 owner_protected)", async () => {
    for (const body of [{ role: "admin" }, { role: "viewer" }, { status: "suspended" }]) {
      const res = await admin.patch(`/api/v1/users/${ownerId}`, body);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("owner_protected");
    }
    const del = await admin.delete(`/api/v1/users/${ownerId}`);
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe("owner_protected");

    const owner = await admin.get(`/api/v1/users/${ownerId}`);
    expect(owner.status).toBe(200);
    expect(owner.body).toMatchObject({ role: "owner", status: "invited" });
    // The owner may still be renamed.
    const renamed = await admin.patch(`/api/v1/users/${ownerId}`, { name: "The Owner" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: "The Owner", role: "owner" });
  });

  test("an invited user cannot be made active by PATCH (409 invite_pending)", async () => {
    const user = await invite("pending@acme.test");
    const res = await admin.patch(`/api/v1/users/${user.id}`, { status: "active" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("invite_pending");
    expect((await admin.get(`/api/v1/users/${user.id}`)).body.status).toBe("invited");
  });

  test(
    "suspending an invited user stops their invite",
    async () => {
      const user = await invite("suspend-invited@acme.test");
      const link = await server.admin([
        "user",
        "invite-link",
        "--org",
        server.orgSlug,
        "--email",
        user.email,
      ]);
      const suspended = await admin.patch(`/api/v1/users/${user.id}`, { status: "suspended" });
      expect(suspended.status).toBe(200);
      expect(suspended.body.status).toBe("suspended");
      const accept = await server
        .client()
        .as()
        .post("/api/v1/auth/accept-invite", { token: link.invite_token, password: "correct horse battery" });
      expect(accept.status).toBe(400);
      expect(accept.body.error.code).toBe("validation_failed");
      expect(fieldPaths(accept.body)).toEqual(["token"]);

      const cli = await svc([
        "admin",
        "user",
        "invite-link",
        "--org",
        server.orgSlug,
        "--email",
        user.email,
        "--data-dir",
        server.dataDir,
        "--json",
      ]);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe("");

      // Restored, they are invited again, but the old link stays dead: a fresh one is needed.
      const restored = await admin.patch(`/api/v1/users/${user.id}`, { status: "active" });
      expect(restored.status).toBe(200);
      expect(restored.body.status).toBe("invited");
      const anon = server.client().as();
      const old = await anon.post("/api/v1/auth/accept-invite", {
        token: link.invite_token,
        password: "correct horse battery",
      });
      expect(old.status).toBe(400);
      const fresh = await server.admin([
        "user",
        "invite-link",
        "--org",
        server.orgSlug,
        "--email",
        user.email,
      ]);
      const accepted = await anon.post("/api/v1/auth/accept-invite", {
        token: fresh.invite_token,
        password: "correct horse battery",
      });
      expect(accepted.status).toBe(200);
    },
    SLOW,
  );

  test(
    "suspend then restore a signed-up user: sessions and keys are refused while suspended",
    async () => {
      const member = await signUpUser(server, "suspend-me@acme.test", "member");
      const key = await admin.post("/api/v1/api-keys", {
        name: "member key",
        scopes: ["monitors"],
        user_id: member.user.id,
      });
      expect(key.status).toBe(201);
      const session = server.client(member.token);
      const keyClient = server.client(key.body.secret);
      expect((await session.get("/api/v1/org")).status).toBe(200);
      expect((await keyClient.get("/api/v1/org")).status).toBe(200);
      const seatsBefore = await seatCount();

      const suspended = await admin.patch(`/api/v1/users/${member.user.id}`, { status: "suspended" });
      expect(suspended.status).toBe(200);
      expect(suspended.body.status).toBe("suspended");
      expect(await seatCount()).toBe(seatsBefore - 1);

      for (const client of [session, keyClient]) {
        const res = await client.get("/api/v1/org");
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("unauthenticated");
      }
      const login = await server
        .client()
        .as()
        .post("/api/v1/auth/login", {
          email: member.user.email,
          password: member.password,
          totp: totpNow(member.totpSecret),
        });
      expect(login.status).toBe(401);
      expect(login.body.error.code).toBe("unauthenticated");

      const restored = await admin.patch(`/api/v1/users/${member.user.id}`, { status: "active" });
      expect(restored.status).toBe(200);
      expect(restored.body.status).toBe("active");
      expect(await seatCount()).toBe(seatsBefore);

      expect((await keyClient.get("/api/v1/org")).status).toBe(200);
      const again = await server
        .client()
        .as()
        .post("/api/v1/auth/login", {
          email: member.user.email,
          password: member.password,
          totp: totpNow(member.totpSecret),
        });
      expect(again.status).toBe(200);
      expect((await server.client(again.body.token).get("/api/v1/org")).status).toBe(200);
    },
    SLOW,
  );

  test(
    "PATCH status invited is 400 naming status",
    async () => {
      const member = await signUpUser(server, "back-to-invited@acme.test", "viewer");
      const res = await admin.patch(`/api/v1/users/${member.user.id}`, { status: "invited" });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toEqual(["status"]);
    },
    SLOW,
  );
});

describe("deleting users", () => {
  test(
    "DELETE is 204; the user is gone and their API keys are revoked",
    async () => {
      const member = await signUpUser(server, "delete-me@acme.test", "admin");
      const team = await createTeam("Doomed members");
      await admin.patch(`/api/v1/teams/${team}`, { member_ids: [member.user.id] });
      const keys: string[] = [];
      const secrets: string[] = [];
      for (const name of ["one", "two"]) {
        const key = await admin.post("/api/v1/api-keys", {
          name,
          scopes: ["admin"],
          user_id: member.user.id,
        });
        expect(key.status).toBe(201);
        keys.push(key.body.id);
        secrets.push(key.body.secret);
      }
      const seatsBefore = await seatCount();

      const del = await admin.delete(`/api/v1/users/${member.user.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");

      const gone = await admin.get(`/api/v1/users/${member.user.id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe("not_found");
      const again = await admin.delete(`/api/v1/users/${member.user.id}`);
      expect(again.status).toBe(404);
      expect(await seatCount()).toBe(seatsBefore - 1);

      const list = await admin.get("/api/v1/api-keys?limit=200");
      expect(list.status).toBe(200);
      for (const id of keys) {
        const key = list.body.data.find((k: { id: string }) => k.id === id);
        expect(key).toBeDefined();
        expect(key.revoked_at).toMatch(TIMESTAMP);
      }
      for (const secret of secrets) {
        const res = await server.client(secret).get("/api/v1/org");
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("unauthenticated");
      }
      const session = await server.client(member.token).get("/api/v1/org");
      expect(session.status).toBe(401);
      expect((await admin.get(`/api/v1/teams/${team}`)).body.member_ids).toEqual([]);
      const users = await admin.get("/api/v1/users?limit=200");
      expect(users.body.data.map((u: { id: string }) => u.id)).not.toContain(member.user.id);
    },
    SLOW,
  );

  test(
    "an unknown or another organization's user is 404",
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
      const foreign = other.owner.id as string;
      const requests = [
        () => admin.get(`/api/v1/users/${foreign}`),
        () => admin.patch(`/api/v1/users/${foreign}`, { name: "x" }),
        () => admin.delete(`/api/v1/users/${foreign}`),
        () => admin.post(`/api/v1/users/${foreign}/reset-password`),
        () => admin.get("/api/v1/users/usr_01jzzzzzzzzzzzzzzzzzzzzzzz"),
      ];
      for (const request of requests) {
        const res = await request();
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
      const theirs = await server.client(other.api_key.secret).get(`/api/v1/users/${foreign}`);
      expect(theirs.status).toBe(200);
      expect(theirs.body.name).toBe("");
    },
    SLOW,
  );
});

describe("seats and lists", () => {
  test("seat_count on GET /org counts the users who are not suspended", async () => {
    const benched = await invite("benched@acme.test");
    expect((await admin.patch(`/api/v1/users/${benched.id}`, { status: "suspended" })).status).toBe(200);
    const all: { status: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { status: string }[]; next_cursor: string | null } } = await admin.get(
        `/api/v1/users?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      all.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    const suspended = all.filter((u) => u.status === "suspended").length;
    expect(suspended).toBeGreaterThan(0);
    expect(await seatCount()).toBe(all.length - suspended);

    const filtered = await admin.get("/api/v1/users?status=suspended&limit=200");
    expect(filtered.status).toBe(200);
    expect(filtered.body.data).toHaveLength(suspended);
    const owners = await admin.get("/api/v1/users?role=owner");
    expect(owners.body.data.map((u: { id: string }) => u.id)).toEqual([ownerId]);
  });
});

describe("password reset requests", () => {
  test(
    "reset-password on a signed-up user is 202; on an invited user 409 invite_pending",
    async () => {
      const member = await signUpUser(server, "reset-target@acme.test", "member");
      const res = await admin.post(`/api/v1/users/${member.user.id}/reset-password`);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ status: "accepted" });

      const invited = await invite("reset-invited@acme.test");
      const pending = await admin.post(`/api/v1/users/${invited.id}/reset-password`);
      expect(pending.status).toBe(409);
      expect(pending.body.error.code).toBe("invite_pending");
    },
    SLOW,
  );

  test(
    "a member may request a reset for themselves but not for another user",
    async () => {
      const a = await signUpUser(server, "reset-self@acme.test", "member");
      const b = await signUpUser(server, "reset-other@acme.test", "member");
      const self = await server.client(a.token).post(`/api/v1/users/${a.user.id}/reset-password`);
      expect(self.status).toBe(202);
      const other = await server.client(a.token).post(`/api/v1/users/${b.user.id}/reset-password`);
      expect(other.status).toBe(403);
      expect(other.body.error.code).toBe("forbidden_role");
    },
    SLOW,
  );

  test(
    "a suspended user cannot be sent a reset link (409 conflict)",
    async () => {
      const member = await signUpUser(server, "reset-suspended@acme.test", "member");
      expect((await admin.patch(`/api/v1/users/${member.user.id}`, { status: "suspended" })).status).toBe(
        200,
      );
      const res = await admin.post(`/api/v1/users/${member.user.id}/reset-password`);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("conflict");
    },
    SLOW,
  );
});
