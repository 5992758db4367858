/**
 * The Events API in PagerDuty's Events API v2 wire format (DESIGN §6): `routing_key` names an
 * event monitor by its integration key; trigger, acknowledge and resolve act on the alert with
 * the event's `dedup_key`. Errors answer in PagerDuty's own shape, since the callers are tools
 * written for it.
 */
import { type Static, Type as T } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Store } from "../db/store.ts";
import type { Severity } from "../monitors/monitor.table.ts";
import { findMonitorByToken } from "../monitors/monitors.repository.ts";
import type { AlertService } from "./alerts.service.ts";

/** Fields we use; others (images, links, client, …) are accepted and ignored. */
export const PagerDutyEvent = T.Object({
  routing_key: T.String({ minLength: 1, maxLength: 64 }),
  event_action: T.Union([T.Literal("trigger"), T.Literal("acknowledge"), T.Literal("resolve")]),
  dedup_key: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
  payload: T.Optional(
    T.Object({
      summary: T.String({ minLength: 1, maxLength: 1024 }),
      source: T.String({ minLength: 1, maxLength: 255 }),
      severity: T.Union(["critical", "error", "warning", "info"].map((s) => T.Literal(s))),
      timestamp: T.Optional(T.String()),
      component: T.Optional(T.String()),
      group: T.Optional(T.String()),
      class: T.Optional(T.String()),
      custom_details: T.Optional(T.Unknown()),
    }),
  ),
});

type PagerDutyEventBody = Static<typeof PagerDutyEvent>;

const checker = TypeCompiler.Compile(PagerDutyEvent);

export interface EventsApiAnswer {
  status: number;
  body: { status: string; message: string; dedup_key?: string; errors?: string[] };
}

function invalid(...problems: string[]): EventsApiAnswer {
  return {
    status: 400,
    body: { status: "invalid event", message: "Event object is invalid", errors: problems },
  };
}

export function severityOf(value: string | undefined, fallback: Severity): Severity {
  if (value === "critical" || value === "error") return "critical";
  if (value === "warning") return "warning";
  if (value === "info") return "info";
  return fallback;
}

function accepted(dedupKey: string): EventsApiAnswer {
  return { status: 202, body: { status: "success", message: "Event processed", dedup_key: dedupKey } };
}

export class EventsApi {
  constructor(
    private readonly store: Store,
    private readonly alerts: AlertService,
  ) {}

  /** Handles one parsed body (or null when it was not JSON). */
  async handle(body: unknown): Promise<EventsApiAnswer> {
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      return invalid("The request body must be a JSON object.");
    }
    if (!checker.Check(body)) {
      return invalid(
        ...[...checker.Errors(body)].map(
          (e) => `${e.path.slice(1).replaceAll("/", ".") || "body"}: ${e.message}`,
        ),
      );
    }
    const event = body as PagerDutyEventBody;
    const now = Date.now();
    // One write unit, the monitor looked up inside it: the writer's pages are warm, where a
    // read on the reader connection starts cold after every commit of a busy writer.
    return this.store.write(async (tx) => {
      const monitor = await findMonitorByToken(tx, event.routing_key);
      if (monitor?.type !== "event")
        return invalid("routing_key: does not name an event monitor's integration key");
      if (event.event_action === "trigger") {
        const { payload } = event;
        if (!payload) return invalid("payload: is required for a trigger");
        const dedupKey = event.dedup_key ?? crypto.randomUUID().replaceAll("-", "");
        if (monitor.paused === 0) {
          const labels: Record<string, string> = { source: payload.source };
          for (const key of ["component", "group", "class"] as const) {
            const value = payload[key];
            if (value) labels[key] = value;
          }
          const input = {
            dedupKey,
            summary: payload.summary,
            reason: [payload.source, payload.component].filter(Boolean).join(" / "),
            severity: severityOf(payload.severity, monitor.severity),
            labels,
          };
          await this.alerts.triggerIn(tx, monitor, input, now);
        }
        return accepted(dedupKey);
      }
      if (!event.dedup_key) return invalid(`dedup_key: is required for ${event.event_action}`);
      if (event.event_action === "resolve") await this.alerts.sourceUpIn(tx, monitor, event.dedup_key, now);
      else await this.alerts.sourceAcknowledgeIn(tx, monitor, event.dedup_key, now);
      return accepted(event.dedup_key);
    });
  }
}
