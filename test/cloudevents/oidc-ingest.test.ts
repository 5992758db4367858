/**
 * CloudEvents ingest authenticated by OIDC through a real `svc serve` (DESIGN §7):
 * `POST /api/v1/cloudevents/ingest/{org_slug}` with `Authorization: Bearer <JWT>` issued by the
 * org's configured issuer (a loopback issuer from test/support/oidc-issuer.ts). Accepted tokens
 * land in the org's event log; every refusal is the same 401; keys rotated at the issuer are
 * picked up without a restart; replies that arrive by OIDC speak for no channel and are refused.
 * Black-box: HTTP (the `cloudevents` SDK builds the messages) and the admin CLI.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CloudEvent, HTTP } from "cloudevents";
import { generateKeyPair, SignJWT } from "jose";
import { type Client, secondOrg, TestServer } from "../support/harness.ts";
import { type OidcIssuer, startOidcIssuer } from "../support/oidc-issuer.ts";

const SLOW = 30_000;
const AUD = "svc";
const SOURCE = "/tests/oidc";
const TYPE = "com.example.oidc.ping";
const now = () => Math.floor(Date.now() / 1000);

let idp: OidcIssuer;
let server: TestServer;
let api: Client;
let slug: string;
/** An admin JWT for the reply audit feed. */
let feedJwt: string;
/** A second org with no OIDC settings. */
let other: { slug: string; api: Client };

interface Sent {
  status: number;
  body: any;
  event: CloudEvent<unknown>;
}

function event(type = TYPE, data: unknown = { n: 1 }): CloudEvent<unknown> {
  return new CloudEvent<unknown>({ id: crypto.randomUUID(), source: SOURCE, type, data });
}

/** Sends one SDK event to `/ingest/{path}` with the given Authorization header (if any). */
async function send(
  path: string,
  authorization: string | null,
  ce: CloudEvent<unknown> = event(),
  mode: "structured" | "binary" = "structured",
): Promise<Sent> {
  const message = mode === "structured" ? HTTP.structured(ce) : HTTP.binary(ce);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers[name] = String(value);
  }
  if (authorization !== null) headers.authorization = authorization;
  const res = await fetch(`${server.base}/api/v1/cloudevents/ingest/${path}`, {
    method: "POST",
    headers,
    body: message.body as string,
  });
  return { status: res.status, body: await res.json(), event: ce };
}

const bearer = (jwt: string) => `Bearer ${jwt}`;

function expect401(res: Sent) {
  expect(res.status).toBe(401);
  expect(res.body.error.code).toBe("unauthenticated");
}

/** Events of the org's log with these ids, as the org's consumer sees them. */
async function stored(ids: string[], client = api): Promise<any[]> {
  const res = await client.get(`/api/v1/cloudevents/poll?filter=com.example.*&wait=0&limit=1000`);
  expect(res.status).toBe(200);
  return res.body.data.filter((e: { id: string }) => ids.includes(e.id));
}

async function putIngestOidc(client: Client, oidc: { issuer: string; audiences: string[] } | null) {
  const res = await client.put("/api/v1/org/settings", { cloudevents: { ingest: { oidc } } });
  expect(res.status).toBe(200);
  expect(res.body.cloudevents.ingest.oidc).toEqual(oidc);
}

beforeAll(async () => {
  idp = await startOidcIssuer();
  server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "10000" } });
  api = server.client();
  slug = server.orgSlug;
  await putIngestOidc(api, { issuer: idp.issuer, audiences: [AUD] });
  const key = await api.post("/api/v1/api-keys", { name: "feed", scopes: ["admin"], service: true });
  const minted = await server.client(key.body.secret).post("/api/v1/auth/token", {});
  if (minted.status !== 201) throw new Error(`mint: ${minted.text}`);
  feedJwt = minted.body.token;
  const created = await secondOrg(server);
  other = { slug: created.slug, api: server.client(created.key) };
}, SLOW);
afterAll(async () => {
  await server.dispose();
  idp.stop();
});

