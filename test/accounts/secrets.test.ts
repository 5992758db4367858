/**
 * Secrets are shown once and never again: not in logs, not in list or read responses, and (for
 * credentials that only need to be verified) not in the database file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Client, signUpUser, svc, TestServer, totpNow } from "../support/harness.ts";
import { MailCatcher } from "../support/smtp.ts";

const BASE_URL = "https://svc.example.test";

type Kind = "api_key" | "ingest_token" | "invite_token" | "reset_token" | "password" | "totp_secret" | "jwt";
interface Known {
  kind: Kind;
  label: string;
  value: string;
}

let mail: MailCatcher;
let server: TestServer;
let admin: Client;
const secrets: Known[] = [];
/** Every response body of a list or read endpoint seen during the flow. */
const shown: { what: string; text: string }[] = [];

function remember(kind: Kind, label: string, value: unknown): string {
  if (typeof value !== "string" || value.length < 12)
    throw new Error(`${label}: not a secret: ${String(value)}`);
  secrets.push({ kind, label, value });
  return value;
}

async function show(client: Client, path: string): Promise<void> {
  const res = await client.get(path);
  expect(res.status).toBe(200);
  shown.push({ what: `GET ${path}`, text: res.text });
}

function linkToken(text: string, path: string): string {
  const match = new RegExp(`${BASE_URL.replaceAll(".", "\\.")}${path}\\?token=([A-Za-z0-9_-]+)`).exec(text);
  if (!match?.[1]) throw new Error(`no ${path} link in:\n${text}`);
  return match[1];
}

function leaks(haystack: string | Buffer, kinds?: Kind[]): string[] {
  return secrets
    .filter((s) => !kinds || kinds.includes(s.kind))
    .filter((s) => haystack.includes(s.value))
    .map((s) => `${s.kind} ${s.label}`);
}

