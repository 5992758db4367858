import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, spyOn, test } from "bun:test";
import { generateKeyPair, SignJWT } from "jose";
import { isAllowedIssuer, isLoopbackHost, OidcVerifier } from "../../src/cloudevents/oidc.ts";
import { type OidcIssuer, startOidcIssuer } from "../support/oidc-issuer.ts";

const AUD = "svc-ingest";
const now = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

let idp: OidcIssuer;

beforeAll(async () => {
  idp = await startOidcIssuer();
});
afterAll(() => idp.stop());

describe("accepted tokens", () => {
  test("a valid token returns its claims", async () => {
    const verifier = new OidcVerifier();
    const token = await idp.sign({ sub: "ci-bot", aud: AUD, custom: 42 });
    const claims = await verifier.verify(token, idp.issuer, [AUD]);
    expect(claims).toMatchObject({ iss: idp.issuer, sub: "ci-bot", aud: AUD, custom: 42 });
    expect(typeof claims?.exp).toBe("number");
  });

  test("audiences: any configured value matches, token `aud` may be an array", async () => {
    const verifier = new OidcVerifier();
    const audiences = ["first", "second", "third"];
    expect(await verifier.verify(await idp.sign({ aud: "second" }), idp.issuer, audiences)).not.toBeNull();
    expect(
      await verifier.verify(await idp.sign({ aud: ["x", "third"] }), idp.issuer, audiences),
    ).not.toBeNull();
    expect(await verifier.verify(await idp.sign({ aud: ["x", "y"] }), idp.issuer, audiences)).toBeNull();
    expect(await verifier.verify(await idp.sign({ aud: "second" }), idp.issuer, [])).toBeNull();
  });

  test("nbf in the past is fine", async () => {
    const verifier = new OidcVerifier();
    const token = await idp.sign({ aud: AUD, nbf: now() - 60 });
    expect(await verifier.verify(token, idp.issuer, [AUD])).not.toBeNull();
  });

  test("discovery and JWKS are fetched once and shared by concurrent requests", async () => {
    const issuer = await startOidcIssuer();
    try {
      const verifier = new OidcVerifier();
      const token = await issuer.sign({ aud: AUD });
      const results = await Promise.all(
        Array.from({ length: 10 }, () => verifier.verify(token, issuer.issuer, [AUD])),
      );
      expect(results.every((r) => r !== null)).toBe(true);
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests).toEqual({ discovery: 1, jwks: 1 });
    } finally {
      issuer.stop();
    }
  });
});