describe("accepted", () => {
  test(
    "a JWT of the org's issuer for audience svc: 202, and the events are in the org's log",
    async () => {
      const jwt = await idp.sign({ sub: "ci", aud: AUD });
      const structured = await send(slug, bearer(jwt));
      expect([structured.status, structured.body]).toEqual([202, { accepted: 1 }]);
      const binary = await send(slug, `bearer ${jwt}`, event(TYPE, { mode: "binary" }), "binary");
      expect([binary.status, binary.body]).toEqual([202, { accepted: 1 }]);
      const batchEvents = [event(), event()];
      const batch = await api
        .as(jwt)
        .post(`/api/v1/cloudevents/ingest/${slug}`, JSON.stringify(batchEvents.map((e) => e.toJSON())), {
          "content-type": "application/cloudevents-batch+json",
        });
      expect([batch.status, batch.body]).toEqual([202, { accepted: 2 }]);

      const ids = [structured.event.id, binary.event.id, ...batchEvents.map((e) => e.id)];
      const got = await stored(ids);
      expect(got.map((e) => e.id)).toEqual(ids);
      expect(got[0]).toMatchObject({ specversion: "1.0", source: SOURCE, type: TYPE, data: { n: 1 } });
      expect(got[1].data).toEqual({ mode: "binary" });
      // Nothing of it reached the other org.
      expect(await stored(ids, other.api)).toEqual([]);
    },
    SLOW,
  );

  test(
    "aud may be an array naming svc; any configured audience matches",
    async () => {
      const array = await send(slug, bearer(await idp.sign({ aud: ["someone", AUD] })));
      expect(array.status).toBe(202);
      await putIngestOidc(api, { issuer: idp.issuer, audiences: ["first", AUD, "third"] });
      try {
        expect((await send(slug, bearer(await idp.sign({ aud: "third" })))).status).toBe(202);
        expect((await send(slug, bearer(await idp.sign({ aud: AUD })))).status).toBe(202);
      } finally {
        await putIngestOidc(api, { issuer: idp.issuer, audiences: [AUD] });
      }
      expect401(await send(slug, bearer(await idp.sign({ aud: "third" }))));
    },
    SLOW,
  );
});

