/** Concurrency and privilege edges of the accounts API: each case was a real bug once. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { signUpUser, TestServer } from "../support/harness.ts";
import { MailCatcher } from "../support/smtp.ts";

const SLOW = 30_000;
let mail: MailCatcher;
let server: TestServer;

beforeAll(async () => {
  mail = await MailCatcher.start();
  server = await TestServer.start({ env: mail.env });
}, SLOW);
afterAll(async () => {
  await server.dispose();
  await mail.close();
});

describe("accounts under concurrency and across roles", () => {
  test(
    "a reset link used by three requests at once changes the password exactly once",
    async () => {
      const user = await signUpUser(server, "reset-race@acme.test", "member");
      expect((await server.client().post(`/api/v1/users/${user.user.id}/reset-password`)).status).toBe(202);
      const message = await mail.waitFor((m) => m.to.includes(user.user.email) && /Reset/.test(m.subject));
      const token = /reset-password\?token=([A-Za-z0-9_-]+)/.exec(message.text)?.[1] as string;
      const anon = server.client().as();
      const results = await Promise.all(
        ["first new passphrase", "second new passphrase", "third new passphrase"].map((password) =>
          anon.post("/api/v1/auth/reset-password", { token, password }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([204, 400, 400]);
    },
    SLOW,
  );

  test(
    "forty wrong logins at once: ten are judged, the rest are throttled",
    async () => {
      const user = await signUpUser(server, "throttle-race@acme.test", "viewer");
      const anon = server.client().as();
      const results = await Promise.all(
        Array.from({ length: 40 }, () =>
          anon.post("/api/v1/auth/login", {
            email: user.user.email,
            password: "not the password",
            totp: "123456",
          }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    },
    SLOW,
  );

  test(
    "an admin cannot mint a key that acts as the owner",
    async () => {
      const adminUser = await signUpUser(server, "not-the-owner@acme.test", "admin");
      const asAdmin = server.client(adminUser.token);
      const res = await asAdmin.post("/api/v1/api-keys", {
        name: "owner's, supposedly",
        scopes: ["admin"],
        user_id: server.init?.owner.id,
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("forbidden_role");
      const member = await signUpUser(server, "plain-member@acme.test", "member");
      const forMember = await asAdmin.post("/api/v1/api-keys", {
        name: "for a member",
        scopes: ["schedules"],
        user_id: member.user.id,
      });
      expect(forMember.status).toBe(201);
    },
    SLOW,
  );
});
