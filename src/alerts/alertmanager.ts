/**
 * The Prometheus Alertmanager webhook receiver (payload version 4): one alert per fingerprint,
 * `firing` triggers and `resolved` reports the source up (DESIGN §6 Events API semantics).
 */
import { Type as T } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Store } from "../db/store.ts";
import { errors } from "../errors.ts";
import { findMonitorByToken } from "../monitors/monitors.repository.ts";
import type { AlertService } from "./alerts.service.ts";
import { severityOf } from "./events-api.ts";

const StringMap = T.Record(T.String(), T.String());

/** What we use of the webhook body; Alertmanager's other fields are accepted and ignored. */
export const AlertmanagerWebhook = T.Object({
  version: T.Optional(T.String()),
  status: T.Optional(T.String()),
  alerts: T.Array(
    T.Object({
      status: T.Union([T.Literal("firing"), T.Literal("resolved")]),
      labels: StringMap,
      annotations: T.Optional(StringMap),
      fingerprint: T.String({ minLength: 1, maxLength: 128 }),
      startsAt: T.Optional(T.String()),
      generatorURL: T.Optional(T.String()),
    }),
    { maxItems: 1000 },
  ),
});

const checker = TypeCompiler.Compile(AlertmanagerWebhook);

export class AlertmanagerReceiver {
  constructor(
    private readonly store: Store,
    private readonly alerts: AlertService,
  ) {}

  /** The whole webhook is one write unit: every alert in it is taken, or none (a retry is safe). */
  async receive(integrationKey: string, body: unknown): Promise<{ status: "success"; alerts: number }> {
    const now = Date.now();
    return this.store.write(async (tx) => {
      const monitor = await findMonitorByToken(tx, integrationKey);
      if (monitor?.type !== "event") throw errors.notFound("Integration");
      if (!checker.Check(body)) {
        const first = [...checker.Errors(body)][0];
        throw errors.field(
          first?.path.slice(1).replaceAll("/", ".") || "body",
          first?.message ?? "is not an Alertmanager webhook",
        );
      }
      for (const alert of body.alerts) {
        if (alert.status === "resolved") {
          await this.alerts.sourceUpIn(tx, monitor, alert.fingerprint, now);
          continue;
        }
        if (monitor.paused === 1) continue;
        const annotations = alert.annotations ?? {};
        const labelText = Object.entries(alert.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ");
        const input = {
          dedupKey: alert.fingerprint,
          summary: annotations.summary ?? alert.labels.alertname ?? "Alertmanager alert",
          reason: annotations.description ?? labelText,
          severity: severityOf(alert.labels.severity, monitor.severity),
          labels: alert.labels,
        };
        await this.alerts.triggerIn(tx, monitor, input, now);
      }
      return { status: "success" as const, alerts: body.alerts.length };
    });
  }
}
