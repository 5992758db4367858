import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Secret, TOTP } from "otpauth";
import { type Client, signUpUser, TestServer, totpNow } from "../support/harness.ts";
import { type CapturedMail, MailCatcher } from "../support/smtp.ts";

/** Tests that spawn the CLI, sign users up (argon2id) or wait for email get more than the default 5 s. */
const SLOW = 20_000;

const BASE_URL = "https://svc.example.test";
const PASSWORD = "correct horse battery";

let mail: MailCatcher;
let server: TestServer;
let admin: Client;
let anon: Client;

beforeAll(async () => {
  mail = await MailCatcher.start();
  server = await TestServer.start({ env: mail.env, args: ["--base-url", BASE_URL] });
  admin = server.client();
  anon = admin.as();
}, SLOW);
afterAll(async () => {
  await server.dispose();
  await mail.close();
});

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

function fieldPaths(body: { error: { details: { fields: { path: string }[] } } }): string[] {
  return body.error.details.fields.map((f) => f.path);
}

/** A well-formed code that is not accepted now (not the code of the previous, current or next step). */
function wrongTotp(secret: string): string {
  const totp = new TOTP({ algorithm: "SHA1", digits: 6, period: 30, secret: Secret.fromBase32(secret) });
  const now = Date.now();
  const valid = new Set([-2, -1, 0, 1, 2].map((step) => totp.generate({ timestamp: now + step * 30_000 })));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, "0");
    if (!valid.has(code)) return code;
  }
}

async function invite(email: string, role = "member"): Promise<{ id: string; email: string }> {
  const res = await admin.post("/api/v1/users", { email, role });
  expect(res.status).toBe(201);
  return res.body;
}

async function inviteLink(email: string): Promise<string> {
  const link = await server.admin(["user", "invite-link", "--org", server.orgSlug, "--email", email]);
  expect(link.invite_url).toEndWith(`/accept-invite?token=${link.invite_token}`);
  return link.invite_token;
}

function linkToken(message: CapturedMail, path: string): string {
  const match = new RegExp(`${BASE_URL.replaceAll(".", "\\.")}${path}\\?token=([A-Za-z0-9_-]+)`).exec(
    message.text,
  );
  if (!match?.[1]) throw new Error(`no ${path} link in:\n${message.text}`);
  return match[1];
}

async function login(email: string, password: string, totp: string) {
  return anon.post("/api/v1/auth/login", { email, password, totp });
}

