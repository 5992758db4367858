/** The words of notifications (alerts, and incident copies): a Slack line and an email. */
import type { OutboundEvent } from "../events/outbox.ts";
import { escapeHtml } from "../html.ts";
import type { Email } from "../mail/outbox.ts";

interface AlertData {
  id: string;
  summary: string;
  severity: string;
  reason: string;
  current_escalation_step: number | null;
}

interface IncidentData {
  id: string;
  title: string;
  severity: string;
  status: string;
  updates?: { body: string; public: boolean }[];
}

const VERBS: Record<string, string> = {
  "run.service.alert.fired.v1": "FIRING",
  "run.service.alert.escalated.v1": "ESCALATED",
  "run.service.alert.acknowledged.v1": "ACKNOWLEDGED",
  "run.service.alert.resolved.v1": "RESOLVED",
  "run.service.incident.created.v1": "INCIDENT",
  "run.service.incident.updated.v1": "INCIDENT UPDATE",
  "run.service.incident.resolved.v1": "INCIDENT RESOLVED",
};

interface Described {
  verb: string;
  severity: string;
  headline: string;
  /** "Alert" or "Incident": the label of the id line. */
  kind: string;
  id: string;
  url: string;
  lines: string[];
}

function describe(event: OutboundEvent, baseUrl: string): Described {
  const verb = VERBS[event.type] ?? event.type;
  if (event.type.startsWith("run.service.incident.")) {
    const incident = event.data as IncidentData;
    const latest = incident.updates?.find((u) => u.body);
    return {
      verb,
      severity: incident.severity,
      headline: incident.title,
      kind: "Incident",
      id: incident.id,
      url: `${baseUrl}/api/v1/incidents/${incident.id}`,
      lines: [`Status: ${incident.status}`, ...(latest ? [`Latest update: ${latest.body}`] : [])],
    };
  }
  const alert = event.data as AlertData;
  return {
    verb,
    severity: alert.severity,
    headline: alert.summary,
    kind: "Alert",
    id: alert.id,
    url: `${baseUrl}/api/v1/alerts/${alert.id}`,
    lines: [
      ...(alert.reason ? [`Reason: ${alert.reason}`] : []),
      ...(alert.current_escalation_step ? [`Escalation step: ${alert.current_escalation_step}`] : []),
    ],
  };
}

export function notificationText(event: OutboundEvent, baseUrl: string): string {
  const d = describe(event, baseUrl);
  return `[${d.verb}] ${d.severity}: ${d.headline} — <${d.url}|${d.id}>`;
}

export function notificationEmail(orgId: string, to: string, event: OutboundEvent, baseUrl: string): Email {
  const d = describe(event, baseUrl);
  const lines = [`${d.verb}: ${d.headline}`, `Severity: ${d.severity}`, ...d.lines, `${d.kind}: ${d.id}`];
  return {
    orgId,
    to,
    subject: `[svc] ${d.verb}: ${d.headline}`,
    text: `${lines.join("\n")}\n\n${d.url}\n`,
    html: `<!doctype html><html><body style="font-family:sans-serif">${lines
      .map((l) => `<p>${escapeHtml(l)}</p>`)
      .join("")}<p><a href="${escapeHtml(d.url)}">${escapeHtml(d.url)}</a></p></body></html>`,
  };
}
