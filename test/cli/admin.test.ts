/**
 * `svc admin …` through the real CLI (DESIGN §3): with `--json` each command prints exactly one
 * JSON document on stdout (the whole stdout is parsed) and nothing on stderr; usage and
 * validation errors exit 1 with one line on stderr and nothing on stdout; without `--json` and
 * not on a TTY the output is plain text. The commands also work beside a running `svc serve`.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LATEST_SCHEMA_VERSION } from "../../src/db/migrations.ts";
import { COMMIT, VERSION } from "../../src/version.ts";
import { type CliResult, svc, TestServer, tempDir, totpNow } from "../support/harness.ts";

setDefaultTimeout(60_000);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const API_KEY = /^svc_[0-9A-Za-z]{40}$/;
const ALL_SCOPES = ["monitors", "alerts", "incidents", "schedules", "events", "admin"];
const DAY = 86_400_000;
const PASSWORD = "correct horse battery";
/** `base_url` when nothing configures it: derived from the default `listen`. */
const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

const dirs: string[] = [];
function dataDir(): string {
  const dir = tempDir("svc-admin-");
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `svc admin <args> --data-dir D --json`: exit 0, empty stderr, and the one document on stdout. */
async function run(dir: string, args: string[]): Promise<any> {
  const result = await svc(["admin", ...args, "--data-dir", dir, "--json"]);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
  expect(result.stdout.endsWith("\n")).toBe(true);
  return JSON.parse(result.stdout);
}

/** Exit 1, nothing on stdout, exactly `error: <message>` as one line on stderr. */
function expectUsageError(result: CliResult, message: string | RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr.split("\n")).toHaveLength(2);
  expect(result.stderr.endsWith("\n")).toBe(true);
  if (typeof message === "string") expect(result.stderr).toBe(`error: ${message}\n`);
  else expect(result.stderr).toMatch(message);
}

function fail(dir: string, args: string[]): Promise<CliResult> {
  return svc(["admin", ...args, "--data-dir", dir, "--json"]);
}

function notJson(text: string): boolean {
  try {
    JSON.parse(text);
    return false;
  } catch {
    return true;
  }
}

async function init(dir: string, slug = "acme", extra: string[] = []) {
  return run(dir, [
    "init",
    "--org-name",
    "Acme",
    "--org-slug",
    slug,
    "--owner-email",
    "Owner@Acme.test",
    ...extra,
  ]);
}

/** Takes an invited user through sign-up on a running server with a link from the CLI. */
async function signUp(server: TestServer, slug: string, email: string): Promise<void> {
  const link = await run(server.dataDir, ["user", "invite-link", "--org", slug, "--email", email]);
  const anon = server.client().as();
  const accepted = await anon.post("/api/v1/auth/accept-invite", {
    token: link.invite_token,
    password: PASSWORD,
  });
  expect(accepted.status).toBe(200);
  const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
    token: link.invite_token,
    totp: totpNow(accepted.body.totp_secret),
  });
  expect(confirmed.status).toBe(200);
}