describe("sign-up: accept-invite and confirm-mfa", () => {
  test(
    "accept-invite returns the TOTP secret; login is refused until confirm-mfa",
    async () => {
      const user = await invite("signup@acme.test");
      const token = await inviteLink(user.email);

      const accepted = await anon.post("/api/v1/auth/accept-invite", { token, password: PASSWORD });
      expect(accepted.status).toBe(200);
      expect(Object.keys(accepted.body).sort()).toEqual(["otpauth_url", "totp_secret"]);
      const secret = accepted.body.totp_secret as string;
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      const url = new URL(accepted.body.otpauth_url);
      expect(url.protocol).toBe("otpauth:");
      expect(url.host).toBe("totp");
      expect(url.searchParams.get("secret")).toBe(secret);
      expect(url.searchParams.get("issuer")).toBe("svc");
      expect(decodeURIComponent(url.pathname)).toContain("signup@acme.test");

      const early = await login(user.email, PASSWORD, totpNow(secret));
      expect(early.status).toBe(401);
      expect(early.body.error.code).toBe("unauthenticated");
      expect((await admin.get(`/api/v1/users/${user.id}`)).body).toMatchObject({
        status: "invited",
        mfa_enabled: false,
      });

      const wrong = await anon.post("/api/v1/auth/confirm-mfa", { token, totp: wrongTotp(secret) });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error.code).toBe("validation_failed");
      expect(fieldPaths(wrong.body)).toEqual(["totp"]);
      const malformed = await anon.post("/api/v1/auth/confirm-mfa", { token, totp: "12345" });
      expect(malformed.status).toBe(400);
      expect(fieldPaths(malformed.body)).toEqual(["totp"]);

      const confirmed = await anon.post("/api/v1/auth/confirm-mfa", { token, totp: totpNow(secret) });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body).toEqual({
        token: expect.stringMatching(JWT),
        expires_at: expect.stringMatching(TIMESTAMP),
      });
      expect((await server.client(confirmed.body.token).get("/api/v1/org")).status).toBe(200);

      const me = await admin.get(`/api/v1/users/${user.id}`);
      expect(me.body).toMatchObject({ status: "active", mfa_enabled: true });
      expect(me.body.last_login_at).toMatch(TIMESTAMP);

      const before = Date.now();
      const session = await login("SIGNUP@acme.test", PASSWORD, totpNow(secret));
      expect(session.status).toBe(200);
      expect(session.body).toEqual({
        token: expect.stringMatching(JWT),
        expires_at: expect.stringMatching(TIMESTAMP),
      });
      const ttl = Date.parse(session.body.expires_at) - before;
      expect(ttl).toBeGreaterThan(11 * 3600_000);
      expect(ttl).toBeLessThanOrEqual(12 * 3600_000 + 1000);
      const self = await server.client(session.body.token).get(`/api/v1/users/${user.id}`);
      expect(self.status).toBe(200);
      expect(self.body.email).toBe("signup@acme.test");
    },
    SLOW,
  );

  test(
    "wrong password, wrong TOTP and unknown email are the same 401",
    async () => {
      const user = await signUpUser(server, "wrong@acme.test", "member", PASSWORD);
      const attempts = [
        await login(user.user.email, "not the password at all", totpNow(user.totpSecret)),
        await login(user.user.email, PASSWORD, wrongTotp(user.totpSecret)),
        await login("nobody@acme.test", PASSWORD, totpNow(user.totpSecret)),
      ];
      for (const res of attempts) {
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("unauthenticated");
      }
      expect(new Set(attempts.map((r) => r.text)).size).toBe(1);
      expect((await login(user.user.email, PASSWORD, totpNow(user.totpSecret))).status).toBe(200);
    },
    SLOW,
  );

  test(
    "a password shorter than 12 characters is 400 naming password",
    async () => {
      const user = await invite("short@acme.test");
      const token = await inviteLink(user.email);
      const res = await anon.post("/api/v1/auth/accept-invite", { token, password: "elevenchars" });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(fieldPaths(res.body)).toEqual(["password"]);
      // The invite still works with a good password.
      expect(
        (await anon.post("/api/v1/auth/accept-invite", { token, password: "twelve chars" })).status,
      ).toBe(200);
    },
    SLOW,
  );

  test(
    "confirm-mfa before accept-invite is refused",
    async () => {
      const user = await invite("confirm-first@acme.test");
      const token = await inviteLink(user.email);
      const res = await anon.post("/api/v1/auth/confirm-mfa", { token, totp: "123456" });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("conflict");
    },
    SLOW,
  );

  test(
    "an invite token cannot be used again after sign-up",
    async () => {
      const user = await invite("reuse@acme.test");
      const token = await inviteLink(user.email);
      const accepted = await anon.post("/api/v1/auth/accept-invite", { token, password: PASSWORD });
      const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
        token,
        totp: totpNow(accepted.body.totp_secret),
      });
      expect(confirmed.status).toBe(200);

      const again = await anon.post("/api/v1/auth/accept-invite", { token, password: "another password" });
      expect(again.status).toBe(400);
      expect(again.body.error.code).toBe("validation_failed");
      expect(fieldPaths(again.body)).toEqual(["token"]);
      const confirmAgain = await anon.post("/api/v1/auth/confirm-mfa", {
        token,
        totp: totpNow(accepted.body.totp_secret),
      });
      expect(confirmAgain.status).toBe(400);
      expect(fieldPaths(confirmAgain.body)).toEqual(["token"]);
      // The password was not changed by the refused attempt.
      expect((await login(user.email, PASSWORD, totpNow(accepted.body.totp_secret))).status).toBe(200);
    },
    SLOW,
  );

  test(
    "a fresh `svc admin user invite-link` invalidates the previous token",
    async () => {
      const user = await invite("relink@acme.test");
      const first = await inviteLink(user.email);
      const second = await inviteLink(user.email);
      expect(second).not.toBe(first);
      const stale = await anon.post("/api/v1/auth/accept-invite", { token: first, password: PASSWORD });
      expect(stale.status).toBe(400);
      expect(fieldPaths(stale.body)).toEqual(["token"]);
      const fresh = await anon.post("/api/v1/auth/accept-invite", { token: second, password: PASSWORD });
      expect(fresh.status).toBe(200);
    },
    SLOW,
  );

  test("an unknown token is 400", async () => {
    const res = await anon.post("/api/v1/auth/accept-invite", { token: "x".repeat(43), password: PASSWORD });
    expect(res.status).toBe(400);
    expect(fieldPaths(res.body)).toEqual(["token"]);
  });
});

