/** The text and HTML of the emails svc sends about accounts. */
import { escapeHtml } from "../html.ts";
import type { Email } from "./outbox.ts";

function message(
  orgId: string,
  to: string,
  subject: string,
  lines: string[],
  link: { url: string; label: string },
): Email {
  const text = `${lines.join("\n\n")}\n\n${link.url}\n`;
  const html = `<!doctype html><html><body style="font-family:sans-serif">${lines
    .map((l) => `<p>${escapeHtml(l)}</p>`)
    .join("")}<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p></body></html>`;
  return { orgId, to, subject, text, html };
}

export function inviteEmail(
  orgId: string,
  orgName: string,
  to: string,
  url: string,
  expiresAt: string,
): Email {
  return message(
    orgId,
    to,
    `You are invited to ${orgName} on svc`,
    [
      `You have been invited to join ${orgName} on svc.`,
      `Open the link below to choose a password and set up two-factor authentication. It works once and until ${expiresAt}.`,
    ],
    { url, label: "Accept the invitation" },
  );
}

export function resetEmail(
  orgId: string,
  orgName: string,
  to: string,
  url: string,
  expiresAt: string,
): Email {
  return message(
    orgId,
    to,
    `Reset your svc password for ${orgName}`,
    [
      `A password reset was requested for your account in ${orgName}.`,
      `Open the link below to choose a new password. It works once and until ${expiresAt}. If you did not expect this, tell your administrator.`,
    ],
    { url, label: "Choose a new password" },
  );
}