describe("refused tokens", () => {
  const verifier = new OidcVerifier();

  test("wrong issuer claim", async () => {
    const token = await idp.sign({ aud: AUD, iss: "https://other.example.com" });
    expect(await verifier.verify(token, idp.issuer, [AUD])).toBeNull();
  });

  test("issuer must match exactly (a trailing slash is another issuer)", async () => {
    const token = await idp.sign({ aud: AUD });
    // Discovery for `issuer/` names `issuer`, not `issuer/`: refused.
    expect(await verifier.verify(token, `${idp.issuer}/`, [AUD])).toBeNull();
    const slashed = await idp.sign({ aud: AUD, iss: `${idp.issuer}/` });
    expect(await verifier.verify(slashed, idp.issuer, [AUD])).toBeNull();
  });

  test("wrong or missing audience", async () => {
    expect(await verifier.verify(await idp.sign({ aud: "someone-else" }), idp.issuer, [AUD])).toBeNull();
    expect(await verifier.verify(await idp.sign({}), idp.issuer, [AUD])).toBeNull();
  });

  test("expired", async () => {
    const token = await idp.sign({ aud: AUD, iat: now() - 120, exp: now() - 60 });
    expect(await verifier.verify(token, idp.issuer, [AUD])).toBeNull();
    const justNow = await idp.sign({ aud: AUD, exp: now() });
    expect(await verifier.verify(justNow, idp.issuer, [AUD])).toBeNull();
  });

  test("no exp at all", async () => {
    const token = await idp.sign({ aud: AUD }, { expiresIn: null });
    expect(await verifier.verify(token, idp.issuer, [AUD])).toBeNull();
  });

  test("not yet valid (nbf in the future)", async () => {
    const token = await idp.sign({ aud: AUD, nbf: now() + 300 });
    expect(await verifier.verify(token, idp.issuer, [AUD])).toBeNull();
  });

  test("signed by a key the issuer does not publish", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const payload = { iss: idp.issuer, aud: AUD };
    const unknownKid = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", kid: "not-published" })
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    expect(await verifier.verify(unknownKid, idp.issuer, [AUD])).toBeNull();
    // Same kid as the issuer's key, different key: the signature does not verify.
    const forgedKid = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", kid: idp.currentKid })
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    expect(await verifier.verify(forgedKid, idp.issuer, [AUD])).toBeNull();
    // No kid at all.
    const noKid = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256" })
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    expect(await verifier.verify(noKid, idp.issuer, [AUD])).toBeNull();
  });

  test("a key the issuer stopped publishing", async () => {
    const issuer = await startOidcIssuer();
    try {
      const oldKid = issuer.currentKid;
      await issuer.rotate();
      issuer.unpublish(oldKid);
      const token = await issuer.sign({ aud: AUD }, { kid: oldKid });
      expect(await new OidcVerifier().verify(token, issuer.issuer, [AUD])).toBeNull();
    } finally {
      issuer.stop();
    }
  });

  test("alg none and HS256 are refused, without contacting the issuer", async () => {
    const issuer = await startOidcIssuer();
    try {
      const fresh = new OidcVerifier();
      const claims = { iss: issuer.issuer, aud: AUD, exp: now() + 300 };
      const none = `${b64url({ alg: "none", typ: "JWT" })}.${b64url(claims)}.`;
      expect(await fresh.verify(none, issuer.issuer, [AUD])).toBeNull();

      // HS256 keyed with the issuer's public JWK (the classic key-confusion attempt) and a plain secret.
      const good = await issuer.sign({ aud: AUD });
      const jwks = (await (await fetch(`${issuer.issuer}/jwks`)).json()) as { keys: object[] };
      const secret = new TextEncoder().encode(JSON.stringify(jwks.keys[0]));
      for (const key of [secret, new TextEncoder().encode("shared-secret-0123456789abcdef0123")]) {
        const hs = await new SignJWT(claims)
          .setProtectedHeader({ alg: "HS256", kid: issuer.currentKid })
          .sign(key);
        expect(await fresh.verify(hs, issuer.issuer, [AUD])).toBeNull();
      }
      expect(issuer.requests.discovery).toBe(0);
      // The verifier still works for a real token afterwards.
      expect(await fresh.verify(good, issuer.issuer, [AUD])).not.toBeNull();
    } finally {
      issuer.stop();
    }
  });

  test("garbage never throws", async () => {
    const v = new OidcVerifier();
    for (const token of ["", "abc", "a.b.c", "...", "x".repeat(20_000), `${b64url({ alg: "ES256" })}.e30.`]) {
      expect(await v.verify(token, idp.issuer, [AUD])).toBeNull();
    }
    expect(await v.verify(undefined as any, idp.issuer, [AUD])).toBeNull();
    expect(await v.verify(await idp.sign({ aud: AUD }), undefined as any, [AUD])).toBeNull();
    expect(await v.verify(await idp.sign({ aud: AUD }), idp.issuer, undefined as any)).toBeNull();
  });
});