describe("svc admin init", () => {
  test("prints { org, owner, api_key, ingest_token } with the key's secret and the token", async () => {
    const dir = dataDir();
    const created = await init(dir);
    expect(Object.keys(created)).toEqual(["org", "owner", "api_key", "ingest_token"]);
    expect(created.org).toEqual({
      id: expect.stringMatching(/^org_[0-9a-z]{26}$/),
      name: "Acme",
      slug: "acme",
      plan: "enterprise",
      seat_count: 1,
      created_at: expect.stringMatching(ISO),
      updated_at: created.org.created_at,
    });
    expect(created.owner).toEqual({
      id: expect.stringMatching(/^usr_[0-9a-z]{26}$/),
      email: "owner@acme.test",
      name: "",
      role: "owner",
      status: "invited",
      team_ids: [],
      mfa_enabled: false,
      created_at: created.org.created_at,
      last_login_at: null,
    });
    expect(created.api_key).toEqual({
      id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
      name: "initial admin key",
      prefix: created.api_key.secret.slice(0, 12),
      scopes: ALL_SCOPES,
      user_id: created.owner.id,
      service: false,
      channel_id: null,
      expires_at: new Date(Date.parse(created.org.created_at) + 90 * DAY).toISOString(),
      revoked_at: null,
      last_used_at: null,
      created_at: created.org.created_at,
      secret: expect.stringMatching(API_KEY),
    });
    expect(created.ingest_token).toEqual({
      id: expect.stringMatching(/^tok_[0-9a-z]{26}$/),
      name: "default",
      prefix: created.ingest_token.token.slice(0, "acme".length + 5),
      channel_id: null,
      created_at: created.org.created_at,
      revoked_at: null,
      token: expect.stringMatching(/^acme_[A-Za-z0-9_-]{43}$/),
    });
  });

  test("--plan sets the plan", async () => {
    const created = await init(dataDir(), "acme", ["--plan", "free"]);
    expect(created.org.plan).toBe("free");
  });

  test("fails with one line on stderr when the database already has an organization", async () => {
    const dir = dataDir();
    const first = await init(dir);
    for (const slug of ["acme", "other"]) {
      const again = await fail(dir, [
        "init",
        "--org-name",
        "Other",
        "--org-slug",
        slug,
        "--owner-email",
        "o@other.test",
      ]);
      expectUsageError(again, "The database already has an organization.");
    }
    expect(await run(dir, ["org", "list"])).toEqual([first.org]);
  });

  test("a missing required option is a usage error and touches no database", async () => {
    const dir = dataDir();
    const result = await fail(dir, ["init", "--org-name", "Acme", "--owner-email", "o@acme.test"]);
    expectUsageError(result, "required option '--org-slug <slug>' not specified");
    expect(existsSync(join(dir, "svc.db"))).toBe(false);
  });

  test("an unknown plan or a bad slug or email is a validation error and creates nothing", async () => {
    const dir = dataDir();
    const base = ["init", "--org-name", "Acme", "--owner-email", "o@acme.test"];
    expectUsageError(
      await fail(dir, [...base, "--org-slug", "acme", "--plan", "gold"]),
      "plan: must be one of free, pro, enterprise.",
    );
    expectUsageError(
      await fail(dir, [...base, "--org-slug", "Not A Slug"]),
      "slug: must be 1-40 lowercase letters, digits or dashes.",
    );
    expectUsageError(
      await fail(dir, ["init", "--org-name", "Acme", "--org-slug", "acme", "--owner-email", "nobody"]),
      "owner_email: must be an email address.",
    );
    expect(await run(dir, ["org", "list"])).toEqual([]);
  });

  test("without --json (stdout not a TTY) it prints key/value text, not JSON", async () => {
    const dir = dataDir();
    const result = await svc([
      "admin",
      "init",
      "--org-name",
      "Acme",
      "--org-slug",
      "acme",
      "--owner-email",
      "o@acme.test",
      "--data-dir",
      dir,
    ]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(notJson(result.stdout)).toBe(true);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("org:");
    expect(lines[1]).toMatch(/^ {2}id: org_[0-9a-z]{26}$/);
    expect(lines).toContain("  slug: acme");
    expect(lines).toContain("  scopes: monitors,alerts,incidents,schedules,events,admin");
    expect(lines.filter((l) => /^ {2}secret: svc_[0-9A-Za-z]{40}$/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /^[a-z_]+:$/.test(l))).toEqual([
      "org:",
      "owner:",
      "api_key:",
      "ingest_token:",
    ]);
  });
});

describe("svc admin org", () => {
  let dir: string;
  let first: any;
  beforeAll(async () => {
    dir = dataDir();
    first = await init(dir);
  });

  test("create prints the same shape as init and list/show return the Organizations", async () => {
    const created = await run(dir, [
      "org",
      "create",
      "--name",
      "Beta",
      "--slug",
      "beta",
      "--owner-email",
      "boss@beta.test",
      "--plan",
      "pro",
    ]);
    expect(Object.keys(created)).toEqual(["org", "owner", "api_key", "ingest_token"]);
    expect(created.org).toMatchObject({ name: "Beta", slug: "beta", plan: "pro", seat_count: 1 });
    expect(created.owner).toMatchObject({ email: "boss@beta.test", role: "owner", status: "invited" });
    expect(created.api_key).toMatchObject({ user_id: created.owner.id, scopes: ALL_SCOPES, service: false });
    expect(created.api_key.secret).toMatch(API_KEY);
    expect(created.ingest_token.token).toMatch(/^beta_[A-Za-z0-9_-]{43}$/);

    const list = await run(dir, ["org", "list"]);
    expect(list).toEqual([first.org, created.org]);
    expect(await run(dir, ["org", "show", "--org", "beta"])).toEqual(created.org);
    expect(await run(dir, ["org", "show", "--org", "acme"])).toEqual(first.org);
  });

  test("create refuses a taken slug", async () => {
    const result = await fail(dir, [
      "org",
      "create",
      "--name",
      "Again",
      "--slug",
      "acme",
      "--owner-email",
      "a@again.test",
    ]);
    expectUsageError(result, "The slug 'acme' is taken.");
  });

  test("show of an unknown org fails", async () => {
    expectUsageError(await fail(dir, ["org", "show", "--org", "nope"]), "Organization 'nope' was not found.");
    expectUsageError(await fail(dir, ["org", "show"]), "required option '--org <slug>' not specified");
  });

  test("set-plan prints the Organization; an unknown plan changes nothing", async () => {
    const updated = await run(dir, ["org", "set-plan", "--org", "acme", "--plan", "free"]);
    expect(updated).toEqual({ ...first.org, plan: "free", updated_at: expect.stringMatching(ISO) });
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.org.updated_at));
    expectUsageError(
      await fail(dir, ["org", "set-plan", "--org", "acme", "--plan", "platinum"]),
      "plan: must be one of free, pro, enterprise.",
    );
    expectUsageError(
      await fail(dir, ["org", "set-plan", "--org", "acme"]),
      "required option '--plan <plan>' not specified",
    );
    expect((await run(dir, ["org", "show", "--org", "acme"])).plan).toBe("free");
    expect((await run(dir, ["org", "set-plan", "--org", "acme", "--plan", "enterprise"])).plan).toBe(
      "enterprise",
    );
  });

  test("set-slug refuses a bad or taken slug", async () => {
    expectUsageError(
      await fail(dir, ["org", "set-slug", "--org", "acme", "--slug", "-bad-"]),
      "slug: must be 1-40 lowercase letters, digits or dashes.",
    );
    expectUsageError(
      await fail(dir, ["org", "set-slug", "--org", "acme", "--slug", "beta"]),
      "The slug 'beta' is taken.",
    );
  });

  test("list without --json prints a tab-separated table", async () => {
    const result = await svc(["admin", "org", "list", "--data-dir", dir]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    const orgs = await run(dir, ["org", "list"]);
    expect(result.stdout).toBe(
      [
        "SLUG\tNAME\tPLAN\tSEATS\tID",
        ...orgs.map((o: any) => `${o.slug}\t${o.name}\t${o.plan}\t${o.seat_count}\t${o.id}`),
        "",
      ].join("\n"),
    );
  });
});

