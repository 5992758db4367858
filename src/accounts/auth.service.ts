/**
 * Credentials: resolving a bearer credential to a Principal, password + TOTP login, invite
 * acceptance with MFA enrolment, password-reset completion, and minting admin JWTs.
 */
import { Secret, TOTP } from "otpauth";
import type { Db } from "../db/store.ts";
import { AppError, errors } from "../errors.ts";
import { MINUTE } from "../time.ts";
import type { Principal, Scope } from "./access.ts";
import { parseScopes } from "./api-key.ts";
import { findKeyById, findKeysWithOwnerByPrefix, touchKeys } from "./api-keys.repository.ts";
import type { AccountsContext } from "./context.ts";
import { findOrgBySlug } from "./orgs.repository.ts";
import { API_KEY_PREFIX_LENGTH, looksLikeApiKey, sameHash, sha256 } from "./secrets.ts";
import type { SessionSigner } from "./sessions.ts";
import type { UserTable } from "./user.table.ts";
import { normalizeEmail } from "./user.ts";
import {
  bumpSessionVersion,
  findUserById,
  findUserByInviteHash,
  findUserByResetHash,
  findUsersByEmail,
  updateUser,
} from "./users.repository.ts";

export const SESSION_TTL_MS = 12 * 60 * MINUTE;
export const MAX_ADMIN_TOKEN_TTL_MS = 24 * 60 * MINUTE;
/** The lifetime of an admin JWT when the caller does not ask for one. */
export const DEFAULT_ADMIN_TOKEN_TTL_MS = 15 * MINUTE;
const LAST_USED_INTERVAL_MS = MINUTE;
const LOGIN_FAILURES_ALLOWED = 10;
const KEY_CACHE_LIMIT = 10_000;
const LOGIN_FAILURE_WINDOW_MS = 15 * MINUTE;

/** JWT subjects for service-bound keys (tokens minted by `/auth/token` with such a key). */
const KEY_SUBJECT = "key:";

/** The credential of an `Authorization: Bearer …` header, if the header is one. */
export function bearerCredential(header: string | null): string | undefined {
  return header ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}

export class AuthService {
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly loginFailures = new Map<string, { count: number; since: number }>();

  constructor(
    private readonly ctx: AccountsContext,
    readonly signer: SessionSigner,
  ) {}

  /** The principal behind an `Authorization` header, or 401 `unauthenticated`. */
  async authenticate(header: string | null): Promise<Principal> {
    const credential = bearerCredential(header);
    if (!credential) throw errors.unauthenticated();
    const principal = looksLikeApiKey(credential)
      ? this.fromApiKey(credential)
      : await this.fromJwt(credential);
    if (!principal) throw errors.unauthenticated();
    return principal;
  }

  /**
   * Principals of recently used keys, valid while no connection has committed since
   * (`Store.dataVersion`): a revocation, suspension or role change, made here or by
   * `svc admin`, is seen by the very next request.
   */
  private readonly keyCache = new Map<
    string,
    { principal: Principal; expiresAt: number | null; version: number }
  >();

  private fromApiKey(secret: string): Principal | null {
    const hash = sha256(secret);
    const now = Date.now();
    const version = this.ctx.store.dataVersion();
    const cached = this.keyCache.get(hash);
    if (cached && cached.version === version && (cached.expiresAt === null || cached.expiresAt > now)) {
      this.noteUse(cached.principal.keyId as string, now);
      return cached.principal;
    }
    const principal = this.lookUpKey(secret, hash, now);
    if (this.keyCache.size >= KEY_CACHE_LIMIT) this.keyCache.clear();
    if (principal) this.keyCache.set(hash, { ...principal, version });
    else this.keyCache.delete(hash);
    return principal?.principal ?? null;
  }

