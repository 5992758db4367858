/**
 * The HTTP server: every route of every module, read top to bottom in `routes()`, dispatched
 * through one function that authenticates, authorizes, validates, applies Idempotency-Key,
 * maps errors to the envelope, logs and measures.
 */
import { Elysia } from "elysia";
import { authorize } from "../accounts/access.ts";
import { authRoutes } from "../accounts/auth.routes.ts";
import { orgRoutes } from "../accounts/org.routes.ts";
import { signupPages } from "../accounts/signup.pages.ts";
import { userRoutes } from "../accounts/users.routes.ts";
import { alertRoutes } from "../alerts/alerts.routes.ts";
import { cloudEventRoutes } from "../cloudevents/cloudevents.routes.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { AppError, errorBody, errors } from "../errors.ts";
import { policyRoutes } from "../escalation/policies.routes.ts";
import { incidentRoutes } from "../incidents/incidents.routes.ts";
import { type Logger, redactPath } from "../log.ts";
import { ingressRoutes } from "../monitors/ingress.routes.ts";
import { monitorRoutes } from "../monitors/monitors.routes.ts";
import { channelRoutes } from "../notifications/channels.routes.ts";
import { scheduleRoutes } from "../schedules/schedules.routes.ts";
import type { Services } from "../services.ts";
import { publicStatusRoutes, statusPageRoutes } from "../status-pages/status-pages.routes.ts";
import { healthRoutes } from "./health.ts";
import { Idempotency } from "./idempotency.ts";
import type { Metrics } from "./metrics.ts";
import { openApiDocument } from "./openapi.ts";
import { check, checkQuery, JSON_TYPE, type Reply, type RouteDef, readBody } from "./route.ts";

export interface HttpDeps extends Services {
  config: Config;
  store: Store;
  metrics: Metrics;
  log: Logger;
  /** The public base URL (final once the server is bound). */
  baseUrl: () => string;
  /** False until start-up finished and while shutting down. */
  isReady: () => boolean;
}

export function routes(deps: HttpDeps): RouteDef[] {
  return [
    ...orgRoutes(deps.accounts),
    ...userRoutes(deps.accounts),
    ...authRoutes(deps.accounts),
    ...scheduleRoutes(deps.schedules),
    ...channelRoutes(deps.channels),
    ...policyRoutes(deps.policies),
    ...monitorRoutes(deps.monitors),
    ...alertRoutes(deps.alerts, deps.eventsApi, deps.config),
    ...ingressRoutes(deps.runtime, deps.alertmanager, deps.config),
    ...incidentRoutes(deps.incidents),
    ...statusPageRoutes(deps.statusPages),
    ...publicStatusRoutes(deps.publicPages),
    ...cloudEventRoutes(deps, deps.ingest, deps.consumers, deps.replies),
  ];
}

export function createHttpApp(deps: HttpDeps) {
  const idempotency = new Idempotency(deps.store);
  const api = routes(deps);
  // Built on first use: the base URL is known only once the server is bound (port 0).
  let document: string | null = null;
  const app = new Elysia({ normalize: false, strictPath: false });

  for (const def of api) {
    app.route(def.method, def.path, ({ request, params }) =>
      dispatch(def, request, params, deps, idempotency),
    );
  }
  healthRoutes(app, deps);
  signupPages(app, deps.accounts.auth);
  app.get("/api/v1/openapi.json", () => {
    document ??= JSON.stringify(openApiDocument(api, deps.baseUrl()));
    return new Response(document, { headers: { "content-type": JSON_TYPE } });
  });
  app.onError(({ code, request }) => {
    const status = code === "NOT_FOUND" ? 404 : code === "PARSE" ? 400 : 500;
    const response =
      status === 404
        ? errorResponse(new AppError("not_found", "There is no such endpoint."))
        : status === 400
          ? errorResponse(new AppError("validation_failed", "The request could not be read."))
          : internalError();
    logRequest(deps, request, response.status, 0, "unmatched");
    return response;
  });
  return app;
}

async function dispatch(
  def: RouteDef,
  request: Request,
  rawParams: Record<string, string>,
  deps: HttpDeps,
  idempotency: Idempotency,
): Promise<Response> {
  const started = performance.now();
  let response: Response;
  try {
    const principal =
      def.access === "public"
        ? null
        : await deps.accounts.auth.authenticate(request.headers.get("authorization"));
    if (principal && def.access !== "public") {
      if (def.access.credential && principal.kind !== def.access.credential) throw errors.unauthenticated();
      authorize(principal, def.access.scope, def.access.level);
    }
    const url = new URL(request.url);
    const params = def.checkers.params ? check(def.checkers.params, rawParams) : rawParams;
    const query = checkQuery(def, url.searchParams);
    const bodyText = def.method === "POST" || def.method === "PUT" || def.method === "PATCH";
    const body = bodyText ? await readBody(def, request, deps.config.limits.max_request_bytes) : undefined;
    const key = def.method === "POST" && principal ? request.headers.get("idempotency-key") : null;
    let result: Reply;
    if (key !== null && principal) {
      Idempotency.checkKey(key);
      const hash = Idempotency.hashRequest(def.method, url.pathname, JSON.stringify(body ?? null));
      const replay = await idempotency.begin(principal.actor, key, hash);
      if (replay) {
        result = replay;
      } else {
        let outcome: Reply | null = null;
        try {
          outcome = await def.handler({ principal, params, query, body, request });
        } finally {
          await idempotency.finish(principal.actor, key, hash, outcome, def.secretFields);
        }
        result = outcome;
      }
    } else {
      result = await def.handler({ principal, params, query, body, request });
    }
    response = toResponse(result);
  } catch (error) {
    response = error instanceof AppError ? errorResponse(error) : internalError(error, deps.log);
  }
  const seconds = (performance.now() - started) / 1000;
  deps.metrics.observeRequest(def.method, def.path, response.status, seconds);
  logRequest(deps, request, response.status, seconds, def.path);
  return response;
}

function toResponse(result: Reply): Response {
  if (result.response) return result.response;
  if (result.text) {
    return new Response(result.text.content, {
      status: result.status,
      headers: { "content-type": result.text.contentType, ...result.headers },
    });
  }
  if (result.status === 204 || result.body === undefined) {
    return new Response(null, { status: result.status, headers: result.headers });
  }
  return new Response(JSON.stringify(result.body), {
    status: result.status,
    headers: { "content-type": JSON_TYPE, ...result.headers },
  });
}

export function errorResponse(error: AppError): Response {
  return new Response(JSON.stringify(errorBody(error.code, error.message, error.details)), {
    status: error.status,
    headers: { "content-type": JSON_TYPE, ...error.headers },
  });
}

function internalError(error?: unknown, log?: Logger): Response {
  log?.error("unhandled error", {
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  return new Response(JSON.stringify(errorBody("internal_error", "Something went wrong on our side.")), {
    status: 500,
    headers: { "content-type": JSON_TYPE },
  });
}

function logRequest(deps: HttpDeps, request: Request, status: number, seconds: number, route: string): void {
  if (!deps.log.enabled("info")) return;
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  deps.log.info("request", {
    method: request.method,
    path: redactPath(pathStart === -1 ? "/" : url.slice(pathStart)),
    route,
    status,
    ms: Math.round(seconds * 10000) / 10,
  });
}
