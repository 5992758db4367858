/**
 * The doors sources come in by, authenticated by the token or key in the path alone:
 * heartbeat pings and the Alertmanager webhook receiver.
 */
import { Type as T } from "@sinclair/typebox";
import type { AlertmanagerReceiver } from "../alerts/alertmanager.ts";
import { AlertmanagerWebhook } from "../alerts/alertmanager.ts";
import type { Config } from "../config.ts";
import { errors } from "../errors.ts";
import { publicRoute, type RouteDef, readJsonLoose, reply } from "../http/route.ts";
import { Strict } from "../http/schema.ts";
import type { MonitorRuntime } from "./runtime.ts";

const Token = Strict({ token: T.String({ minLength: 1, maxLength: 100 }) });
const OK = { contentType: "text/plain; charset=utf-8", content: "OK\n" };

export function ingressRoutes(
  runtime: MonitorRuntime,
  alertmanager: AlertmanagerReceiver,
  config: Config,
): RouteDef[] {
  const ping =
    (failed: boolean) =>
    async ({ params }: { params: { token: string } }) => {
      await runtime.ping(params.token, failed);
      return { status: 200, text: OK };
    };
  return [
    ...(["GET", "POST"] as const).flatMap((method) => [
      publicRoute({
        method,
        path: "/ping/:token",
        tag: "Heartbeats",
        summary: "A heartbeat: the job ran (404 for an unknown token)",
        params: Token,
        response: { status: 200, description: "OK" },
        handler: ping(false),
      }),
      publicRoute({
        method,
        path: "/ping/:token/fail",
        tag: "Heartbeats",
        summary: "The job reports a failure: the monitor goes down at once",
        params: Token,
        response: { status: 200, description: "OK" },
        handler: ping(true),
      }),
    ]),
    publicRoute({
      method: "POST",
      path: "/api/v1/integrations/alertmanager/:key",
      tag: "Events API",
      summary: "Prometheus Alertmanager webhook receiver (version 4), by an event monitor's integration key",
      params: Strict({ key: T.String({ minLength: 1, maxLength: 100 }) }),
      requestSchema: AlertmanagerWebhook,
      response: { status: 202, schema: T.Object({ status: T.Literal("success"), alerts: T.Integer() }) },
      handler: async ({ params, request }) => {
        const body = await readJsonLoose(request, config.limits.max_request_bytes);
        if (body === undefined) {
          throw errors.validation(
            [{ path: "body", problem: "is not valid JSON" }],
            "The request body is not valid JSON.",
          );
        }
        return reply.accepted(await alertmanager.receive(params.key, body));
      },
    }),
  ];
}
