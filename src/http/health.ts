/** `/healthz` (the process answers), `/readyz` (database reachable, migrations applied), `/metrics`. */
import type { Elysia } from "elysia";
import { schemaVersion } from "../db/migrate.ts";
import { LATEST_SCHEMA_VERSION } from "../db/migrations.ts";
import { JSON_TYPE } from "./route.ts";
import type { HttpDeps } from "./server.ts";

export function healthRoutes(app: Elysia, deps: HttpDeps): void {
  app.get("/healthz", () => new Response('{"status":"ok"}', { headers: { "content-type": JSON_TYPE } }));
  app.get("/readyz", () => {
    let ready = deps.isReady();
    let reason = ready ? undefined : "starting or stopping";
    if (ready) {
      try {
        const version = schemaVersion(deps.store.reader);
        if (version !== LATEST_SCHEMA_VERSION) [ready, reason] = [false, `schema version ${version}`];
      } catch {
        [ready, reason] = [false, "database unreachable"];
      }
    }
    return new Response(JSON.stringify(ready ? { status: "ready" } : { status: "not_ready", reason }), {
      status: ready ? 200 : 503,
      headers: { "content-type": JSON_TYPE },
    });
  });
  app.get(
    "/metrics",
    async () =>
      new Response(await deps.metrics.render(), {
        headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
      }),
  );
}
