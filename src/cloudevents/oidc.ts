/**
 * OIDC bearer-token verification for CloudEvents ingest (DESIGN §7): a JWT is accepted when it is
 * signed by a key published in the issuer's JWKS (found through OIDC discovery), its `iss` is
 * exactly the configured issuer, its `aud` names one of the configured audiences and its `exp` is
 * in the future (`nbf`, when present, must have passed). Issuers must be `https`, except on
 * loopback hosts.
 *
 * Every failure — a malformed or badly signed token, a refused issuer URL, an unreachable or
 * inconsistent issuer — is `null`; `verify` never throws and logs nothing.
 *
 * Caching, per issuer: the discovery document is kept for `discoveryTtlMs` (a failed refresh
 * keeps serving the previous document and retries a few seconds later; with no previous
 * document nothing is cached, so the next request tries again). The remote JWK set (jose's
 * `createRemoteJWKSet`) is kept as long as `jwks_uri` stays the same; it refetches the set when a
 * token names a key it does not know (at most once per `jwksCooldownMs`), so keys rotated in at
 * the issuer are picked up without a restart.
 */
import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  type JWTVerifyGetKey,
  jwtVerify,
  type RemoteJWKSetOptions,
} from "jose";

/** Asymmetric JWS algorithms only: never `none`, never HMAC (`HS*`). */
export const OIDC_ALGORITHMS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];

export interface OidcVerifierOptions {
  /** Timeout for each discovery and JWKS request. Default 5 s. */
  fetchTimeoutMs?: number;
  /** How long a discovery document is reused before it is fetched again. Default 1 hour. */
  discoveryTtlMs?: number;
  /**
   * Minimum time between two JWKS fetches triggered by a token whose key is not in the cached
   * set (jose's `cooldownDuration`). Default 5 s.
   */
  jwksCooldownMs?: number;
}

const DEFAULT_FETCH_TIMEOUT_MS = 5_000;
const DEFAULT_DISCOVERY_TTL_MS = 60 * 60 * 1000;
const DEFAULT_JWKS_COOLDOWN_MS = 5_000;
/** Keys are refetched at least this often even when every token names a known key. */
const JWKS_CACHE_MAX_AGE_MS = 10 * 60 * 1000;
/** After a failed discovery refresh (with a previous document in hand), wait this long to retry. */
const DISCOVERY_RETRY_MS = 5_000;
const MAX_DISCOVERY_BYTES = 1024 * 1024;
const MAX_TOKEN_LENGTH = 16 * 1024;

interface IssuerEntry {
  /** The last good discovery document's `jwks_uri` (absent until one was fetched). */
  jwksUri?: string;
  jwks?: JWTVerifyGetKey;
  /** When the discovery document should next be fetched (ms since epoch). */
  refreshAt: number;
  /** The discovery fetch in flight, shared by concurrent requests. */
  pending?: Promise<boolean>;
}

/** `true` for `localhost`, `127.0.0.0/8` and `::1`. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === "localhost" || host === "[::1]" || host === "::1") return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host)?.slice(1) ?? [];
  return octets.length === 3 && octets.every((o) => Number(o) <= 255);
}

/** Parses `value` as an `https` URL, or an `http` URL on a loopback host; anything else is `null`. */
export function parseOidcUrl(value: string): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.username !== "" || url.password !== "") return null;
  if (url.protocol === "https:") return url;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return url;
  return null;
}

/** Whether `issuer` is acceptable as an OIDC issuer (https, or http on loopback; no query or fragment). */
export function isAllowedIssuer(issuer: string): boolean {
  const url = parseOidcUrl(issuer);
  return (
    url !== null && url.search === "" && url.hash === "" && !issuer.includes("?") && !issuer.includes("#")
  );
}

export class OidcVerifier {
  private readonly fetchTimeoutMs: number;
  private readonly discoveryTtlMs: number;
  private readonly jwksCooldownMs: number;
  private readonly issuers = new Map<string, IssuerEntry>();

  constructor(options: OidcVerifierOptions = {}) {
    this.fetchTimeoutMs = nonNegativeInt(options.fetchTimeoutMs, DEFAULT_FETCH_TIMEOUT_MS);
    this.discoveryTtlMs = nonNegativeInt(options.discoveryTtlMs, DEFAULT_DISCOVERY_TTL_MS);
    this.jwksCooldownMs = nonNegativeInt(options.jwksCooldownMs, DEFAULT_JWKS_COOLDOWN_MS);
  }

