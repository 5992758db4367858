/**
 * Who is calling and what they may do. A principal comes from an API key or a session JWT;
 * `authorize` applies the rules of DESIGN §5: a key needs the endpoint's scope (`admin`
 * includes all), and a user-bound key or session is further limited by the user's role.
 */
import { AppError, errors } from "../errors.ts";

export const SCOPES = ["monitors", "alerts", "incidents", "schedules", "events", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** What an endpoint does with its scope: read, change, need admin privilege, or need the owner. */
export type AccessLevel = "read" | "write" | "admin" | "owner";

export interface Principal {
  orgId: string;
  kind: "api_key" | "session";
  /** The acting user, null for a service-bound key. */
  userId: string | null;
  role: Role | null;
  /** null for a session: a session is limited by the role alone. */
  scopes: ReadonlySet<Scope> | null;
  keyId: string | null;
  /** The cloudevents channel an API key is bound to (DESIGN §5), else null. */
  channelId: string | null;
  /** Stable identity for idempotency records and authorship (`usr_…` or `key:<id>`). */
  actor: string;
}

export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes === null || principal.scopes.has(scope) || principal.scopes.has("admin");
}

/** Owner or admin user, or a service-bound key with scope `admin`. */
export function hasAdminPrivilege(principal: Principal): boolean {
  if (principal.role === null) return principal.scopes?.has("admin") ?? false;
  return principal.role === "owner" || principal.role === "admin";
}

export function authorize(principal: Principal, scope: Scope | null, level: AccessLevel): void {
  if (scope !== null && !hasScope(principal, scope)) throw errors.insufficientScope(scope);
  switch (level) {
    case "read":
      return;
    case "write":
      if (principal.role === "viewer") throw errors.forbiddenRole("A viewer can only read.");
      return;
    case "admin":
      if (principal.role === null && !principal.scopes?.has("admin")) throw errors.insufficientScope("admin");
      if (!hasAdminPrivilege(principal)) throw errors.forbiddenRole("This needs an owner or admin.");
      return;
    case "owner":
      if (principal.role !== "owner") {
        throw new AppError("owner_required", "Only the organization's owner can do this.");
      }
  }
}
