import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer, totpNow } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await TestServer.start();
});
afterAll(() => server.dispose());

function postForm(path: string, fields: Record<string, string>) {
  return fetch(`${server.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
}

describe("sign-up pages behind the invite link", () => {
  test("an invited owner finishes sign-up with plain HTML forms, then logs in through the API", async () => {
    const link = await server.admin([
      "user",
      "invite-link",
      "--org",
      server.orgSlug,
      "--email",
      "owner@acme.test",
    ]);
    expect(link.invite_url).toEndWith(`/accept-invite?token=${link.invite_token}`);

    const form = await fetch(`${server.base}/accept-invite?token=${link.invite_token}`);
    expect(form.status).toBe(200);
    const formHtml = await form.text();
    expect(formHtml).toContain('name="password"');
    expect(formHtml).not.toContain("<script");

    const short = await postForm("/accept-invite", { token: link.invite_token, password: "short" });
    expect(short.status).toBe(400);
    expect(await short.text()).toContain("password must be 12 to 256 characters");

    const enrol = await postForm("/accept-invite", {
      token: link.invite_token,
      password: "a long enough password",
    });
    expect(enrol.status).toBe(200);
    const secret = /Secret: <code>([A-Z2-7]+)<\/code>/.exec(await enrol.text())?.[1];
    expect(secret).toBeDefined();

    const wrong = await postForm("/accept-invite/confirm", { token: link.invite_token, totp: "000000" });
    expect(wrong.status).toBe(400);

    const done = await postForm("/accept-invite/confirm", {
      token: link.invite_token,
      totp: totpNow(secret as string),
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("Your account is ready");

    const login = await server
      .client()
      .as()
      .post("/api/v1/auth/login", {
        email: "owner@acme.test",
        password: "a long enough password",
        totp: totpNow(secret as string),
      });
    expect(login.status).toBe(200);
    const me = await server.client(login.body.token).get("/api/v1/users?status=active");
    expect(me.body.data.map((u: { email: string }) => u.email)).toEqual(["owner@acme.test"]);
  });

  test("a used or unknown invite token shows the form again with the problem", async () => {
    const res = await postForm("/accept-invite", {
      token: "not-a-token",
      password: "a long enough password",
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("not a valid invite");
  });
});