describe("key rotation", () => {
  afterEach(() => setSystemTime());

  test("a key rotated in at the issuer is accepted by the same verifier (default cooldown)", async () => {
    const issuer = await startOidcIssuer();
    try {
      const verifier = new OidcVerifier();
      const oldToken = await issuer.sign({ aud: AUD });
      expect(await verifier.verify(oldToken, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests.jwks).toBe(1);

      await issuer.rotate();
      const newToken = await issuer.sign({ aud: AUD });
      // Past the (5 s) cooldown since the last JWKS fetch, an unknown kid triggers a refetch.
      setSystemTime(new Date(Date.now() + 6_000));
      expect(await verifier.verify(newToken, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests.jwks).toBe(2);
      // The old key is still published and still accepted.
      expect(await verifier.verify(oldToken, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests.jwks).toBe(2);
    } finally {
      issuer.stop();
    }
  });

  test("unknown kids refetch the JWKS at most once per cooldown", async () => {
    const issuer = await startOidcIssuer();
    try {
      const verifier = new OidcVerifier({ jwksCooldownMs: 300 });
      expect(await verifier.verify(await issuer.sign({ aud: AUD }), issuer.issuer, [AUD])).not.toBeNull();
      await issuer.rotate();
      const newToken = await issuer.sign({ aud: AUD });
      // Right after a fetch the cached set is trusted; the new kid is not found yet.
      expect(await verifier.verify(newToken, issuer.issuer, [AUD])).toBeNull();
      expect(await verifier.verify(newToken, issuer.issuer, [AUD])).toBeNull();
      expect(issuer.requests.jwks).toBe(1);
      await sleep(350);
      expect(await verifier.verify(newToken, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests.jwks).toBe(2);
    } finally {
      issuer.stop();
    }
  });
});

describe("discovery", () => {
  test("unreachable issuer → null, then accepted once it is back (failure not cached)", async () => {
    const first = await startOidcIssuer();
    const { port, issuer } = first;
    first.stop();
    const verifier = new OidcVerifier({ fetchTimeoutMs: 1_000 });
    const stale = await first.sign({ aud: AUD });
    expect(await verifier.verify(stale, issuer, [AUD])).toBeNull();

    const back = await startOidcIssuer({ port });
    try {
      expect(back.issuer).toBe(issuer);
      expect(await verifier.verify(await back.sign({ aud: AUD }), issuer, [AUD])).not.toBeNull();
      // Tokens of the old incarnation's key are not in the new JWKS.
      expect(await verifier.verify(stale, issuer, [AUD])).toBeNull();
    } finally {
      back.stop();
    }
  });

  test.each(["status", "json"] as const)(
    "discovery failure (%s) → null, retried on the next request",
    async (mode) => {
      const issuer = await startOidcIssuer();
      try {
        const verifier = new OidcVerifier();
        const token = await issuer.sign({ aud: AUD });
        issuer.breakDiscovery(mode);
        expect(await verifier.verify(token, issuer.issuer, [AUD])).toBeNull();
        expect(await verifier.verify(token, issuer.issuer, [AUD])).toBeNull();
        expect(issuer.requests).toEqual({ discovery: 2, jwks: 0 });
        issuer.breakDiscovery(null);
        expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
        expect(issuer.requests).toEqual({ discovery: 3, jwks: 1 });
      } finally {
        issuer.stop();
      }
    },
  );

  test("the discovery document is refreshed after its TTL; the JWKS cache survives it", async () => {
    const issuer = await startOidcIssuer();
    try {
      const verifier = new OidcVerifier({ discoveryTtlMs: 50 });
      const token = await issuer.sign({ aud: AUD });
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests).toEqual({ discovery: 1, jwks: 1 });
      await sleep(80);
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests).toEqual({ discovery: 2, jwks: 1 });
    } finally {
      issuer.stop();
    }
  });

  test("a failed refresh keeps using the previous discovery document", async () => {
    const issuer = await startOidcIssuer();
    try {
      const verifier = new OidcVerifier({ discoveryTtlMs: 50 });
      const token = await issuer.sign({ aud: AUD });
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      issuer.breakDiscovery("status");
      await sleep(80);
      expect(await verifier.verify(token, issuer.issuer, [AUD])).not.toBeNull();
      expect(issuer.requests.discovery).toBe(2);
    } finally {
      issuer.stop();
    }
  });
});

describe("issuer URLs", () => {
  test("https anywhere, http only on loopback hosts", () => {
    for (const ok of [
      "https://login.example.com",
      "https://login.example.com/tenant/v2.0",
      "http://localhost:8080",
      "http://127.0.0.1:9000",
      "http://127.1.2.3",
      "http://[::1]:4000/realms/x",
    ]) {
      expect({ ok, allowed: isAllowedIssuer(ok) }).toEqual({ ok, allowed: true });
    }
    for (const bad of [
      "http://login.example.com",
      "http://127.0.0.1.nip.io",
      "http://localhost.example.com",
      "http://10.0.0.1",
      "ftp://127.0.0.1",
      "https://login.example.com/?tenant=x",
      "https://login.example.com/#x",
      "https://user:pw@login.example.com",
      "not a url",
      "",
    ]) {
      expect({ bad, allowed: isAllowedIssuer(bad) }).toEqual({ bad, allowed: false });
    }
    expect(isLoopbackHost("LOCALHOST")).toBe(true);
    expect(isLoopbackHost("128.0.0.1")).toBe(false);
  });

  test("a non-https, non-loopback issuer is refused without any request", async () => {
    const fetchSpy = spyOn(globalThis, "fetch");
    try {
      const verifier = new OidcVerifier();
      const token = await idp.sign({ aud: AUD, iss: "http://login.example.com" });
      expect(await verifier.verify(token, "http://login.example.com", [AUD])).toBeNull();
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });

  test("the test issuer publishes public keys only", async () => {
    const jwks = (await (await fetch(`${idp.issuer}/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const key of jwks.keys) expect(key.d).toBeUndefined();
  });
});