describe("svc admin key", () => {
  let dir: string;
  let org: any;
  beforeAll(async () => {
    dir = dataDir();
    org = await init(dir);
  });

  test("create --user EMAIL with scopes and --expires-at", async () => {
    const key = await run(dir, [
      "key",
      "create",
      "--org",
      "acme",
      "--name",
      "deploy bot",
      "--scopes",
      "alerts,monitors",
      "--user",
      "owner@acme.test",
      "--expires-at",
      "2031-05-06T07:08:09+02:00",
    ]);
    expect(key).toEqual({
      id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
      name: "deploy bot",
      prefix: key.secret.slice(0, 12),
      scopes: ["alerts", "monitors"],
      user_id: org.owner.id,
      service: false,
      channel_id: null,
      expires_at: "2031-05-06T05:08:09.000Z",
      revoked_at: null,
      last_used_at: null,
      created_at: expect.stringMatching(ISO),
      secret: expect.stringMatching(API_KEY),
    });
  });

  test("create --service: no user; --expires-at never; the default is 90 days", async () => {
    const service = await run(dir, [
      "key",
      "create",
      "--org",
      "acme",
      "--name",
      "ci",
      "--scopes",
      "admin",
      "--service",
      "--expires-at",
      "never",
    ]);
    expect(service).toMatchObject({
      name: "ci",
      scopes: ["admin"],
      user_id: null,
      service: true,
      expires_at: null,
    });
    const defaulted = await run(dir, [
      "key",
      "create",
      "--org",
      "acme",
      "--name",
      "d",
      "--scopes",
      "events",
      "--service",
    ]);
    expect(Date.parse(defaulted.expires_at) - Date.parse(defaulted.created_at)).toBe(90 * DAY);
  });

  test("create: usage and validation errors", async () => {
    const base = ["key", "create", "--org", "acme", "--name", "k"];
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts,root", "--service"]),
      "scopes: must be a comma list of monitors, alerts, incidents, schedules, events, admin.",
    );
    expectUsageError(
      await fail(dir, [...base, "--service"]),
      "required option '--scopes <list>' not specified",
    );
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts"]),
      "user: give --user EMAIL or --service.",
    );
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts", "--service", "--user", "owner@acme.test"]),
      "option '--user <email>' cannot be used with option '--service'",
    );
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts", "--user", "ghost@acme.test"]),
      "User 'ghost@acme.test' was not found.",
    );
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts", "--service", "--expires-at", "tomorrow"]),
      "expires-at: must be an RFC 3339 time or 'never'.",
    );
    expectUsageError(
      await fail(dir, [...base, "--scopes", "alerts", "--service", "--expires-at", "2001-01-01T00:00:00Z"]),
      "expires_at: must be in the future.",
    );
    expectUsageError(
      await fail(dir, ["key", "create", "--org", "nope", "--name", "k", "--scopes", "alerts", "--service"]),
      "Organization 'nope' was not found.",
    );
  });

  test("list shows every key without secrets; revoke prints { id, revoked_at } and is idempotent", async () => {
    const made = await run(dir, [
      "key",
      "create",
      "--org",
      "acme",
      "--name",
      "tmp",
      "--scopes",
      "alerts",
      "--service",
    ]);
    const list = await run(dir, ["key", "list", "--org", "acme"]);
    expect(Array.isArray(list)).toBe(true);
    expect(list.every((k: any) => !("secret" in k))).toBe(true);
    const { secret: _secret, ...shown } = made;
    expect(list).toContainEqual(shown);
    expect(list.map((k: any) => k.id)).toContain(org.api_key.id);
    expect(list.map((k: any) => k.id)).toEqual([...list.map((k: any) => k.id)].sort().reverse());

    const revoked = await run(dir, ["key", "revoke", "--org", "acme", "--id", made.id]);
    expect(revoked).toEqual({ id: made.id, revoked_at: expect.stringMatching(ISO) });
    const again = await run(dir, ["key", "revoke", "--org", "acme", "--id", made.id]);
    expect(again).toEqual(revoked);
    const after = await run(dir, ["key", "list", "--org", "acme"]);
    expect(after.find((k: any) => k.id === made.id)).toEqual({ ...shown, revoked_at: revoked.revoked_at });
    expect(after.find((k: any) => k.id === org.api_key.id).revoked_at).toBeNull();

    expectUsageError(
      await fail(dir, ["key", "revoke", "--org", "acme", "--id", "key_nope"]),
      "API key was not found.",
    );
    expectUsageError(
      await fail(dir, ["key", "revoke", "--org", "acme"]),
      "required option '--id <key_id>' not specified",
    );
  });

  test("revoke without --json prints key/value lines", async () => {
    const made = await run(dir, [
      "key",
      "create",
      "--org",
      "acme",
      "--name",
      "tmp2",
      "--scopes",
      "alerts",
      "--service",
    ]);
    const result = await svc(["admin", "key", "revoke", "--org", "acme", "--id", made.id, "--data-dir", dir]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(
      new RegExp(`^id: ${made.id}\\nrevoked_at: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\\n$`),
    );
  });
});