describe("login", () => {
  test(
    "an email in two organizations: the code picks the account, or `org` names it",
    async () => {
      const email = "two-orgs@acme.test";
      const here = await signUpUser(server, email, "member", PASSWORD);
      const slug = `second-${Math.random().toString(36).slice(2, 8)}`;
      const other = await server.admin([
        "org",
        "create",
        "--name",
        "Second",
        "--slug",
        slug,
        "--owner-email",
        "o@second.test",
      ]);
      const invited = await server
        .client(other.api_key.secret)
        .post("/api/v1/users", { email, role: "viewer" });
      expect(invited.status).toBe(201);
      const link = await server.admin(["user", "invite-link", "--org", slug, "--email", email]);
      const accepted = await anon.post("/api/v1/auth/accept-invite", {
        token: link.invite_token,
        password: PASSWORD,
      });
      const secondTotp = accepted.body.totp_secret as string;
      expect(
        (await anon.post("/api/v1/auth/confirm-mfa", { token: link.invite_token, totp: totpNow(secondTotp) }))
          .status,
      ).toBe(200);

      // Each account has its own authenticator: the code that matches says which one logs in.
      const byCode = await login(email, PASSWORD, totpNow(here.totpSecret));
      expect(byCode.status).toBe(200);
      expect((await server.client(byCode.body.token).get("/api/v1/org")).body.slug).toBe(server.orgSlug);
      const byOtherCode = await login(email, PASSWORD, totpNow(secondTotp));
      expect(byOtherCode.status).toBe(200);
      expect((await server.client(byOtherCode.body.token).get("/api/v1/org")).body.slug).toBe(slug);

      const ours = await anon.post("/api/v1/auth/login", {
        email,
        password: PASSWORD,
        totp: totpNow(here.totpSecret),
        org: server.orgSlug,
      });
      expect(ours.status).toBe(200);
      const me = await server.client(ours.body.token).get("/api/v1/org");
      expect(me.body.slug).toBe(server.orgSlug);

      const theirs = await anon.post("/api/v1/auth/login", {
        email,
        password: PASSWORD,
        totp: totpNow(secondTotp),
        org: slug,
      });
      expect(theirs.status).toBe(200);
      expect((await server.client(theirs.body.token).get("/api/v1/org")).body.slug).toBe(slug);

      // A wrong code for the chosen org is an ordinary failed login.
      const crossed = await anon.post("/api/v1/auth/login", {
        email,
        password: PASSWORD,
        totp: wrongTotp(secondTotp),
        org: slug,
      });
      expect(crossed.status).toBe(401);
      expect(crossed.body.error.code).toBe("unauthenticated");
    },
    SLOW,
  );

  test(
    "repeated failures are rate limited with 429 and Retry-After, even for the right credentials",
    async () => {
      const user = await signUpUser(server, "hammered@acme.test", "member", PASSWORD);
      for (let i = 0; i < 10; i++) {
        const res = await login(user.user.email, `wrong password ${i}!`, totpNow(user.totpSecret));
        expect(res.status).toBe(401);
      }
      const limited = await login(user.user.email, PASSWORD, totpNow(user.totpSecret));
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe("rate_limited");
      const retryAfter = Number(limited.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      // Other users are not affected.
      const other = await signUpUser(server, "bystander@acme.test", "member", PASSWORD);
      expect((await login(other.user.email, PASSWORD, totpNow(other.totpSecret))).status).toBe(200);
    },
    SLOW,
  );
});

describe("emails through SMTP", () => {
  test(
    "POST /users sends an invite email whose accept-invite link signs the user up",
    async () => {
      const user = await invite("emailed@acme.test");
      const message = await mail.waitFor((m) => m.to.includes("emailed@acme.test"));
      expect(message.subject).toBe("You are invited to Acme on svc");
      expect(message.from).toBe("svc@localhost");
      const token = linkToken(message, "/accept-invite");
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(message.html).toContain(`${BASE_URL}/accept-invite?token=${token}`);

      const accepted = await anon.post("/api/v1/auth/accept-invite", { token, password: PASSWORD });
      expect(accepted.status).toBe(200);
      const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
        token,
        totp: totpNow(accepted.body.totp_secret),
      });
      expect(confirmed.status).toBe(200);
      expect((await admin.get(`/api/v1/users/${user.id}`)).body.status).toBe("active");
    },
    SLOW,
  );

  test(
    "password reset: email link, new password, old sessions end, token single-use",
    async () => {
      const user = await signUpUser(server, "forgetful@acme.test", "member", PASSWORD);
      const oldSession = server.client(user.token);
      expect((await oldSession.get("/api/v1/org")).status).toBe(200);

      const requested = await admin.post(`/api/v1/users/${user.user.id}/reset-password`);
      expect(requested.status).toBe(202);
      expect(requested.body).toEqual({ status: "accepted" });

      const message = await mail.waitFor(
        (m) => m.to.includes("forgetful@acme.test") && /Reset/.test(m.subject),
      );
      expect(message.subject).toBe("Reset your svc password for Acme");
      const token = linkToken(message, "/reset-password");
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

      const short = await anon.post("/api/v1/auth/reset-password", { token, password: "too short" });
      expect(short.status).toBe(400);
      expect(fieldPaths(short.body)).toEqual(["password"]);

      const newPassword = "a brand new passphrase";
      const done = await anon.post("/api/v1/auth/reset-password", { token, password: newPassword });
      expect(done.status).toBe(204);
      expect(done.text).toBe("");

      const refused = await oldSession.get("/api/v1/org");
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe("unauthenticated");

      expect((await login(user.user.email, PASSWORD, totpNow(user.totpSecret))).status).toBe(401);
      const fresh = await login(user.user.email, newPassword, totpNow(user.totpSecret));
      expect(fresh.status).toBe(200);
      expect((await server.client(fresh.body.token).get("/api/v1/org")).status).toBe(200);

      const reused = await anon.post("/api/v1/auth/reset-password", {
        token,
        password: "yet another passphrase",
      });
      expect(reused.status).toBe(400);
      expect(reused.body.error.code).toBe("validation_failed");
      expect(fieldPaths(reused.body)).toEqual(["token"]);
      expect((await login(user.user.email, newPassword, totpNow(user.totpSecret))).status).toBe(200);
    },
    SLOW,
  );

  test(
    "a second reset request replaces the first link",
    async () => {
      const user = await signUpUser(server, "twice-reset@acme.test", "viewer", PASSWORD);
      expect((await admin.post(`/api/v1/users/${user.user.id}/reset-password`)).status).toBe(202);
      const first = linkToken(
        await mail.waitFor((m) => m.to.includes(user.user.email) && /Reset/.test(m.subject)),
        "/reset-password",
      );
      expect((await admin.post(`/api/v1/users/${user.user.id}/reset-password`)).status).toBe(202);
      const second = linkToken(
        await mail.waitFor(
          (m) => m.to.includes(user.user.email) && /Reset/.test(m.subject) && !m.text.includes(first),
        ),
        "/reset-password",
      );
      const stale = await anon.post("/api/v1/auth/reset-password", {
        token: first,
        password: "replacement passphrase",
      });
      expect(stale.status).toBe(400);
      expect(
        (
          await anon.post("/api/v1/auth/reset-password", {
            token: second,
            password: "replacement passphrase",
          })
        ).status,
      ).toBe(204);
    },
    SLOW,
  );
});

