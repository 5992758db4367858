/**
 * How an endpoint is declared: method, path, access rule, TypeBox schemas for params, query
 * and body, the success response, and a handler that receives validated input. The same
 * declaration drives validation, authorization and the OpenAPI document, so they cannot drift.
 */
import type { Static, TObject, TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { AccessLevel, Principal, Scope } from "../accounts/access.ts";
import { AppError, errors, type FieldProblem } from "../errors.ts";

/** The content type of every JSON response. */
export const JSON_TYPE = "application/json; charset=utf-8";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Reply {
  status: number;
  /** A JSON body. */
  body?: unknown;
  /** A body that is not JSON (an iCalendar feed), sent with its own content type. */
  text?: { contentType: string; content: string };
  /** A response built by the handler itself (an event stream). */
  response?: Response;
  headers?: Record<string, string>;
}

export const reply = {
  ok: (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, headers }),
  created: (body: unknown): Reply => ({ status: 201, body }),
  accepted: (body: unknown): Reply => ({ status: 202, body }),
  noContent: (): Reply => ({ status: 204 }),
  text: (contentType: string, content: string, headers?: Record<string, string>): Reply => ({
    status: 200,
    text: { contentType, content },
    headers,
  }),
};

type In<S> = S extends TSchema ? Static<S> : undefined;

export interface Input<P, Q, B, Who> {
  principal: Who;
  params: P;
  query: Q;
  body: B;
  request: Request;
}

export type Access = {
  scope: Scope | null;
  level: AccessLevel;
  /** Only this kind of credential is one for the endpoint: any other is 401 (DESIGN §5). */
  credential?: Principal["kind"];
};

interface RouteOptions<P, Q, B, Who> {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** The success status and the schema of its body (none for 204). */
  response: { status: number; schema?: TSchema; description?: string };
  /**
   * Fields removed from a response before it is stored for Idempotency-Key replays, so that a
   * secret shown once is never written to the database in clear.
   */
  secretFields?: string[];
  /**
   * A body in a foreign wire format (PagerDuty, Alertmanager, CloudEvents) that the handler
   * reads and judges itself, answering in that format's own error shape: documented in the
   * OpenAPI document, not validated here.
   */
  requestSchema?: TSchema;
  handler: (input: Input<In<P>, In<Q>, In<B>, Who>) => Promise<Reply> | Reply;
}

export interface RouteDef {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  access: Access | "public";
  schemas: { params?: TSchema; query?: TSchema; body?: TSchema };
  response: { status: number; schema?: TSchema; description?: string };
  secretFields: string[];
  checkers: { params?: TypeCheck<TSchema>; query?: TypeCheck<TSchema>; body?: TypeCheck<TSchema> };
  handler: (input: Input<unknown, unknown, unknown, Principal | null>) => Promise<Reply> | Reply;
}

function build<P, Q, B, Who>(access: Access | "public", options: RouteOptions<P, Q, B, Who>): RouteDef {
  const compile = (schema: unknown) => (schema ? TypeCompiler.Compile(schema as TSchema) : undefined);
  return {
    method: options.method,
    path: options.path,
    summary: options.summary,
    tag: options.tag,
    access,
    schemas: {
      params: options.params as TSchema | undefined,
      query: options.query as TSchema | undefined,
      body: (options.body as TSchema | undefined) ?? options.requestSchema,
    },
    response: options.response,
    secretFields: options.secretFields ?? [],
    checkers: { params: compile(options.params), query: compile(options.query), body: compile(options.body) },
    handler: options.handler as RouteDef["handler"],
  };
}

/** An endpoint that needs a credential with `access`. */
export function route<
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
>(access: Access, options: RouteOptions<P, Q, B, Principal>): RouteDef {
  return build(access, options);
}

/** An endpoint anyone may call (login, invite acceptance, public pages). */
export function publicRoute<
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
>(options: RouteOptions<P, Q, B, null>): RouteDef {
  return build("public", options);
}

/**
 * Validates `value` against a compiled schema and lists every problem by field path; `prefix`
 * names where a nested value sits in the body (`config` for a channel's config).
 */
export function check<S extends TSchema>(checker: TypeCheck<S>, value: unknown, prefix?: string): Static<S> {
  if (checker.Check(value)) return value;
  const seen = new Set<string>();
  const fields: FieldProblem[] = [];
  for (const e of checker.Errors(value)) {
    const inner = e.path.slice(1).replaceAll("/", ".");
    const path = prefix ? (inner ? `${prefix}.${inner}` : prefix) : inner || "body";
    if (seen.has(path)) continue;
    seen.add(path);
    fields.push({ path, problem: describe(e.message, e.schema) });
  }
  throw errors.validation(fields);
}