  /**
   * Resolves to the token's claims when `token` is a JWT signed by a key of `issuer`'s JWKS with
   * `iss` exactly `issuer`, `aud` one of `audiences` and `exp` in the future; otherwise `null`.
   */
  async verify(token: string, issuer: string, audiences: string[]): Promise<Record<string, unknown> | null> {
    try {
      if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null;
      if (typeof issuer !== "string" || !isAllowedIssuer(issuer)) return null;
      const audience = Array.isArray(audiences)
        ? audiences.filter((a) => typeof a === "string" && a !== "")
        : [];
      if (audience.length === 0) return null;
      // Refuse `none`, HMAC and malformed tokens before any network traffic.
      const header = decodeProtectedHeader(token);
      if (typeof header.alg !== "string" || !OIDC_ALGORITHMS.includes(header.alg)) return null;

      const jwks = await this.keysFor(issuer);
      if (!jwks) return null;
      const { payload } = await jwtVerify(token, jwks, {
        issuer,
        audience,
        algorithms: [...OIDC_ALGORITHMS],
        requiredClaims: ["exp"],
      });
      return payload as Record<string, unknown>;
    } catch {
      return null;
    }
  }

  /** The issuer's key resolver, fetching or refreshing its discovery document as needed. */
  private async keysFor(issuer: string): Promise<JWTVerifyGetKey | null> {
    let entry = this.issuers.get(issuer);
    if (!entry) {
      entry = { refreshAt: 0 };
      this.issuers.set(issuer, entry);
    }
    if (Date.now() >= entry.refreshAt) {
      if (!entry.pending) {
        const current = entry;
        current.pending = this.refresh(issuer, current).finally(() => {
          current.pending = undefined;
        });
      }
      await entry.pending;
    }
    return entry.jwks ?? null;
  }

  /** Fetches the discovery document into `entry`; `false` when it could not be used. */
  private async refresh(issuer: string, entry: IssuerEntry): Promise<boolean> {
    const jwksUri = await this.discoverJwksUri(issuer);
    if (jwksUri === null) {
      // Keep a previous good document for a little longer; with none, cache nothing.
      if (entry.jwks) entry.refreshAt = Date.now() + Math.min(this.discoveryTtlMs, DISCOVERY_RETRY_MS);
      return false;
    }
    if (!entry.jwks || entry.jwksUri !== jwksUri) {
      const options: RemoteJWKSetOptions = {
        timeoutDuration: this.fetchTimeoutMs,
        cooldownDuration: this.jwksCooldownMs,
        cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
      };
      entry.jwks = createRemoteJWKSet(new URL(jwksUri), options);
      entry.jwksUri = jwksUri;
    }
    entry.refreshAt = Date.now() + this.discoveryTtlMs;
    return true;
  }

  /** `jwks_uri` from the issuer's discovery document, or `null` on any failure or inconsistency. */
  private async discoverJwksUri(issuer: string): Promise<string | null> {
    try {
      const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
      const response = await fetch(url, {
        method: "GET",
        redirect: "manual",
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(this.fetchTimeoutMs),
      });
      if (response.status !== 200) {
        await response.body?.cancel().catch(() => {});
        return null;
      }
      const text = await readCapped(response, MAX_DISCOVERY_BYTES);
      if (text === null) return null;
      const doc: unknown = JSON.parse(text);
      if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return null;
      const { issuer: docIssuer, jwks_uri: jwksUri } = doc as Record<string, unknown>;
      if (docIssuer !== issuer) return null;
      if (typeof jwksUri !== "string" || parseOidcUrl(jwksUri) === null) return null;
      return jwksUri;
    } catch {
      return null;
    }
  }
}

function nonNegativeInt(value: number | undefined, fallback: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return fallback;
  return Math.floor(value);
}

/** The response body as text, or `null` when it is longer than `max` bytes. */
async function readCapped(response: Response, max: number): Promise<string | null> {
  const declared = Number(response.headers.get("content-length") ?? "");
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
}