beforeAll(async () => {
  mail = await MailCatcher.start();
  server = await TestServer.start({ env: mail.env, args: ["--base-url", BASE_URL] });
  admin = server.client();
  const init = server.init;
  if (!init) throw new Error("no init");
  remember("api_key", "initial admin key", init.api_key.secret);
  remember("ingest_token", "initial ingest token", init.ingest_token.token);

  // API keys, one of them created with an Idempotency-Key and replayed.
  const created = await admin.post(
    "/api/v1/api-keys",
    { name: "idempotent", scopes: ["admin"] },
    { "idempotency-key": "create-key-1" },
  );
  expect(created.status).toBe(201);
  remember("api_key", "idempotent key", created.body.secret);
  const replay = await admin.post(
    "/api/v1/api-keys",
    { name: "idempotent", scopes: ["admin"] },
    { "idempotency-key": "create-key-1" },
  );
  expect(replay.status).toBe(201);
  expect(replay.body.id).toBe(created.body.id);
  shown.push({ what: "replayed key create", text: replay.text });

  const service = await admin.post("/api/v1/api-keys", { name: "robot", scopes: ["admin"], service: true });
  const serviceKey = remember("api_key", "service key", service.body.secret);
  const cliKey = await server.admin([
    "key",
    "create",
    "--org",
    server.orgSlug,
    "--name",
    "cli",
    "--scopes",
    "alerts",
    "--service",
  ]);
  remember("api_key", "cli key", cliKey.secret);
  const revoked = await admin.post("/api/v1/api-keys", { name: "revoked", scopes: ["admin"] });
  const revokedKey = remember("api_key", "revoked key", revoked.body.secret);
  expect((await admin.delete(`/api/v1/api-keys/${revoked.body.id}`)).status).toBe(204);
  expect((await server.client(revokedKey).get("/api/v1/org")).status).toBe(401);

  // Ingest tokens, one with an Idempotency-Key and replayed.
  const token = await admin.post("/api/v1/org/ingest-tokens", { name: "ci" }, { "idempotency-key": "tok-1" });
  expect(token.status).toBe(201);
  remember("ingest_token", "created ingest token", token.body.token);
  const tokenReplay = await admin.post(
    "/api/v1/org/ingest-tokens",
    { name: "ci" },
    { "idempotency-key": "tok-1" },
  );
  expect(tokenReplay.status).toBe(201);
  shown.push({ what: "replayed ingest token create", text: tokenReplay.text });

  // Sign-up through the emailed invite link.
  const invited = await admin.post("/api/v1/users", { email: "mailed@acme.test", role: "admin" });
  expect(invited.status).toBe(201);
  const inviteMail = await mail.waitFor((m) => m.to.includes("mailed@acme.test"));
  const inviteToken = remember(
    "invite_token",
    "emailed invite",
    linkToken(inviteMail.text, "/accept-invite"),
  );
  const password = remember("password", "mailed password", "first secret passphrase 1");
  const accepted = await admin.as().post("/api/v1/auth/accept-invite", { token: inviteToken, password });
  expect(accepted.status).toBe(200);
  const totpSecret = remember("totp_secret", "mailed totp", accepted.body.totp_secret);
  const confirmed = await admin
    .as()
    .post("/api/v1/auth/confirm-mfa", { token: inviteToken, totp: totpNow(totpSecret) });
  expect(confirmed.status).toBe(200);
  remember("jwt", "confirm-mfa session", confirmed.body.token);

  // A failed login with a wrong password that must not be logged either.
  const wrongPassword = remember("password", "wrong password", "wrong secret passphrase 9");
  const failed = await admin.as().post("/api/v1/auth/login", {
    email: "mailed@acme.test",
    password: wrongPassword,
    totp: totpNow(totpSecret),
  });
  expect(failed.status).toBe(401);

  const session = await admin
    .as()
    .post("/api/v1/auth/login", { email: "mailed@acme.test", password, totp: totpNow(totpSecret) });
  expect(session.status).toBe(200);
  const adminJwt = remember("jwt", "login session", session.body.token);

  // Sign-up through the CLI invite link (which replaces the emailed one).
  const cliUser = await signUpUser(server, "cli-user@acme.test", "member", "second secret passphrase 2");
  remember("password", "cli user password", cliUser.password);
  remember("totp_secret", "cli user totp", cliUser.totpSecret);
  remember("jwt", "cli user session", cliUser.token);
  // signUpUser's invite token: take a fresh one for another user to have it on record.
  const third = await admin.post("/api/v1/users", { email: "never-accepted@acme.test", role: "viewer" });
  expect(third.status).toBe(201);
  const link = await server.admin([
    "user",
    "invite-link",
    "--org",
    server.orgSlug,
    "--email",
    "never-accepted@acme.test",
  ]);
  remember("invite_token", "cli invite link", link.invite_token);

  // Admin JWTs.
  const minted = await server
    .client(serviceKey)
    .post("/api/v1/auth/token", {}, { "idempotency-key": "jwt-1" });
  expect(minted.status).toBe(201);
  remember("jwt", "service key jwt", minted.body.token);
  const cliJwt = await server.admin(["token", "--org", server.orgSlug, "--user", "mailed@acme.test"]);
  remember("jwt", "cli admin jwt", cliJwt.token);
  expect((await server.client(cliJwt.token).get("/api/v1/users")).status).toBe(200);

  // Password reset through the emailed link.
  expect((await server.client(adminJwt).post(`/api/v1/users/${invited.body.id}/reset-password`)).status).toBe(
    202,
  );
  const resetMail = await mail.waitFor((m) => m.to.includes("mailed@acme.test") && /Reset/.test(m.subject));
  const resetToken = remember("reset_token", "emailed reset", linkToken(resetMail.text, "/reset-password"));
  const newPassword = remember("password", "new password", "third secret passphrase 3");
  const reset = await admin
    .as()
    .post("/api/v1/auth/reset-password", { token: resetToken, password: newPassword });
  expect(reset.status).toBe(204);
  const after = await admin.as().post("/api/v1/auth/login", {
    email: "mailed@acme.test",
    password: newPassword,
    totp: totpNow(totpSecret),
  });
  expect(after.status).toBe(200);
  const sessionAfterReset = remember("jwt", "session after reset", after.body.token);
  expect((await server.client(adminJwt).get("/api/v1/org")).status).toBe(401);

  // Credentials sent where they do not belong: in a query string and to an unknown path.
  const inQuery = await admin.get(`/api/v1/org?token=${encodeURIComponent(inviteToken)}`);
  expect(inQuery.status).toBe(400);
  const unmatched = await admin.as().get(`/no-such-page?token=${resetToken}`);
  expect(unmatched.status).toBe(404);
  const signupPage = await admin.as().get(`/accept-invite?token=${resetToken}`);
  expect(signupPage.status).toBeLessThan(500);

  // Everything an operator or client can read back.
  const jwtClient = server.client(sessionAfterReset);
  for (const client of [admin, jwtClient]) {
    for (const path of [
      "/api/v1/org",
      "/api/v1/org/settings",
      "/api/v1/org/ingest-tokens?limit=200",
      "/api/v1/users?limit=200",
      "/api/v1/api-keys?limit=200",
      "/api/v1/teams",
    ]) {
      await show(client, path);
    }
  }
  const users = await admin.get("/api/v1/users?limit=200");
  for (const user of users.body.data) await show(admin, `/api/v1/users/${user.id}`);
  const keys = await admin.get("/api/v1/api-keys?limit=200");
  for (const key of keys.body.data) await show(admin, `/api/v1/api-keys/${key.id}`);
  await show(admin, "/metrics");
  await show(admin, "/api/v1/openapi.json");
  for (const args of [
    ["key", "list"],
    ["user", "list"],
    ["org", "list"],
    ["org", "show"],
  ]) {
    const extra = args[1] === "list" && args[0] === "org" ? [] : ["--org", server.orgSlug];
    const out = await svc(["admin", ...args, ...extra, "--data-dir", server.dataDir, "--json"]);
    expect(out.code).toBe(0);
    shown.push({ what: `svc admin ${args.join(" ")}`, text: out.stdout + out.stderr });
  }

  // Let the outbox drain (bodies are cleared once sent), then stop cleanly.
  await Bun.sleep(2500);
  expect(await server.stop()).toBe(0);
  const deadline = Date.now() + 5000;
  while (!server.output.includes('"msg":"stopped"') && Date.now() < deadline) await Bun.sleep(20);
}, 60_000);