function describe(message: string, schema: TSchema): string {
  if (schema.format === "date-time") return "must be an RFC 3339 timestamp";
  if (schema.anyOf?.some((s: TSchema) => s.format === "date-time")) {
    return schema.anyOf.some((s: TSchema) => s.type === "null")
      ? "must be an RFC 3339 timestamp or null"
      : "must be an RFC 3339 timestamp";
  }
  if (schema.format === "email") return "must be an email address";
  if (message === "Unexpected property") return "is not a known field";
  if (message === "Expected required property") return "is required";
  if (schema.anyOf?.every((s: TSchema) => s.const !== undefined)) {
    return `must be one of ${schema.anyOf.map((s: TSchema) => JSON.stringify(s.const)).join(", ")}`;
  }
  return message.charAt(0).toLowerCase() + message.slice(1);
}

/** Reads query parameters: strings converted to the schema's types, defaults applied. */
export function checkQuery(def: RouteDef, search: URLSearchParams): unknown {
  const raw: Record<string, string | string[]> = {};
  for (const key of new Set(search.keys())) {
    const all = search.getAll(key);
    raw[key] = all.length === 1 ? (all[0] as string) : all;
  }
  const checker = def.checkers.query;
  if (!checker) {
    const first = Object.keys(raw)[0];
    if (first !== undefined) throw errors.field(first, "is not a known parameter");
    return {};
  }
  // Value.Convert would read "1.5" or "true" as an integer; a query integer must be digits.
  const properties = (def.schemas.query as TObject).properties;
  for (const [key, value] of Object.entries(raw)) {
    if (properties[key]?.type === "integer" && typeof value === "string" && !/^-?\d+$/.test(value)) {
      throw errors.field(key, "expected integer");
    }
  }
  const converted = Value.Convert(def.schemas.query as TSchema, raw);
  const withDefaults = Value.Default(def.schemas.query as TSchema, converted);
  return check(checker, withDefaults);
}

/** Reads and validates a JSON body; the Content-Type must be JSON when a body is sent. */
export async function readBody(def: RouteDef, request: Request, maxBytes: number): Promise<unknown> {
  const checker = def.checkers.body;
  if (!checker) return undefined;
  const text = await readLimited(request, maxBytes);
  const type = request.headers.get("content-type");
  if (text.trim() === "") return check(checker, {});
  if (type !== null && !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw new AppError(
      "unsupported_media_type",
      "The request body must be JSON (Content-Type: application/json).",
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw errors.validation(
      [{ path: "body", problem: "is not valid JSON" }],
      "The request body is not valid JSON.",
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw errors.validation([{ path: "body", problem: "must be a JSON object" }]);
  }
  return check(checker, parsed);
}

/** A body in a foreign wire format, parsed as JSON: undefined when it is not JSON. */
export async function readJsonLoose(request: Request, maxBytes: number): Promise<unknown> {
  const text = await readLimited(request, maxBytes);
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The body as text, refusing it with 413 `payload_too_large` once it passes `maxBytes` bytes:
 * at once when Content-Length says so, else while streaming (chunked bodies), so an oversized
 * body is never held in memory whole.
 */
export async function readLimited(request: Request, maxBytes: number): Promise<string> {
  return new TextDecoder().decode(await readLimitedBytes(request, maxBytes));
}

/** `readLimited` for bodies that are not necessarily text (CloudEvents binary mode). */
export async function readLimitedBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () =>
    new AppError("payload_too_large", `The request body is larger than ${maxBytes} bytes.`);
  const declared = request.headers.get("content-length");
  if (Number(declared ?? "0") > maxBytes) throw tooLarge();
  if (!request.body) return new Uint8Array(0);
  // A declared length within the limit bounds the read: take the body whole, which skips
  // the per-chunk reader (about 10 µs a request on the ingest path).
  if (declared !== null && /^\d+$/.test(declared)) {
    return request.bytes().catch(() => {
      throw new AppError("validation_failed", "The request body ended before it was complete.");
    });
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { value, done } = await reader.read().catch(() => {
      // The client went away or sent less than its Content-Length promised.
      throw new AppError("validation_failed", "The request body ended before it was complete.");
    });
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}
