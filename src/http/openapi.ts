/** The OpenAPI 3.1 document, generated from the route declarations and their TypeBox schemas. */
import type { TObject, TSchema } from "@sinclair/typebox";
import { VERSION } from "../version.ts";
import type { RouteDef } from "./route.ts";
import { ErrorEnvelope } from "./schema.ts";

/** TypeBox adds symbol keys and `default`s used for coercion; JSON.stringify drops the symbols. */
function clean(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema));
}

export function openApiDocument(routes: RouteDef[], baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of routes) {
    const path = def.path.replace(/:(\w+)/g, "{$1}");
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ["path", def.schemas.params],
      ["query", def.schemas.query],
    ] as const) {
      if (!schema) continue;
      const object = schema as TObject;
      for (const [name, property] of Object.entries(object.properties)) {
        parameters.push({
          name,
          in: where,
          required: (object.required ?? []).includes(name),
          schema: clean(property),
        });
      }
    }
    if (def.method === "POST" && def.access !== "public") {
      parameters.push({
        name: "Idempotency-Key",
        in: "header",
        required: false,
        schema: { type: "string", maxLength: 255 },
        description: "Replays the first successful response for 24 hours.",
      });
    }
    const responses: Record<string, unknown> = {
      [def.response.status]: def.response.schema
        ? {
            description: def.response.description ?? "Success",
            content: { "application/json": { schema: clean(def.response.schema) } },
          }
        : { description: def.response.description ?? "No content" },
      default: {
        description: "An error",
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      },
    };
    paths[path] ??= {};
    paths[path][def.method.toLowerCase()] = {
      summary: def.summary,
      tags: [def.tag],
      operationId: `${def.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
      ...(def.access === "public"
        ? { security: [] }
        : { "x-svc-scope": def.access.scope ?? "any", "x-svc-access": def.access.level }),
      ...(parameters.length ? { parameters } : {}),
      ...(def.schemas.body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: clean(def.schemas.body) } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "svc API",
      version: VERSION,
      description: "Alerting, on-call and incidents in one executable.",
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "An API key (svc_…) or a session JWT." },
      },
      schemas: { Error: clean(ErrorEnvelope) },
    },
    paths,
  };
}
