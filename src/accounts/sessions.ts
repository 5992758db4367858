/**
 * Session JWTs (ES256) signed by the server key in the data dir. The key is made on first use
 * and kept in `<data_dir>/signing-key.json` (mode 0600), so tokens survive restarts and
 * `svc admin token` can mint them without the server.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK, jwtVerify, SignJWT } from "jose";

const ISSUER = "svc";
const ALG = "ES256";

export interface SessionClaims {
  userId: string;
  orgId: string;
  sessionVersion: number;
}

export class SessionSigner {
  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
  ) {}

  static async load(dataDir: string): Promise<SessionSigner> {
    const file = join(dataDir, "signing-key.json");
    let jwk: JWK;
    if (existsSync(file)) {
      jwk = JSON.parse(readFileSync(file, "utf8")) as JWK;
    } else {
      const pair = await generateKeyPair(ALG, { extractable: true });
      jwk = await exportJWK(pair.privateKey);
      try {
        writeFileSync(file, JSON.stringify(jwk), { mode: 0o600, flag: "wx" });
      } catch (error) {
        // Another process started at the same moment and wrote its key first: use that one.
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        jwk = JSON.parse(readFileSync(file, "utf8")) as JWK;
      }
    }
    chmodSync(file, 0o600);
    const { d: _d, ...publicJwk } = jwk;
    const privateKey = (await importJWK(jwk, ALG)) as CryptoKey;
    const publicKey = (await importJWK(publicJwk, ALG)) as CryptoKey;
    return new SessionSigner(privateKey, publicKey);
  }

  async sign(
    claims: SessionClaims,
    ttlMs: number,
    now = Date.now(),
  ): Promise<{ token: string; expiresAt: number }> {
    const expiresAt = Math.floor((now + ttlMs) / 1000) * 1000;
    const token = await new SignJWT({ org: claims.orgId, sv: claims.sessionVersion })
      .setProtectedHeader({ alg: ALG, typ: "JWT" })
      .setIssuer(ISSUER)
      .setSubject(claims.userId)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(expiresAt / 1000)
      .sign(this.privateKey);
    return { token, expiresAt };
  }

  /** The claims of a valid, unexpired token of ours, or null. */
  async verify(token: string): Promise<SessionClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.publicKey, { issuer: ISSUER, algorithms: [ALG] });
      if (
        typeof payload.sub !== "string" ||
        typeof payload.org !== "string" ||
        typeof payload.sv !== "number"
      ) {
        return null;
      }
      return { userId: payload.sub, orgId: payload.org, sessionVersion: payload.sv };
    } catch {
      return null;
    }
  }
}