describe("svc admin user", () => {
  let dir: string;
  let org: any;
  beforeAll(async () => {
    dir = dataDir();
    org = await init(dir);
  });

  test("invite prints the User; list includes it; set-role changes it", async () => {
    const invited = await run(dir, [
      "user",
      "invite",
      "--org",
      "acme",
      "--email",
      "Mia@Acme.test",
      "--role",
      "member",
    ]);
    expect(invited).toEqual({
      id: expect.stringMatching(/^usr_[0-9a-z]{26}$/),
      email: "mia@acme.test",
      name: "",
      role: "member",
      status: "invited",
      team_ids: [],
      mfa_enabled: false,
      created_at: expect.stringMatching(ISO),
      last_login_at: null,
    });
    expect(await run(dir, ["user", "list", "--org", "acme"])).toEqual([org.owner, invited]);
    const changed = await run(dir, [
      "user",
      "set-role",
      "--org",
      "acme",
      "--email",
      "mia@acme.test",
      "--role",
      "viewer",
    ]);
    expect(changed).toEqual({ ...invited, role: "viewer" });
    expect(await run(dir, ["user", "list", "--org", "acme"])).toEqual([org.owner, changed]);
  });

  test("usage and validation errors", async () => {
    expectUsageError(
      await fail(dir, ["user", "invite", "--org", "acme", "--email", "x@acme.test", "--role", "boss"]),
      "role: must be one of owner, admin, member, viewer.",
    );
    expectUsageError(
      await fail(dir, ["user", "invite", "--org", "acme", "--email", "x@acme.test", "--role", "owner"]),
      "role: cannot be owner; transfer ownership instead.",
    );
    expectUsageError(
      await fail(dir, ["user", "invite", "--org", "acme", "--email", "x@acme.test"]),
      "required option '--role <role>' not specified",
    );
    expectUsageError(
      await fail(dir, ["user", "invite", "--org", "acme", "--email", "owner@acme.test", "--role", "admin"]),
      "A user with the email 'owner@acme.test' already exists.",
    );
    expectUsageError(
      await fail(dir, ["user", "set-role", "--org", "acme", "--email", "owner@acme.test", "--role", "admin"]),
      "The owner cannot be demoted or suspended; transfer ownership first.",
    );
    expectUsageError(
      await fail(dir, ["user", "set-role", "--org", "acme", "--email", "ghost@acme.test", "--role", "admin"]),
      "User 'ghost@acme.test' was not found.",
    );
    expect((await run(dir, ["user", "list", "--org", "acme"])).map((u: any) => u.email)).not.toContain(
      "x@acme.test",
    );
  });

  test("invite-link prints { invite_token, invite_url, expires_at } valid for 7 days", async () => {
    await run(dir, ["user", "invite", "--org", "acme", "--email", "lee@acme.test", "--role", "admin"]);
    const before = Date.now();
    const link = await run(dir, ["user", "invite-link", "--org", "acme", "--email", "lee@acme.test"]);
    const after = Date.now();
    expect(Object.keys(link)).toEqual(["invite_token", "invite_url", "expires_at"]);
    expect(link.invite_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.invite_url).toBe(`${DEFAULT_BASE_URL}/accept-invite?token=${link.invite_token}`);
    expect(link.expires_at).toMatch(ISO);
    const expires = Date.parse(link.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 7 * DAY);
    expect(expires).toBeLessThanOrEqual(after + 7 * DAY);
    expectUsageError(
      await fail(dir, ["user", "invite-link", "--org", "acme", "--email", "ghost@acme.test"]),
      "User 'ghost@acme.test' was not found.",
    );
  });

  test("list without --json prints a tab-separated table", async () => {
    const users = await run(dir, ["user", "list", "--org", "acme"]);
    const result = await svc(["admin", "user", "list", "--org", "acme", "--data-dir", dir]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout).toBe(
      [
        "EMAIL\tROLE\tSTATUS\tMFA\tID",
        ...users.map((u: any) => `${u.email}\t${u.role}\t${u.status}\tno\t${u.id}`),
        "",
      ].join("\n"),
    );
  });
});

