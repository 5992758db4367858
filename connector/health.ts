/**
 * `--health-listen host:port`: `/healthz` (the process runs), `/readyz` (the first source config
 * was read and neither the sink nor svc refuses the connector's credentials) and `/metrics`.
 */
import type { Server } from "bun";

export interface HealthProbe {
  ready(): { ready: boolean; reasons: string[] };
  metrics(): string;
}

export function startHealthServer(
  listen: { hostname: string; port: number },
  probe: HealthProbe,
): Server<undefined> {
  return Bun.serve({
    hostname: listen.hostname,
    port: listen.port,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (request.method !== "GET" && request.method !== "HEAD") {
        return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
      }
      if (path === "/healthz") return Response.json({ status: "ok" });
      if (path === "/readyz") {
        const state = probe.ready();
        return Response.json(
          state.ready ? { status: "ready" } : { status: "not_ready", reasons: state.reasons },
          { status: state.ready ? 200 : 503 },
        );
      }
      if (path === "/metrics") {
        return new Response(probe.metrics(), {
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
        });
      }
      return new Response("not found\n", { status: 404 });
    },
  });
}