  private lookUpKey(
    secret: string,
    hash: string,
    now: number,
  ): { principal: Principal; expiresAt: number | null } | null {
    const rows = findKeysWithOwnerByPrefix(this.ctx.store, secret.slice(0, API_KEY_PREFIX_LENGTH));
    const row = rows.find((r) => sameHash(r.secret_hash, hash));
    if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) return null;
    if (row.user_id !== null && (row.role === null || row.status === "suspended")) return null;
    this.noteUse(row.id, now);
    const principal: Principal = {
      orgId: row.org_id,
      kind: "api_key",
      userId: row.user_id,
      role: row.role,
      scopes: new Set(parseScopes(row.scopes)),
      keyId: row.id,
      channelId: row.channel_id,
      actor: row.user_id ?? `${KEY_SUBJECT}${row.id}`,
    };
    return { principal, expiresAt: row.expires_at };
  }

  private async fromJwt(token: string): Promise<Principal | null> {
    const claims = await this.signer.verify(token);
    if (!claims) return null;
    if (claims.userId.startsWith(KEY_SUBJECT)) {
      const key = await findKeyById(this.ctx.store.read, claims.userId.slice(KEY_SUBJECT.length));
      if (!key || key.org_id !== claims.orgId || key.revoked_at !== null || key.user_id !== null) return null;
      if (key.expires_at !== null && key.expires_at <= Date.now()) return null;
      return {
        orgId: key.org_id,
        kind: "session",
        userId: null,
        role: null,
        scopes: new Set<Scope>(["admin"]),
        keyId: key.id,
        channelId: null,
        actor: claims.userId,
      };
    }
    const user = await findUserById(this.ctx.store.read, claims.userId);
    if (!user || user.org_id !== claims.orgId || user.status !== "active") return null;
    if (user.session_version !== claims.sessionVersion) return null;
    return {
      orgId: user.org_id,
      kind: "session",
      userId: user.id,
      role: user.role,
      scopes: null,
      keyId: null,
      channelId: null,
      actor: user.id,
    };
  }

  /** `last_used_at` is written at most once a minute per key, after the request. */
  private noteUse(keyId: string, now: number): void {
    const last = this.lastUsedWritten.get(keyId) ?? 0;
    if (now - last < LAST_USED_INTERVAL_MS) return;
    this.lastUsedWritten.set(keyId, now);
    this.ctx.store
      .write((tx) => touchKeys(tx, [keyId], now))
      .catch((error: unknown) => {
        this.ctx.log.warn("could not record key use", { key_id: keyId, error: String(error) });
      });
  }

  async login(input: { email: string; password: string; totp: string; org?: string }) {
    const email = normalizeEmail(input.email);
    this.checkLoginRate(email);
    // Counted before the slow password check, so parallel guesses cannot outrun the limit.
    this.noteLoginFailure(email);
    const candidates = await findUsersByEmail(this.ctx.store.read, email);
    let users = candidates.filter((u) => u.status === "active" && u.password_hash && u.mfa_enabled === 1);
    if (input.org !== undefined) {
      const org = await findOrgBySlug(this.ctx.store.read, input.org);
      users = users.filter((u) => u.org_id === org?.id);
    }
    // Password and code both, per user: an answer never confirms a password without its code.
    const matches: UserTable[] = [];
    for (const user of users) {
      const passwordOk = await Bun.password.verify(input.password, user.password_hash as string);
      if (passwordOk && user.totp_secret && totpValid(user.totp_secret, input.totp)) matches.push(user);
    }
    if (matches.length > 1) {
      throw errors.field("org", "is required: this email belongs to several organizations");
    }
    const user = matches[0];
    if (!user) throw errors.unauthenticated();
    this.loginFailures.delete(email);
    const now = Date.now();
    await this.ctx.store.write((tx) => updateUser(tx, user.id, { last_login_at: now }));
    return this.issue(user, SESSION_TTL_MS);
  }

  private checkLoginRate(email: string): void {
    const entry = this.loginFailures.get(email);
    if (!entry) return;
    const elapsed = Date.now() - entry.since;
    if (elapsed > LOGIN_FAILURE_WINDOW_MS) {
      this.loginFailures.delete(email);
      return;
    }
    if (entry.count >= LOGIN_FAILURES_ALLOWED) {
      const retryAfter = Math.ceil((LOGIN_FAILURE_WINDOW_MS - elapsed) / 1000);
      throw new AppError(
        "rate_limited",
        "Too many failed logins; try again later.",
        { retry_after_seconds: retryAfter },
        {
          "retry-after": String(retryAfter),
        },
      );
    }
  }

  private noteLoginFailure(email: string): void {
    const entry = this.loginFailures.get(email);
    if (entry) entry.count += 1;
    else this.loginFailures.set(email, { count: 1, since: Date.now() });
  }

  /** Sets the password of an invited user and starts MFA enrolment. */
  async acceptInvite(input: { token: string; password: string }) {
    checkPassword(input.password);
    const user = await userByInvite(this.ctx.store.read, input.token);
    const passwordHash = await Bun.password.hash(input.password, "argon2id");
    const secret = new Secret({ size: 20 });
    // Checked again inside the write: a suspension or a new link may have landed meanwhile.
    await this.ctx.store.write(async (tx) => {
      const current = await userByInvite(tx, input.token);
      await updateUser(tx, current.id, {
        password_hash: passwordHash,
        totp_secret: secret.base32,
        mfa_enabled: 0,
      });
    });
    const totp = makeTotp(secret.base32, user.email);
    return { totp_secret: secret.base32, otpauth_url: totp.toString() };
  }

  /** Confirms the authenticator with a first code; the user becomes active and may log in. */
  async confirmMfa(input: { token: string; totp: string }) {
    const now = Date.now();
    const user = await this.ctx.store.write(async (tx) => {
      const current = await userByInvite(tx, input.token);
      if (!current.totp_secret || !current.password_hash) {
        throw new AppError("conflict", "Accept the invite with a password before confirming MFA.");
      }
      if (!totpValid(current.totp_secret, input.totp)) throw errors.field("totp", "is not the current code");
      await updateUser(tx, current.id, {
        mfa_enabled: 1,
        status: "active",
        signed_up_at: now,
        invite_token_hash: null,
        invite_expires_at: null,
        last_login_at: now,
      });
      return current;
    });
    return this.issue(user, SESSION_TTL_MS);
  }

  /** Completes a password reset; other sessions of the user end. The link works once. */
  async completeReset(input: { token: string; password: string }): Promise<void> {
    checkPassword(input.password);
    await userByReset(this.ctx.store.read, input.token);
    const passwordHash = await Bun.password.hash(input.password, "argon2id");
    await this.ctx.store.write(async (tx) => {
      const user = await userByReset(tx, input.token);
      await updateUser(tx, user.id, {
        password_hash: passwordHash,
        reset_token_hash: null,
        reset_expires_at: null,
      });
      await bumpSessionVersion(tx, user.id);
    });
  }

  /** An admin JWT for the principal's user (owner or admin) or service-bound admin key. */
  async mintAdminToken(principal: Principal, ttlMs = DEFAULT_ADMIN_TOKEN_TTL_MS) {
    if (principal.userId === null) {
      if (!principal.keyId) throw errors.forbiddenRole();
      const { token, expiresAt } = await this.signer.sign(
        { userId: `${KEY_SUBJECT}${principal.keyId}`, orgId: principal.orgId, sessionVersion: 0 },
        ttlMs,
      );
      return { token, expires_at: new Date(expiresAt).toISOString() };
    }
    const user = await findUserById(this.ctx.store.read, principal.userId);
    if (!user || (user.role !== "owner" && user.role !== "admin")) {
      throw errors.forbiddenRole("Admin tokens are for owners and admins.");
    }
    if (user.status === "suspended") throw new AppError("conflict", "This user is suspended.");
    if (user.status !== "active") {
      throw new AppError(
        "invite_pending",
        "The user must finish sign-up before a session token can be issued.",
      );
    }
    return this.issue(user, ttlMs);
  }

  async issue(user: Pick<UserTable, "id" | "org_id" | "session_version">, ttlMs: number) {
    const { token, expiresAt } = await this.signer.sign(
      { userId: user.id, orgId: user.org_id, sessionVersion: user.session_version },
      ttlMs,
    );
    return { token, expires_at: new Date(expiresAt).toISOString() };
  }
}