describe("refused: 401 unauthenticated, nothing stored", () => {
  test(
    "wrong or missing audience, expired, no exp, not yet valid, wrong issuer claim",
    async () => {
      const tokens = [
        await idp.sign({ aud: "not-svc" }),
        await idp.sign({ aud: ["a", "b"] }),
        await idp.sign({}),
        await idp.sign({ aud: AUD, iat: now() - 600, exp: now() - 60 }),
        await idp.sign({ aud: AUD }, { expiresIn: null }),
        await idp.sign({ aud: AUD, nbf: now() + 600 }),
        await idp.sign({ aud: AUD, iss: "https://issuer.example.com" }),
        await idp.sign({ aud: AUD, iss: `${idp.issuer}/` }),
      ];
      const sent: Sent[] = [];
      for (const jwt of tokens) sent.push(await send(slug, bearer(jwt)));
      const messages = new Set<string>();
      for (const res of sent) {
        expect401(res);
        messages.add(res.body.error.message);
      }
      // The same message for every failure.
      expect(messages.size).toBe(1);
      expect(await stored(sent.map((s) => s.event.id))).toEqual([]);
    },
    SLOW,
  );

  test(
    "signed by a key the issuer does not publish, or by another issuer, or with alg none / HS256",
    async () => {
      const foreign = await startOidcIssuer();
      try {
        const { privateKey } = await generateKeyPair("ES256");
        const claims = { iss: idp.issuer, aud: AUD };
        const unknownKid = await new SignJWT(claims)
          .setProtectedHeader({ alg: "ES256", kid: "not-published", typ: "JWT" })
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(privateKey);
        const stolenKid = await new SignJWT(claims)
          .setProtectedHeader({ alg: "ES256", kid: idp.currentKid, typ: "JWT" })
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(privateKey);
        const hmac = await new SignJWT(claims)
          .setProtectedHeader({ alg: "HS256", typ: "JWT" })
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(new TextEncoder().encode("a shared secret that is long enough"));
        const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
        const none = `${b64({ alg: "none", typ: "JWT" })}.${b64({ ...claims, exp: now() + 300 })}.`;
        const tokens = [
          unknownKid,
          stolenKid,
          hmac,
          none,
          // Another issuer's token, with its own iss, or claiming ours.
          await foreign.sign({ aud: AUD }),
          await foreign.sign({ aud: AUD, iss: idp.issuer }),
        ];
        const sent: Sent[] = [];
        for (const jwt of tokens) sent.push(await send(slug, bearer(jwt)));
        for (const res of sent) expect401(res);
        expect(await stored(sent.map((s) => s.event.id))).toEqual([]);
      } finally {
        foreign.stop();
      }
    },
    SLOW,
  );

  test(
    "a malformed Authorization header",
    async () => {
      const jwt = await idp.sign({ aud: AUD });
      for (const header of ["Bearer", "Bearer not.a.jwt", `Basic ${jwt}`, jwt, `Bearer ${jwt} extra`]) {
        expect401(await send(slug, header));
      }
    },
    SLOW,
  );

  test(
    "the path must be the slug of an org whose issuer this is: unknown slug, another org, an ingest token",
    async () => {
      const jwt = await idp.sign({ aud: AUD });
      expect401(await send("no-such-org", bearer(jwt)));
      // The other org has no OIDC settings at all.
      expect401(await send(other.slug, bearer(jwt)));
      // With a bearer JWT the path is read as a slug: an ingest token there is no org.
      expect401(await send(server.init?.ingest_token.token as string, bearer(jwt)));
      // An ingest token with a stray JWT is not an ingest-token request either.
      const token = server.init?.ingest_token.token as string;
      expect401(await send(token, "Bearer x.y.z"));
      // Without the header the same token works.
      expect((await send(token, null)).status).toBe(202);
      // A JWT signed for svc but for the other org's settings with another audience.
      await putIngestOidc(other.api, { issuer: idp.issuer, audiences: ["other-aud"] });
      try {
        expect401(await send(other.slug, bearer(jwt)));
        const ok = await send(other.slug, bearer(await idp.sign({ aud: "other-aud" })));
        expect(ok.status).toBe(202);
        expect(await stored([ok.event.id], other.api)).toHaveLength(1);
        expect(await stored([ok.event.id])).toEqual([]);
        // That token is not valid for this org (its audiences are [svc]).
        expect401(await send(slug, bearer(await idp.sign({ aud: "other-aud" }))));
      } finally {
        await putIngestOidc(other.api, null);
      }
      expect401(await send(other.slug, bearer(await idp.sign({ aud: "other-aud" }))));
    },
    SLOW,
  );

  test(
    "the configured issuer is another one: our issuer's valid token is refused; clearing OIDC refuses at once",
    async () => {
      const second = await startOidcIssuer();
      try {
        await putIngestOidc(api, { issuer: second.issuer, audiences: [AUD] });
        expect401(await send(slug, bearer(await idp.sign({ aud: AUD }))));
        expect((await send(slug, bearer(await second.sign({ aud: AUD })))).status).toBe(202);
        await putIngestOidc(api, null);
        expect401(await send(slug, bearer(await second.sign({ aud: AUD }))));
      } finally {
        await putIngestOidc(api, { issuer: idp.issuer, audiences: [AUD] });
        second.stop();
      }
      expect((await send(slug, bearer(await idp.sign({ aud: AUD })))).status).toBe(202);
    },
    SLOW,
  );

  test(
    "settings refuse an http issuer that is not on loopback",
    async () => {
      const res = await api.put("/api/v1/org/settings", {
        cloudevents: { ingest: { oidc: { issuer: "http://issuer.example.com", audiences: [AUD] } } },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      const settings = await api.get("/api/v1/org/settings");
      expect(settings.body.cloudevents.ingest.oidc).toEqual({ issuer: idp.issuer, audiences: [AUD] });
    },
    SLOW,
  );
});

describe("key rotation", () => {
  test(
    "a key rotated in at the issuer is accepted without a restart (after the 5 s JWKS cooldown)",
    async () => {
      // Make sure the current key set is cached.
      expect((await send(slug, bearer(await idp.sign({ aud: AUD })))).status).toBe(202);
      const oldKid = idp.currentKid;
      const fetchesBefore = idp.requests.jwks;
      await idp.rotate();
      expect(idp.currentKid).not.toBe(oldKid);
      const rotatedAt = Date.now();
      let accepted: Sent | null = null;
      const ids: string[] = [];
      while (Date.now() - rotatedAt < 9_000) {
        const res = await send(slug, bearer(await idp.sign({ aud: AUD })));
        ids.push(res.event.id);
        if (res.status === 202) {
          accepted = res;
          break;
        }
        expect401(res);
        await Bun.sleep(250);
      }
      expect(accepted?.status).toBe(202);
      // Within the cooldown (5 s) plus the retry step.
      expect(Date.now() - rotatedAt).toBeLessThan(6_500);
      expect(idp.requests.jwks).toBeGreaterThan(fetchesBefore);
      expect(await stored([accepted?.event.id as string])).toHaveLength(1);
      // The old key is still published: its tokens still work.
      expect((await send(slug, bearer(await idp.sign({ aud: AUD }, { kid: oldKid })))).status).toBe(202);
      expect(server.proc.exitCode).toBeNull();
    },
    SLOW,
  );
});

describe("replies by OIDC", () => {
  test(
    "a reply that arrives by OIDC speaks for no channel: rejected:trust_required, the alert unchanged",
    async () => {
      const monitor = await api.post("/api/v1/monitors", { name: "oidc replies", type: "event" });
      expect(monitor.status).toBe(201);
      const trigger = await api.as().post("/api/v1/events", {
        routing_key: monitor.body.integration_key,
        event_action: "trigger",
        dedup_key: "k",
        payload: { summary: "Database down", source: "db01", severity: "critical" },
      });
      expect(trigger.status).toBe(202);
      const alert = (await api.get(`/api/v1/alerts?monitor_id=${monitor.body.id}`)).body.data[0];
      const trusted = await api.post("/api/v1/notification-channels", {
        name: "trusted",
        type: "cloudevents",
        config: {},
        trusted: true,
      });
      expect(trusted.status).toBe(201);

      const jwt = await idp.sign({ aud: AUD });
      const replies = [
        event("run.service.reply.alert.claimed.v1", { alert_id: alert.id, outbound_event_id: "evt_x" }),
        event("run.service.reply.alert.resolved.v1", {
          alert_id: alert.id,
          outbound_event_id: "evt_y",
          channel_id: trusted.body.id,
        }),
      ];
      for (const reply of replies) {
        const res = await send(slug, bearer(jwt), reply, "binary");
        expect([res.status, res.body]).toEqual([202, { accepted: 1 }]);
      }
      const feed = await server.client(feedJwt).get(`/api/v1/admin/cloudevents/replies?alert_id=${alert.id}`);
      expect(feed.status).toBe(200);
      expect(
        feed.body.data.map((r: any) => [
          r.event_id,
          r.outcome,
          r.channel_id,
          r.ingest_token_id,
          r.event_source,
        ]),
      ).toEqual(replies.map((r) => [r.id, "rejected:trust_required", null, null, SOURCE]).reverse());
      const after = (await api.get(`/api/v1/alerts/${alert.id}`)).body;
      expect([after.status, after.acknowledged_by, after.resolved_by]).toEqual(["firing", null, null]);
      const timeline = (await api.get(`/api/v1/alerts/${alert.id}/timeline`)).body.data;
      expect(timeline.filter((e: { type: string }) => e.type === "reply")).toEqual([]);
    },
    SLOW,
  );
});
