/** `/api/v1/status-pages` (scope incidents). */
import { Type as T } from "@sinclair/typebox";
import { errors } from "../errors.ts";
import { decodeCursor } from "../http/pagination.ts";
import { JSON_TYPE, publicRoute, type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Name, Strict } from "../http/schema.ts";
import { notFoundHtml, type PublicStatusPages } from "./public.ts";
import { Slug, StatusPage } from "./status-page.ts";
import type { StatusPageService } from "./status-pages.service.ts";

const tag = "Status pages";
const read = { scope: "incidents", level: "read" } as const;
const write = { scope: "incidents", level: "write" } as const;

export function statusPageRoutes(pages: StatusPageService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/status-pages",
      tag,
      summary: "List status pages",
      query: Strict(listQuery),
      response: { status: 200, schema: ListOf(StatusPage) },
      handler: async ({ principal, query }) =>
        reply.ok(
          await pages.list(principal.orgId, query.limit ?? 50, decodeCursor("status_pages", query.cursor)),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/status-pages",
      tag,
      summary: "Create a status page",
      body: Strict({ slug: Slug, title: Name(), description: T.Optional(T.String({ maxLength: 2000 })) }),
      response: { status: 201, schema: StatusPage },
      handler: async ({ principal, body }) => reply.created(await pages.create(principal.orgId, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/status-pages/:id",
      tag,
      summary: "Read a status page",
      params: IdParams,
      response: { status: 200, schema: StatusPage },
      handler: async ({ principal, params }) => reply.ok(await pages.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/status-pages/:id",
      tag,
      summary: "Change a status page's slug, title or description",
      params: IdParams,
      body: Strict({
        slug: T.Optional(Slug),
        title: T.Optional(Name()),
        description: T.Optional(T.String({ maxLength: 2000 })),
      }),
      response: { status: 200, schema: StatusPage },
      handler: async ({ principal, params, body }) =>
        reply.ok(await pages.update(principal.orgId, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/status-pages/:id",
      tag,
      summary: "Delete a status page (its incidents stay)",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await pages.remove(principal.orgId, params.id);
        return reply.noContent();
      },
    }),
  ];
}

const PageParams = Strict({
  org_slug: T.String({ minLength: 1, maxLength: 64 }),
  page_slug: T.String({ minLength: 1, maxLength: 64 }),
});
const HTML = "text/html; charset=utf-8";

/** The public pages: no credential, served from a cache that any commit invalidates. */
export function publicStatusRoutes(pages: PublicStatusPages): RouteDef[] {
  return [
    publicRoute({
      method: "GET",
      path: "/status/:org_slug/:page_slug",
      tag: "Public status pages",
      summary: "A public status page (HTML; a friendly 404 page for unknown slugs)",
      params: PageParams,
      response: { status: 200, description: "text/html" },
      handler: async ({ params }) => {
        const rendered = await pages.render(params.org_slug, params.page_slug);
        if (!rendered) return { status: 404, text: { contentType: HTML, content: notFoundHtml() } };
        return reply.text(HTML, rendered.html, { "cache-control": "no-cache" });
      },
    }),
    publicRoute({
      method: "GET",
      path: "/status/:org_slug/:page_slug/index.json",
      tag: "Public status pages",
      summary: "A public status page as JSON: page, banner, active and recent incidents",
      params: PageParams,
      response: { status: 200, description: "application/json" },
      handler: async ({ params }) => {
        const rendered = await pages.render(params.org_slug, params.page_slug);
        if (!rendered) throw errors.notFound("Status page");
        return reply.text(JSON_TYPE, rendered.json, { "cache-control": "no-cache" });
      },
    }),
  ];
}