describe("svc admin token", () => {
  test("fails for an owner who has not finished sign-up, and for a bad --ttl", async () => {
    const dir = dataDir();
    await init(dir);
    expectUsageError(
      await fail(dir, ["token", "--org", "acme", "--user", "owner@acme.test"]),
      "The user must finish sign-up before a session token can be issued.",
    );
    await run(dir, ["user", "invite", "--org", "acme", "--email", "m@acme.test", "--role", "member"]);
    expectUsageError(
      await fail(dir, ["token", "--org", "acme", "--user", "m@acme.test"]),
      "Admin tokens are for owners and admins.",
    );
    for (const ttl of ["30s", "25h", "soon"]) {
      expectUsageError(
        await fail(dir, ["token", "--org", "acme", "--user", "owner@acme.test", "--ttl", ttl]),
        "ttl: must be between 1m and 24h.",
      );
    }
    expectUsageError(
      await fail(dir, ["token", "--org", "acme"]),
      "required option '--user <email>' not specified",
    );
  });
});

describe("svc admin backup and migrate", () => {
  test("migrate prints { schema_version }", async () => {
    const dir = dataDir();
    expect(await run(dir, ["migrate"])).toEqual({ schema_version: LATEST_SCHEMA_VERSION });
    expect(await run(dir, ["migrate"])).toEqual({ schema_version: LATEST_SCHEMA_VERSION });
    const db = new Database(join(dir, "svc.db"), { readonly: true });
    try {
      const rows = db.query("SELECT version FROM schema_migrations ORDER BY version").all() as {
        version: number;
      }[];
      expect(rows.map((r) => r.version)).toEqual(
        Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
      );
    } finally {
      db.close();
    }
  });

  test("backup FILE prints { file, bytes } and writes a SQLite copy that svc serve opens", async () => {
    const dir = dataDir();
    const org = await init(dir);
    const file = join(dataDir(), "backup.db");
    const backup = await run(dir, ["backup", file]);
    expect(backup).toEqual({ file, bytes: statSync(file).size });
    expect(backup.bytes).toBeGreaterThan(0);

    const db = new Database(file, { readonly: true });
    try {
      expect(db.query("SELECT slug FROM orgs").all()).toEqual([{ slug: "acme" }]);
    } finally {
      db.close();
    }

    expectUsageError(await fail(dir, ["backup", file]), `file: ${file} already exists.`);
    expectUsageError(await fail(dir, ["backup"]), "missing required argument 'file'");

    const restored = dataDir();
    copyFileSync(file, join(restored, "svc.db"));
    const server = await TestServer.start({ init: false, dataDir: restored });
    try {
      const res = await server.client(org.api_key.secret).get("/api/v1/org");
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: org.org.id, slug: "acme", name: "Acme" });
      expect(server.output).not.toContain("first start");
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect(existsSync(join(restored, "initial-admin-key"))).toBe(false);
  });

  test("a file that is not a database is an error on one line", async () => {
    const dir = dataDir();
    writeFileSync(
      join(dir, "svc.db"),
      "this is not a database, just text that is long enough to be a header",
    );
    expectUsageError(await fail(dir, ["migrate"]), "unexpected failure: file is not a database");
  });
});

