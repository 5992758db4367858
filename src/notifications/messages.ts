/** The words of alert notifications: a Slack line and an email. */
import type { OutboundEvent } from "../events/outbox.ts";
import { escapeHtml } from "../html.ts";
import type { Email } from "../mail/outbox.ts";

interface AlertData {
  id: string;
  summary: string;
  severity: string;
  status: string;
  reason: string;
  current_escalation_step: number | null;
}

const VERBS: Record<string, string> = {
  "run.service.alert.fired.v1": "FIRING",
  "run.service.alert.escalated.v1": "ESCALATED",
  "run.service.alert.acknowledged.v1": "ACKNOWLEDGED",
  "run.service.alert.resolved.v1": "RESOLVED",
};

function alertUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/v1/alerts/${id}`;
}

export function alertText(event: OutboundEvent, baseUrl: string): string {
  const alert = event.data as AlertData;
  const verb = VERBS[event.type] ?? event.type;
  return `[${verb}] ${alert.severity}: ${alert.summary} — <${alertUrl(baseUrl, alert.id)}|${alert.id}>`;
}

export function alertEmail(orgId: string, to: string, event: OutboundEvent, baseUrl: string): Email {
  const alert = event.data as AlertData;
  const verb = VERBS[event.type] ?? event.type;
  const url = alertUrl(baseUrl, alert.id);
  const lines = [
    `${verb}: ${alert.summary}`,
    `Severity: ${alert.severity}`,
    ...(alert.reason ? [`Reason: ${alert.reason}`] : []),
    ...(alert.current_escalation_step ? [`Escalation step: ${alert.current_escalation_step}`] : []),
    `Alert: ${alert.id}`,
  ];
  return {
    orgId,
    to,
    subject: `[svc] ${verb}: ${alert.summary}`,
    text: `${lines.join("\n")}\n\n${url}\n`,
    html: `<!doctype html><html><body style="font-family:sans-serif">${lines
      .map((l) => `<p>${escapeHtml(l)}</p>`)
      .join("")}<p><a href="${escapeHtml(url)}">${escapeHtml(url)}</a></p></body></html>`,
  };
}
