import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI, sign users up (argon2id) or wait for email get more than the default 5 s. */
const SLOW = 20_000;

let server: TestServer;
let admin: Client;
let alice: string;
let bob: string;
let carol: string;
let foreignUser: string;
let foreignKey: string;

beforeAll(async () => {
  server = await TestServer.start();
  admin = server.client();
  const ids: string[] = [];
  for (const email of ["alice@acme.test", "bob@acme.test", "carol@acme.test"]) {
    const res = await admin.post("/api/v1/users", { email, role: "member" });
    if (res.status !== 201) throw new Error(res.text);
    ids.push(res.body.id);
  }
  [alice, bob, carol] = ids as [string, string, string];
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
  foreignUser = other.owner.id;
  foreignKey = other.api_key.secret;
}, SLOW);
afterAll(() => server.dispose());

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function fieldPaths(body: { error: { details: { fields: { path: string }[] } } }): string[] {
  return body.error.details.fields.map((f) => f.path);
}

async function teamIdsOf(userId: string): Promise<string[]> {
  const res = await admin.get(`/api/v1/users/${userId}`);
  expect(res.status).toBe(200);
  return res.body.team_ids;
}

describe("teams CRUD", () => {
  test("create, read, list, rename, replace members, delete", async () => {
    const created = await admin.post("/api/v1/teams", { name: "  Platform  ", member_ids: [bob, alice] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^team_[0-9a-z]{26}$/),
      name: "Platform",
      member_ids: [alice, bob].sort(),
      created_at: expect.stringMatching(TIMESTAMP),
    });
    const id = created.body.id as string;

    const read = await admin.get(`/api/v1/teams/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    const list = await admin.get("/api/v1/teams");
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.next_cursor).toBeNull();
    expect(list.body.data).toContainEqual(created.body);

    const renamed = await admin.patch(`/api/v1/teams/${id}`, { name: "Platform Eng" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...created.body, name: "Platform Eng" });

    const replaced = await admin.patch(`/api/v1/teams/${id}`, { member_ids: [carol, carol] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({ ...created.body, name: "Platform Eng", member_ids: [carol] });

    const del = await admin.delete(`/api/v1/teams/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    for (const res of [
      await admin.get(`/api/v1/teams/${id}`),
      await admin.patch(`/api/v1/teams/${id}`, { name: "Ghost" }),
      await admin.delete(`/api/v1/teams/${id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    const after = await admin.get("/api/v1/teams");
    expect(after.body.data.map((t: { id: string }) => t.id)).not.toContain(id);
  });

  test("a team may be created without members", async () => {
    const res = await admin.post("/api/v1/teams", { name: "Empty" });
    expect(res.status).toBe(201);
    expect(res.body.member_ids).toEqual([]);
  });

  test("the list pages by cursor", async () => {
    for (const name of ["Page A", "Page B", "Page C"]) {
      expect((await admin.post("/api/v1/teams", { name })).status).toBe(201);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { data: { name: string }[]; next_cursor: string | null } } =
        await admin.get(`/api/v1/teams?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((t) => t.name));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expect.arrayContaining(["Page A", "Page B", "Page C"]));
    expect(new Set(seen).size).toBe(seen.length);
    const bad = await admin.get("/api/v1/teams?cursor=garbage");
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_cursor");
  });
});

describe("team validation", () => {
  test("a duplicate name is 409 conflict, on create and on rename", async () => {
    const first = await admin.post("/api/v1/teams", { name: "SRE" });
    expect(first.status).toBe(201);
    const dup = await admin.post("/api/v1/teams", { name: "SRE" });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("conflict");
    const padded = await admin.post("/api/v1/teams", { name: " SRE " });
    expect(padded.status).toBe(409);
    expect(padded.body.error.code).toBe("conflict");

    const second = await admin.post("/api/v1/teams", { name: "Not SRE" });
    const rename = await admin.patch(`/api/v1/teams/${second.body.id}`, { name: "SRE" });
    expect(rename.status).toBe(409);
    expect(rename.body.error.code).toBe("conflict");
    expect((await admin.get(`/api/v1/teams/${second.body.id}`)).body.name).toBe("Not SRE");
    // Renaming a team to its own name is not a conflict.
    const same = await admin.patch(`/api/v1/teams/${first.body.id}`, { name: "SRE" });
    expect(same.status).toBe(200);
  });

  test("another organization may use the same name", async () => {
    const ours = await admin.post("/api/v1/teams", { name: "Shared name" });
    expect(ours.status).toBe(201);
    const theirs = await server.client(foreignKey).post("/api/v1/teams", { name: "Shared name" });
    expect(theirs.status).toBe(201);
    // …and neither org sees the other's team.
    expect((await admin.get(`/api/v1/teams/${theirs.body.id}`)).status).toBe(404);
    const list = await admin.get("/api/v1/teams?limit=200");
    expect(list.body.data.map((t: { id: string }) => t.id)).not.toContain(theirs.body.id);
  });

  test("member_ids naming an unknown user or another organization's user are 400 naming the index", async () => {
    const cases: [string[], string][] = [
      [["usr_01jzzzzzzzzzzzzzzzzzzzzzzz"], "member_ids.0"],
      [[alice, foreignUser], "member_ids.1"],
      [[alice, bob, "nobody"], "member_ids.2"],
    ];
    for (const [memberIds, path] of cases) {
      const res = await admin.post("/api/v1/teams", { name: "Bad members", member_ids: memberIds });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toEqual([path]);
    }
    const list = await admin.get("/api/v1/teams?limit=200");
    expect(list.body.data.map((t: { name: string }) => t.name)).not.toContain("Bad members");

    const team = await admin.post("/api/v1/teams", { name: "Guarded", member_ids: [alice] });
    const patch = await admin.patch(`/api/v1/teams/${team.body.id}`, {
      name: "Renamed",
      member_ids: [foreignUser],
    });
    expect(patch.status).toBe(400);
    expect(fieldPaths(patch.body)).toEqual(["member_ids.0"]);
    const unchanged = await admin.get(`/api/v1/teams/${team.body.id}`);
    expect(unchanged.body).toMatchObject({ name: "Guarded", member_ids: [alice] });
  });

  test("bad bodies are 400 naming the field", async () => {
    const cases: [unknown, string][] = [
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: "x", members: [] }, "members"],
      [{ name: "x", member_ids: "usr_1" }, "member_ids"],
    ];
    for (const [body, path] of cases) {
      const res = await admin.post("/api/v1/teams", body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toContain(path);
    }
  });

  test("another organization's team is 404", async () => {
    const theirs = await server.client(foreignKey).post("/api/v1/teams", { name: "Theirs" });
    expect(theirs.status).toBe(201);
    for (const res of [
      await admin.get(`/api/v1/teams/${theirs.body.id}`),
      await admin.patch(`/api/v1/teams/${theirs.body.id}`, { name: "Mine now" }),
      await admin.delete(`/api/v1/teams/${theirs.body.id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    expect((await server.client(foreignKey).get(`/api/v1/teams/${theirs.body.id}`)).body.name).toBe("Theirs");
  });
});

describe("membership seen from users", () => {
  test("user.team_ids follows team membership changes and team deletion", async () => {
    const [erin, frank, gina] = await Promise.all(
      ["erin@acme.test", "frank@acme.test", "gina@acme.test"].map(async (email) => {
        const res = await admin.post("/api/v1/users", { email, role: "member" });
        expect(res.status).toBe(201);
        return res.body.id as string;
      }),
    );
    expect(await teamIdsOf(erin as string)).toEqual([]);
    const red = await admin.post("/api/v1/teams", { name: "Red", member_ids: [erin] });
    const blue = await admin.post("/api/v1/teams", { name: "Blue", member_ids: [erin, frank] });
    expect(await teamIdsOf(erin as string)).toEqual([red.body.id, blue.body.id].sort());
    expect(await teamIdsOf(frank as string)).toEqual([blue.body.id]);

    await admin.patch(`/api/v1/teams/${blue.body.id}`, { member_ids: [frank] });
    expect(await teamIdsOf(erin as string)).toEqual([red.body.id]);

    const list = await admin.get("/api/v1/users?limit=200");
    const frankInList = list.body.data.find((u: { id: string }) => u.id === frank);
    expect(frankInList.team_ids).toEqual([blue.body.id]);

    expect((await admin.delete(`/api/v1/teams/${red.body.id}`)).status).toBe(204);
    expect(await teamIdsOf(erin as string)).toEqual([]);

    // Setting a user's team_ids changes the team's member_ids.
    const patched = await admin.patch(`/api/v1/users/${gina}`, { team_ids: [blue.body.id] });
    expect(patched.status).toBe(200);
    expect(patched.body.team_ids).toEqual([blue.body.id]);
    expect((await admin.get(`/api/v1/teams/${blue.body.id}`)).body.member_ids).toEqual(
      [frank as string, gina as string].sort(),
    );
  });

  test("a deleted user leaves their teams", async () => {
    const dave = await admin.post("/api/v1/users", { email: "dave@acme.test", role: "viewer" });
    const team = await admin.post("/api/v1/teams", { name: "With Dave", member_ids: [dave.body.id, alice] });
    expect((await admin.delete(`/api/v1/users/${dave.body.id}`)).status).toBe(204);
    expect((await admin.get(`/api/v1/teams/${team.body.id}`)).body.member_ids).toEqual([alice]);
  });
});

describe("team access", () => {
  test(
    "members and viewers may read teams but not change them (403 forbidden_role)",
    async () => {
      const member = await signUpUser(server, "team-member@acme.test", "member");
      const viewer = await signUpUser(server, "team-viewer@acme.test", "viewer");
      const team = await admin.post("/api/v1/teams", { name: "Read only" });
      for (const token of [member.token, viewer.token]) {
        const client = server.client(token);
        expect((await client.get("/api/v1/teams")).status).toBe(200);
        expect((await client.get(`/api/v1/teams/${team.body.id}`)).status).toBe(200);
        for (const res of [
          await client.post("/api/v1/teams", { name: "Mine" }),
          await client.patch(`/api/v1/teams/${team.body.id}`, { name: "Mine" }),
          await client.delete(`/api/v1/teams/${team.body.id}`),
        ]) {
          expect(res.status).toBe(403);
          expect(res.body.error.code).toBe("forbidden_role");
        }
      }
      const anonymous = await server.client().as().get("/api/v1/teams");
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error.code).toBe("unauthenticated");
    },
    SLOW,
  );
});
