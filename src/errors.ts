/**
 * The one catalogue of API errors. Domain code throws AppError; only the HTTP layer turns it
 * into the `{ error: { code, message, details } }` envelope. Anything that is not an AppError
 * becomes a 500 that says nothing about its cause.
 */

export type ErrorCode =
  | "validation_failed"
  | "invalid_cursor"
  | "malformed_cloudevent"
  | "immutable_field"
  | "unauthenticated"
  | "plan_gate_blocked"
  | "insufficient_scope"
  | "forbidden_role"
  | "owner_required"
  | "not_found"
  | "schedule_in_use"
  | "user_in_use"
  | "alert_resolved"
  | "owner_protected"
  | "override_ended"
  | "invite_pending"
  | "idempotency_conflict"
  | "conflict"
  | "cursor_expired"
  | "precondition_failed"
  | "batch_too_large"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "stream_limit_reached"
  | "internal_error";

const statusOf: Record<ErrorCode, number> = {
  validation_failed: 400,
  invalid_cursor: 400,
  malformed_cloudevent: 400,
  immutable_field: 400,
  unauthenticated: 401,
  plan_gate_blocked: 402,
  insufficient_scope: 403,
  forbidden_role: 403,
  owner_required: 403,
  not_found: 404,
  schedule_in_use: 409,
  user_in_use: 409,
  alert_resolved: 409,
  owner_protected: 409,
  override_ended: 409,
  invite_pending: 409,
  idempotency_conflict: 409,
  conflict: 409,
  cursor_expired: 410,
  precondition_failed: 412,
  batch_too_large: 413,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  stream_limit_reached: 429,
  internal_error: 500,
};

/** One problem with one field of a request, as listed in `details.fields`. */
export interface FieldProblem {
  path: string;
  problem: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = statusOf[code];
  }
}

export const UNAUTHENTICATED_MESSAGE = "A valid credential is required.";

export const errors = {
  validation: (fields: FieldProblem[], message?: string) =>
    new AppError("validation_failed", message ?? describeFields(fields), { fields }),
  field: (path: string, problem: string) => errors.validation([{ path, problem }]),
  unauthenticated: () => new AppError("unauthenticated", UNAUTHENTICATED_MESSAGE),
  notFound: (what: string) => new AppError("not_found", `${what} was not found.`),
  insufficientScope: (scope: string) =>
    new AppError("insufficient_scope", `This credential lacks the '${scope}' scope.`, {
      required_scope: scope,
    }),
  forbiddenRole: (message = "Your role does not allow this.") => new AppError("forbidden_role", message),
  invalidCursor: () => new AppError("invalid_cursor", "The cursor is not valid for this list."),
};

/** A name trimmed, or 400 naming `field` when nothing is left. */
export function requireName(name: string, field = "name"): string {
  const trimmed = name.trim();
  if (!trimmed) throw errors.field(field, "must not be empty");
  return trimmed;
}

function describeFields(fields: FieldProblem[]): string {
  const first = fields[0];
  if (!first) return "The request is not valid.";
  const more =
    fields.length > 1 ? ` (and ${fields.length - 1} more problem${fields.length > 2 ? "s" : ""})` : "";
  return `${first.path || "body"}: ${first.problem}${more}.`;
}

export function errorBody(code: ErrorCode, message: string, details?: Record<string, unknown>) {
  return { error: details ? { code, message, details } : { code, message } };
}