describe("svc version", () => {
  test("--json prints { version, commit, schema_version }", async () => {
    const result = await svc(["version", "--json"]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(result.stdout)).toEqual({
      version: VERSION,
      commit: COMMIT,
      schema_version: LATEST_SCHEMA_VERSION,
    });
  });

  test("without --json prints one line of text", async () => {
    const result = await svc(["version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`svc ${VERSION} (commit ${COMMIT}, schema ${LATEST_SCHEMA_VERSION})\n`);
  });
});

describe("svc admin beside a running svc serve (WAL)", () => {
  let server: TestServer;
  let slug: string;
  beforeAll(async () => {
    server = await TestServer.start();
    slug = server.orgSlug;
  });
  afterAll(() => server.dispose());

  test("a key created by the CLI works at once; revoked by the CLI it is refused within 2 s", async () => {
    const key = await run(server.dataDir, [
      "key",
      "create",
      "--org",
      slug,
      "--name",
      "live",
      "--scopes",
      "admin",
      "--service",
    ]);
    const client = server.client(key.secret);
    expect((await client.get("/api/v1/org")).status).toBe(200);

    const revoked = await run(server.dataDir, ["key", "revoke", "--org", slug, "--id", key.id]);
    expect(revoked.id).toBe(key.id);
    const since = Date.now();
    let res = await client.get("/api/v1/org");
    while (res.status === 200 && Date.now() - since < 2000) {
      await Bun.sleep(50);
      res = await client.get("/api/v1/org");
    }
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("unauthenticated");
    expect(Date.now() - since).toBeLessThan(2000);
    expect((await server.client().get("/api/v1/org")).status).toBe(200);
  });

  test("set-plan and user invite by the CLI are visible through the API", async () => {
    await run(server.dataDir, ["org", "set-plan", "--org", slug, "--plan", "pro"]);
    expect((await server.client().get("/api/v1/org")).body.plan).toBe("pro");
    const invited = await run(server.dataDir, [
      "user",
      "invite",
      "--org",
      slug,
      "--email",
      "cli@acme.test",
      "--role",
      "viewer",
    ]);
    const res = await server.client().get(`/api/v1/users/${invited.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(invited);
  });

  test("invite-link twice: the first token stops working, the second finishes sign-up", async () => {
    await run(server.dataDir, [
      "user",
      "invite",
      "--org",
      slug,
      "--email",
      "twice@acme.test",
      "--role",
      "member",
    ]);
    const first = await run(server.dataDir, [
      "user",
      "invite-link",
      "--org",
      slug,
      "--email",
      "twice@acme.test",
    ]);
    const second = await run(server.dataDir, [
      "user",
      "invite-link",
      "--org",
      slug,
      "--email",
      "twice@acme.test",
    ]);
    expect(second.invite_token).not.toBe(first.invite_token);
    const anon = server.client().as();
    const stale = await anon.post("/api/v1/auth/accept-invite", {
      token: first.invite_token,
      password: PASSWORD,
    });
    expect(stale.status).toBe(400);
    expect(stale.body.error.code).toBe("validation_failed");
    expect(stale.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(["token"]);
    const fresh = await anon.post("/api/v1/auth/accept-invite", {
      token: second.invite_token,
      password: PASSWORD,
    });
    expect(fresh.status).toBe(200);
    const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
      token: second.invite_token,
      totp: totpNow(fresh.body.totp_secret),
    });
    expect(confirmed.status).toBe(200);
    expectUsageError(
      await fail(server.dataDir, ["user", "invite-link", "--org", slug, "--email", "twice@acme.test"]),
      "This user has already finished sign-up.",
    );
  });

  test("token for an owner who finished sign-up is an admin JWT the server accepts", async () => {
    await signUp(server, slug, "owner@acme.test");
    const before = Date.now();
    const minted = await run(server.dataDir, [
      "token",
      "--org",
      slug,
      "--user",
      "owner@acme.test",
      "--ttl",
      "2h",
    ]);
    const after = Date.now();
    expect(Object.keys(minted)).toEqual(["token", "expires_at"]);
    expect(minted.token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(minted.expires_at).toMatch(ISO);
    const expires = Date.parse(minted.expires_at);
    expect(expires).toBeGreaterThan(before + 2 * 3_600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(after + 2 * 3_600_000);
    const res = await server.client(minted.token).get("/api/v1/org");
    expect(res.status).toBe(200);
    expect(res.body.slug).toBe(slug);

    const fifteen = await run(server.dataDir, ["token", "--org", slug, "--user", "owner@acme.test"]);
    expect(Date.parse(fifteen.expires_at) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    expect(Date.parse(fifteen.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
  });

  test("set-slug: the org answers under the new slug and its ingest token still exists", async () => {
    const before = await server.client().get("/api/v1/org/ingest-tokens");
    expect(before.status).toBe(200);
    const initToken = before.body.data.find((t: any) => t.id === server.init?.ingest_token.id);
    expect(initToken).toMatchObject({ name: "default", revoked_at: null });

    const renamed = await run(server.dataDir, ["org", "set-slug", "--org", slug, "--slug", "acme-renamed"]);
    expect(renamed).toMatchObject({ id: server.init?.org.id, slug: "acme-renamed" });
    expect((await server.client().get("/api/v1/org")).body.slug).toBe("acme-renamed");
    expectUsageError(
      await fail(server.dataDir, ["org", "show", "--org", slug]),
      `Organization '${slug}' was not found.`,
    );

    const after = await server.client().get("/api/v1/org/ingest-tokens");
    expect(after.status).toBe(200);
    expect(after.body.data.find((t: any) => t.id === server.init?.ingest_token.id)).toEqual(initToken);
    await run(server.dataDir, ["org", "set-slug", "--org", "acme-renamed", "--slug", slug]);
  });

  test("backup is online: it works while the server keeps writing", async () => {
    const file = join(dataDir(), "online.db");
    const statuses: number[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const res = await server
          .client()
          .post("/api/v1/users", { email: `bulk${i}@acme.test`, role: "viewer" });
        statuses.push(res.status);
      }
    })();
    await Bun.sleep(50);
    const backup = await run(server.dataDir, ["backup", file]);
    writing = false;
    await writer;
    expect(statuses.length).toBeGreaterThan(1);
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(backup).toEqual({ file, bytes: statSync(file).size });
    const db = new Database(file, { readonly: true });
    try {
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      expect(db.query("SELECT COUNT(*) AS n FROM orgs").get()).toEqual({ n: 1 });
      const copied = (
        db.query("SELECT COUNT(*) AS n FROM users WHERE email LIKE 'bulk%'").get() as { n: number }
      ).n;
      expect(copied).toBeGreaterThan(0);
      expect(copied).toBeLessThanOrEqual(statuses.length);
    } finally {
      db.close();
    }
  });
});
