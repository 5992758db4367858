/**
 * The pages behind invite and password-reset links: plain server-rendered HTML forms that
 * work without JavaScript and call the same AuthService as the JSON API.
 */
import type { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { escapeHtml } from "../html.ts";
import type { AuthService } from "./auth.service.ts";

const HTML_TYPE = "text/html; charset=utf-8";

function page(title: string, body: string, status = 200): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)} · svc</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
label{display:block;margin:1rem 0 .25rem}input{font-size:1rem;padding:.5rem;width:100%;box-sizing:border-box}
button{margin-top:1rem;font-size:1rem;padding:.5rem 1rem}code{word-break:break-all;background:#f3f3f3;padding:.1rem .3rem}
.error{color:#a00}</style></head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
  return new Response(html, {
    status,
    headers: { "content-type": HTML_TYPE, "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}

function passwordForm(action: string, token: string, error?: string): string {
  return `${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<form method="post" action="${action}">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label for="password">Password (at least 12 characters)</label>
<input id="password" name="password" type="password" minlength="12" maxlength="256" required autocomplete="new-password">
<button type="submit">Continue</button></form>`;
}

function totpForm(token: string, secret: string, otpauthUrl: string, error?: string): string {
  return `${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<p>Add this account to your authenticator app, then enter the 6-digit code it shows.</p>
<p>Secret: <code>${escapeHtml(secret)}</code></p>
<p>Or open: <code>${escapeHtml(otpauthUrl)}</code></p>
<form method="post" action="/accept-invite/confirm">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<input type="hidden" name="secret" value="${escapeHtml(secret)}">
<input type="hidden" name="otpauth_url" value="${escapeHtml(otpauthUrl)}">
<label for="totp">Code</label>
<input id="totp" name="totp" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" required autocomplete="one-time-code">
<button type="submit">Finish sign-up</button></form>`;
}

async function form(request: Request): Promise<URLSearchParams> {
  return new URLSearchParams(await request.text());
}

function problem(error: unknown): string {
  if (error instanceof AppError) {
    const fields = (error.details?.fields as { path: string; problem: string }[] | undefined) ?? [];
    return fields.length ? fields.map((f) => `${f.path} ${f.problem}`).join("; ") : error.message;
  }
  throw error;
}

export function signupPages(app: Elysia, auth: AuthService): void {
  app.get("/accept-invite", ({ request }) => {
    const token = new URL(request.url).searchParams.get("token") ?? "";
    return page(
      "Join svc",
      `<p>Choose a password for your account.</p>${passwordForm("/accept-invite", token)}`,
    );
  });
  app.post("/accept-invite", async ({ request }) => {
    const data = await form(request);
    const token = data.get("token") ?? "";
    try {
      const enrolment = await auth.acceptInvite({ token, password: data.get("password") ?? "" });
      return page(
        "Set up two-factor authentication",
        totpForm(token, enrolment.totp_secret, enrolment.otpauth_url),
      );
    } catch (error) {
      return page("Join svc", passwordForm("/accept-invite", token, problem(error)), 400);
    }
  });
  app.post("/accept-invite/confirm", async ({ request }) => {
    const data = await form(request);
    const token = data.get("token") ?? "";
    try {
      await auth.confirmMfa({ token, totp: data.get("totp") ?? "" });
      return page(
        "You are signed up",
        "<p>Your account is ready. Log in with your email, password and a code.</p>",
      );
    } catch (error) {
      const body = totpForm(token, data.get("secret") ?? "", data.get("otpauth_url") ?? "", problem(error));
      return page("Set up two-factor authentication", body, 400);
    }
  });
  app.get("/reset-password", ({ request }) => {
    const token = new URL(request.url).searchParams.get("token") ?? "";
    return page("Choose a new password", passwordForm("/reset-password", token));
  });
  app.post("/reset-password", async ({ request }) => {
    const data = await form(request);
    const token = data.get("token") ?? "";
    try {
      await auth.completeReset({ token, password: data.get("password") ?? "" });
      return page("Password changed", "<p>Your password is changed and your other sessions have ended.</p>");
    } catch (error) {
      return page("Choose a new password", passwordForm("/reset-password", token, problem(error)), 400);
    }
  });
}