describe("admin JWTs", () => {
  test("POST /auth/token with a service admin-scope key returns 201 {token} usable as a bearer", async () => {
    const key = await admin.post("/api/v1/api-keys", {
      name: "automation",
      scopes: ["admin"],
      service: true,
    });
    expect(key.status).toBe(201);
    const before = Date.now();
    const res = await server.client(key.body.secret).post("/api/v1/auth/token", { ttl_seconds: 120 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      token: expect.stringMatching(JWT),
      expires_at: expect.stringMatching(TIMESTAMP),
    });
    const ttl = Date.parse(res.body.expires_at) - before;
    expect(ttl).toBeGreaterThan(118_000);
    expect(ttl).toBeLessThanOrEqual(121_000);

    const jwt = server.client(res.body.token);
    expect((await jwt.get("/api/v1/org")).status).toBe(200);
    expect((await jwt.get("/api/v1/users")).status).toBe(200);

    // Default lifetime: 15 minutes.
    const defaulted = await server.client(key.body.secret).post("/api/v1/auth/token");
    expect(defaulted.status).toBe(201);
    const defaultTtl = Date.parse(defaulted.body.expires_at) - Date.now();
    expect(defaultTtl).toBeGreaterThan(14 * 60_000);
    expect(defaultTtl).toBeLessThanOrEqual(15 * 60_000);

    // The token dies with its key.
    expect((await admin.delete(`/api/v1/api-keys/${key.body.id}`)).status).toBe(204);
    const dead = await jwt.get("/api/v1/org");
    expect(dead.status).toBe(401);
    expect(dead.body.error.code).toBe("unauthenticated");
  });

  test(
    "an active admin's admin-scope key mints a session for that admin",
    async () => {
      const adminUser = await signUpUser(server, "second-admin@acme.test", "admin");
      const key = await server
        .client(adminUser.token)
        .post("/api/v1/api-keys", { name: "mine", scopes: ["admin"] });
      expect(key.status).toBe(201);
      const res = await server.client(key.body.secret).post("/api/v1/auth/token", {});
      expect(res.status).toBe(201);
      const jwt = server.client(res.body.token);
      expect((await jwt.get(`/api/v1/users/${adminUser.user.id}`)).status).toBe(200);
      // Suspending the admin ends the minted token.
      expect((await admin.patch(`/api/v1/users/${adminUser.user.id}`, { status: "suspended" })).status).toBe(
        200,
      );
      expect((await jwt.get("/api/v1/org")).status).toBe(401);
    },
    SLOW,
  );

  test(
    "a key without the admin scope is 403; a member's admin-scope key is 403 forbidden_role",
    async () => {
      const scoped = await admin.post("/api/v1/api-keys", {
        name: "alerts only",
        scopes: ["alerts", "events"],
        service: true,
      });
      const res = await server.client(scoped.body.secret).post("/api/v1/auth/token", {});
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("insufficient_scope");

      const member = await signUpUser(server, "jwt-member@acme.test", "member");
      const memberKey = await server
        .client(member.token)
        .post("/api/v1/api-keys", { name: "m", scopes: ["admin"] });
      expect(memberKey.status).toBe(201);
      const forbidden = await server.client(memberKey.body.secret).post("/api/v1/auth/token", {});
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error.code).toBe("forbidden_role");
    },
    SLOW,
  );

  test("ttl_seconds out of range is 400", async () => {
    const key = await admin.post("/api/v1/api-keys", { name: "ttl", scopes: ["admin"], service: true });
    for (const ttl of [30, 86_401]) {
      const res = await server.client(key.body.secret).post("/api/v1/auth/token", { ttl_seconds: ttl });
      expect(res.status).toBe(400);
      expect(fieldPaths(res.body)).toEqual(["ttl_seconds"]);
    }
  });

  test(
    "`svc admin token` mints a JWT for an admin user",
    async () => {
      const adminUser = await signUpUser(server, "cli-admin@acme.test", "admin");
      const out = await server.admin([
        "token",
        "--org",
        server.orgSlug,
        "--user",
        adminUser.user.email,
        "--ttl",
        "5m",
      ]);
      expect(out).toEqual({
        token: expect.stringMatching(JWT),
        expires_at: expect.stringMatching(TIMESTAMP),
      });
      expect((await server.client(out.token).get("/api/v1/users")).status).toBe(200);
    },
    SLOW,
  );

  test(
    "a tampered or foreign JWT is 401",
    async () => {
      const user = await signUpUser(server, "tamper@acme.test", "member");
      const [head, payload, signature] = user.token.split(".") as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
      const forged = `${head}.${Buffer.from(JSON.stringify({ ...claims, sub: server.init?.owner.id })).toString("base64url")}.${signature}`;
      const badSignature = `${head}.${payload}.${signature.slice(0, -4)}AAAA`;
      for (const token of [forged, badSignature, `${head}.${payload}.`]) {
        const res = await server.client(token).get("/api/v1/org");
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("unauthenticated");
      }
    },
    SLOW,
  );
});