async function userByInvite(db: Db, token: string): Promise<UserTable> {
  const user = await findUserByInviteHash(db, sha256(token));
  if (user?.status !== "invited" || (user.invite_expires_at ?? 0) <= Date.now()) {
    throw errors.field("token", "is not a valid invite (it may have expired or been replaced)");
  }
  return user;
}

async function userByReset(db: Db, token: string): Promise<UserTable> {
  const user = await findUserByResetHash(db, sha256(token));
  if (user?.status !== "active" || (user.reset_expires_at ?? 0) <= Date.now()) {
    throw errors.field("token", "is not a valid reset link (it may have expired or been used)");
  }
  return user;
}

export const MIN_PASSWORD_LENGTH = 12;

/** The password rule lives here so that the JSON API and the HTML forms apply the same one. */
function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > 256) {
    throw errors.field("password", `must be ${MIN_PASSWORD_LENGTH} to 256 characters`);
  }
}

function makeTotp(secret: string, label: string): TOTP {
  return new TOTP({
    issuer: "svc",
    label,
    algorithm: "SHA1",
    digits: 6,
    period: 30,
    secret: Secret.fromBase32(secret),
  });
}

function totpValid(secret: string, code: string): boolean {
  return makeTotp(secret, "").validate({ token: code, window: 1 }) !== null;
}