afterAll(async () => {
  await server.dispose();
  await mail.close();
});

describe("secrets stay secret", () => {
  test("the flow produced every kind of secret", () => {
    const kinds: string[] = [...new Set(secrets.map((s) => s.kind))];
    const all: string[] = [
      "api_key",
      "ingest_token",
      "invite_token",
      "jwt",
      "password",
      "reset_token",
      "totp_secret",
    ];
    expect(kinds.sort()).toEqual(all);
    expect(secrets.length).toBeGreaterThanOrEqual(20);
    expect(server.output).toContain('"msg":"stopped"');
  });

  test("the server's output names no secret", () => {
    expect(server.output).toContain('"msg":"request"');
    expect(server.output).toContain('"msg":"email sent"');
    expect(leaks(server.output)).toEqual([]);
    // Query-string credentials are redacted, not dropped from the log.
    expect(server.output).toContain("token=%5Bredacted%5D");
  });

  test("no list, read, replay or CLI listing shows a secret", () => {
    expect(shown.length).toBeGreaterThan(20);
    for (const { what, text } of shown) {
      expect({ what, leaks: leaks(text) }).toEqual({ what, leaks: [] });
      if (what.includes("openapi")) continue;
      expect({ what, hash: /\$argon2|secret_hash|token_hash|password_hash|totp_secret/.test(text) }).toEqual({
        what,
        hash: false,
      });
    }
  });

  test("the database file holds no API key secret, ingest token, password or JWT in clear", async () => {
    const files = ["svc.db", "svc.db-wal", "svc.db-shm"]
      .map((f) => join(server.dataDir, f))
      .filter(existsSync);
    expect(files.length).toBeGreaterThan(0);
    expect(statSync(join(server.dataDir, "svc.db")).size).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = Buffer.from(await Bun.file(file).arrayBuffer());
      expect({ file, leaks: leaks(bytes, ["api_key", "ingest_token", "password", "jwt"]) }).toEqual({
        file,
        leaks: [],
      });
    }
  });
});

describe("first start on an empty database", () => {
  test("off a TTY the log shows the initial key's prefix and file, never the secret", async () => {
    const fresh = await TestServer.start({ init: false });
    try {
      const file = join(fresh.dataDir, "initial-admin-key");
      const secret = readFileSync(file, "utf8").trim();
      expect(secret).toMatch(/^svc_[0-9A-Za-z]{40}$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const res = await fresh.client(secret).get("/api/v1/org");
      expect(res.status).toBe(200);
      expect(res.body.slug).toBe("default");
      const deadline = Date.now() + 2000;
      while (!fresh.output.includes("first start") && Date.now() < deadline) await Bun.sleep(20);
      expect(fresh.output).toContain(secret.slice(0, 12));
      expect(fresh.output).toContain(file);
      expect(fresh.output).not.toContain(secret);
    } finally {
      await fresh.dispose();
    }
  }, 20_000);
});
