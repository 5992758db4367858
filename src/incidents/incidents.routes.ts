/** `/api/v1/incidents` (scope incidents) and `POST /api/v1/alerts/{id}/create-incident`. */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict } from "../http/schema.ts";
import {
  Incident,
  IncidentInput,
  IncidentPatch,
  IncidentWithUpdates,
  Update,
  UpdateInput,
  UpdatePatch,
} from "./incident.ts";
import type { IncidentService } from "./incidents.service.ts";

const tag = "Incidents";
const read = { scope: "incidents", level: "read" } as const;
const write = { scope: "incidents", level: "write" } as const;
const UpdateParams = Strict({
  id: T.String({ minLength: 1, maxLength: 64 }),
  update_id: T.String({ minLength: 1, maxLength: 64 }),
});

export function incidentRoutes(incidents: IncidentService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/incidents",
      tag,
      summary: "List incidents, newest first (status=active by default, resolved, or all)",
      query: Strict({
        ...listQuery,
        status: T.Optional(
          T.Union([T.Literal("active"), T.Literal("resolved"), T.Literal("all")], { default: "active" }),
        ),
      }),
      response: { status: 200, schema: ListOf(Incident) },
      handler: async ({ principal, query }) => {
        const which = query.status ?? "active";
        return reply.ok(
          await incidents.list(
            principal.orgId,
            which,
            query.limit ?? 50,
            decodeCursor(`incidents:${which}`, query.cursor),
          ),
        );
      },
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/incidents",
      tag,
      summary: "Create an incident (status investigating by default, maintenance for maintenance)",
      body: IncidentInput,
      response: { status: 201, schema: IncidentWithUpdates },
      handler: async ({ principal, body }) =>
        reply.created(await incidents.create(principal.orgId, principal, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/incidents/:id",
      tag,
      summary: "Read an incident with all its updates, newest first",
      params: IdParams,
      response: { status: 200, schema: IncidentWithUpdates },
      handler: async ({ principal, params }) => reply.ok(await incidents.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/incidents/:id",
      tag,
      summary: "Change title, severity, status or links; a status change is also an update",
      params: IdParams,
      body: IncidentPatch,
      response: { status: 200, schema: IncidentWithUpdates },
      handler: async ({ principal, params, body }) =>
        reply.ok(await incidents.update(principal.orgId, principal, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/incidents/:id",
      tag,
      summary: "Delete an incident (owners and admins only)",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await incidents.remove(principal.orgId, principal, params.id);
        return reply.noContent();
      },
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/incidents/:id/updates",
      tag,
      summary: "Post an update; a status in it changes the incident's (default: unchanged)",
      params: IdParams,
      body: UpdateInput,
      response: { status: 201, schema: Update },
      handler: async ({ principal, params, body }) =>
        reply.created(await incidents.addUpdate(principal.orgId, principal, params.id, body)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/incidents/:id/updates/:update_id",
      tag,
      summary: "Edit an update's body or visibility (the earlier version is kept in edit_history)",
      params: UpdateParams,
      body: UpdatePatch,
      response: { status: 200, schema: Update },
      handler: async ({ principal, params, body }) =>
        reply.ok(await incidents.editUpdate(principal.orgId, principal, params.id, params.update_id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/incidents/:id/updates/:update_id",
      tag,
      summary: "Delete an update (owners and admins only; the incident's status stays)",
      params: UpdateParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await incidents.deleteUpdate(principal.orgId, principal, params.id, params.update_id);
        return reply.noContent();
      },
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/alerts/:id/create-incident",
      tag,
      summary: "Open an incident from an alert (title, severity and monitor from the alert unless given)",
      params: IdParams,
      body: Strict({
        title: T.Optional(IncidentInput.properties.title),
        severity: T.Optional(IncidentInput.properties.severity),
        status: IncidentInput.properties.status,
        initial_update: IncidentInput.properties.initial_update,
        monitor_ids: IncidentInput.properties.monitor_ids,
        status_page_ids: IncidentInput.properties.status_page_ids,
      }),
      response: { status: 201, schema: IncidentWithUpdates },
      handler: async ({ principal, params, body }) =>
        reply.created(await incidents.createFromAlert(principal.orgId, principal, params.id, body)),
    }),
  ];
}
