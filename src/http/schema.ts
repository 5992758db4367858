/**
 * Shared TypeBox building blocks for request and response schemas. The same schemas validate
 * requests and are published in the OpenAPI document.
 */
import { FormatRegistry, Type as T, type TSchema } from "@sinclair/typebox";
import type { IdPrefix } from "../ids.ts";
import { parseRfc3339 } from "../time.ts";

FormatRegistry.Set("date-time", (value) => parseRfc3339(value) !== null);
FormatRegistry.Set("email", (value) => isEmail(value) && value.length <= 254);

/** The email shape svc accepts: something, `@`, something, without blanks. */
export function isEmail(value: string): boolean {
  return /^[^\s@]+@[^\s@]+$/.test(value);
}

/** A timestamp in (RFC 3339, any offset) or out (UTC, milliseconds, `Z`). */
export const Timestamp = (options: { description?: string } = {}) =>
  T.String({ format: "date-time", ...options });

export const Email = () => T.String({ format: "email", maxLength: 254 });

export const Id = (prefix: IdPrefix, description?: string) =>
  T.String({
    pattern: `^${prefix}_[0-9a-z]{26}$`,
    description: description ?? `An id starting '${prefix}_'.`,
  });

export const Name = (maxLength = 200) => T.String({ minLength: 1, maxLength });

export const Strict = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  T.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

/** Query parameters of every list: `limit` 1..200 (default 50) and an opaque `cursor`. */
export const listQuery = {
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: T.Optional(T.String({ minLength: 1, maxLength: 512 })),
};

export const ListOf = <S extends TSchema>(item: S) =>
  T.Object({
    data: T.Array(item),
    next_cursor: T.Union([T.String(), T.Null()]),
    has_more: T.Boolean(),
  });

export const ErrorEnvelope = T.Object({
  error: T.Object({
    code: T.String(),
    message: T.String(),
    details: T.Optional(T.Record(T.String(), T.Unknown())),
  }),
});

export const IdParams = Strict({ id: T.String({ minLength: 1, maxLength: 64 }) });
