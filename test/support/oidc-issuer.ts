/**
 * A tiny OIDC issuer for tests: `Bun.serve` on a random loopback port (or a given one, to bring an
 * issuer back where a stopped one was), serving `/.well-known/openid-configuration` and `/jwks`
 * with jose-generated ES256 keys. `sign` issues JWTs with the current signing key; `rotate` adds a
 * new key (new kid), makes it the signing key and keeps the old one published.
 */
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";

export interface OidcIssuer {
  /** `http://127.0.0.1:<port>` — no trailing slash; the discovery document names exactly this. */
  issuer: string;
  port: number;
  /** The kid `sign` uses by default. */
  readonly currentKid: string;
  /**
   * A JWT (ES256, `typ: JWT`) with `iss` = issuer, `iat` = now and `exp` = now + `expiresIn`
   * (default `5m`; `null` leaves `exp` out); `claims` are merged over these (so they may replace
   * `iss`, `iat`, `exp`). `kid` picks one of the issuer's keys (default: the current signing key).
   */
  sign(
    claims: Record<string, unknown>,
    options?: { expiresIn?: string | null; kid?: string },
  ): Promise<string>;
  /** Adds a new key with a new kid and makes it the signing key; older keys stay published. */
  rotate(): Promise<void>;
  /** Stops publishing the key `kid` (it can still sign). */
  unpublish(kid: string): void;
  /** Makes discovery answer 503 (`"status"`), invalid JSON (`"json"`), or normally again (`null`). */
  breakDiscovery(mode: "status" | "json" | null): void;
  /** Requests served so far, per endpoint. */
  requests: { discovery: number; jwks: number };
  stop(): void;
}

interface IssuerKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  published: boolean;
}

let kidCounter = 0;

async function newKey(): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = `key-${++kidCounter}-${crypto.randomUUID().slice(0, 8)}`;
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  return { kid, privateKey, publicJwk, published: true };
}

export async function startOidcIssuer(options: { port?: number } = {}): Promise<OidcIssuer> {
  const keys: IssuerKey[] = [await newKey()];
  let current = keys[0] as IssuerKey;
  let discoveryFailure: "status" | "json" | null = null;
  const requests = { discovery: 0, jwks: 0 };
  let issuer = "";

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    fetch(req) {
      const { pathname } = new URL(req.url);
      if (pathname === "/.well-known/openid-configuration") {
        requests.discovery++;
        if (discoveryFailure === "status") return new Response("unavailable", { status: 503 });
        if (discoveryFailure === "json") {
          return new Response("{ not json", { headers: { "content-type": "application/json" } });
        }
        return Response.json({
          issuer,
          jwks_uri: `${issuer}/jwks`,
          id_token_signing_alg_values_supported: ["ES256"],
          response_types_supported: ["id_token"],
          subject_types_supported: ["public"],
        });
      }
      if (pathname === "/jwks") {
        requests.jwks++;
        return Response.json({ keys: keys.filter((k) => k.published).map((k) => k.publicJwk) });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const port = server.port as number;
  issuer = `http://127.0.0.1:${port}`;

  return {
    issuer,
    port,
    get currentKid() {
      return current.kid;
    },
    async sign(claims, signOptions = {}) {
      const key = signOptions.kid ? keys.find((k) => k.kid === signOptions.kid) : current;
      if (!key) throw new Error(`unknown kid ${signOptions.kid}`);
      const jwt = new SignJWT({ iss: issuer, ...claims }).setProtectedHeader({
        alg: "ES256",
        kid: key.kid,
        typ: "JWT",
      });
      if (claims.iat === undefined) jwt.setIssuedAt();
      if (claims.exp === undefined && signOptions.expiresIn !== null) {
        jwt.setExpirationTime(signOptions.expiresIn ?? "5m");
      }
      return jwt.sign(key.privateKey);
    },
    async rotate() {
      const key = await newKey();
      keys.push(key);
      current = key;
    },
    unpublish(kid) {
      for (const k of keys) if (k.kid === kid) k.published = false;
    },
    breakDiscovery(mode) {
      discoveryFailure = mode;
    },
    requests,
    stop() {
      server.stop(true);
    },
  };
}
