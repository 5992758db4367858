/**
 * DESIGN §4 HTTP conventions, black-box through a real `svc serve`: the error envelope, body
 * reading (JSON only, objects only, strict fields, size limit), list envelopes and cursors,
 * timestamps and ids, Idempotency-Key, the OpenAPI document, health and metrics, RFC 3339 input.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, type Response2, TestServer } from "../support/harness.ts";

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SMALL_LIMIT = 2048;

let server: TestServer;
/** A second server whose `limits.max_request_bytes` is 2048. */
let small: TestServer;
let api: Client;

beforeAll(async () => {
  [server, small] = await Promise.all([
    TestServer.start(),
    TestServer.start({ env: { SVC_LIMITS_MAX_REQUEST_BYTES: String(SMALL_LIMIT) } }),
  ]);
  api = server.client();
}, 20_000);
afterAll(async () => {
  await Promise.all([server?.dispose(), small?.dispose()]);
});

/** A request with full control of headers and body (the harness client always sends JSON). */
async function raw(
  target: TestServer,
  method: string,
  path: string,
  init: { body?: string | ReadableStream<Uint8Array>; headers?: Record<string, string>; auth?: boolean } = {},
): Promise<Response2> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.auth !== false) headers.authorization = `Bearer ${target.init?.api_key.secret}`;
  const response = await fetch(`${target.base}${path}`, { method, headers, body: init.body });
  const text = await response.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** A body sent chunked, with no Content-Length, so only the bytes themselves can be counted. */
function streamed(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 512) controller.enqueue(bytes.slice(i, i + 512));
      controller.close();
    },
  });
}

/** Asserts the error envelope exactly: `{ error: { code, message, details? } }` and nothing else. */
function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.headers.get("content-type")).toStartWith("application/json");
  expect(Object.keys(res.body)).toEqual(["error"]);
  const keys = Object.keys(res.body.error).sort();
  expect(keys.every((k) => ["code", "details", "message"].includes(k))).toBe(true);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
  if ("details" in res.body.error) expect(typeof res.body.error.details).toBe("object");
  return res.body.error as { code: string; message: string; details?: any };
}

function fieldPaths(res: Response2): string[] {
  return (res.body.error.details.fields as { path: string; problem: string }[]).map((f) => f.path).sort();
}

async function listAll(client: Client, path: string): Promise<any[]> {
  const res = await client.get(`${path}?limit=200`);
  expect(res.status).toBe(200);
  expect(res.body.has_more).toBe(false);
  return res.body.data;
}

describe("error envelope and body reading", () => {
  test("an unknown route is 404 not_found in the envelope, with or without a credential", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/no-such-thing"],
      ["POST", "/api/v1/no-such-thing"],
      ["GET", "/nope"],
      ["GET", "/api/v2/users"],
    ] as const) {
      expectError(await raw(server, method, path), 404, "not_found");
      expectError(await raw(server, method, path, { auth: false }), 404, "not_found");
    }
  });

  test("malformed JSON is 400 validation_failed naming the body", async () => {
    for (const text of ['{"name": "x"', "{bad}", "{'name':'x'}", '{"name":"x"} trailing']) {
      const res = await raw(server, "POST", "/api/v1/teams", {
        body: text,
        headers: { "content-type": "application/json" },
      });
      const error = expectError(res, 400, "validation_failed");
      expect(error.details.fields).toEqual([{ path: "body", problem: expect.any(String) }]);
    }
    expect(await listAll(api, "/api/v1/teams")).toEqual([]);
  });

  test("JSON that is not an object is 400 (array, string, number, null)", async () => {
    for (const text of ['[{"name":"x"}]', '"x"', "42", "null", "true"]) {
      const res = await raw(server, "POST", "/api/v1/teams", {
        body: text,
        headers: { "content-type": "application/json" },
      });
      const error = expectError(res, 400, "validation_failed");
      expect(error.details.fields.map((f: { path: string }) => f.path)).toEqual(["body"]);
    }
    expect(await listAll(api, "/api/v1/teams")).toEqual([]);
  });

  test("wrong types and unknown fields are 400 listing every field path", async () => {
    const user = await api.post("/api/v1/users", { email: 42, role: "boss", surprise: true });
    expectError(user, 400, "validation_failed");
    expect(fieldPaths(user)).toEqual(["email", "role", "surprise"]);
    for (const f of user.body.error.details.fields) expect(f.problem).toBeString();

    const team = await api.post("/api/v1/teams", { name: 5, member_ids: "usr_x", colour: "red" });
    expectError(team, 400, "validation_failed");
    expect(fieldPaths(team)).toEqual(["colour", "member_ids", "name"]);

    const key = await api.post("/api/v1/api-keys", {
      name: "k",
      scopes: ["admin", "superuser"],
      service: "yes",
    });
    expectError(key, 400, "validation_failed");
    expect(fieldPaths(key)).toEqual(["scopes.1", "service"]);

    const missing = await api.post("/api/v1/users", {});
    expectError(missing, 400, "validation_failed");
    expect(fieldPaths(missing)).toEqual(["email", "role"]);

    const patch = await api.patch("/api/v1/org", { name: "", nickname: "x" });
    expectError(patch, 400, "validation_failed");
    expect(fieldPaths(patch)).toEqual(["name", "nickname"]);

    expect((await listAll(api, "/api/v1/users")).length).toBe(1);
    expect((await api.get("/api/v1/org")).body.name).toBe("Acme");
  });

  test("a body that is not JSON is 415 unsupported_media_type", async () => {
    for (const [type, body] of [
      ["text/plain", '{"name":"plain"}'],
      ["application/x-www-form-urlencoded", "name=form"],
      ["application/xml", "<team><name>xml</name></team>"],
    ] as const) {
      const res = await raw(server, "POST", "/api/v1/teams", { body, headers: { "content-type": type } });
      expectError(res, 415, "unsupported_media_type");
    }
    expect(await listAll(api, "/api/v1/teams")).toEqual([]);
  });

  test("a body over limits.max_request_bytes is 413 payload_too_large, however it is sent", async () => {
    const key = small.init?.api_key.secret;
    const json = { "content-type": "application/json", authorization: `Bearer ${key}` };
    const pad = (size: number) => {
      const start = '{"name":"padded"}';
      return start + " ".repeat(size - start.length);
    };

    // Declared by Content-Length.
    const declared = await raw(small, "POST", "/api/v1/teams", { body: pad(SMALL_LIMIT + 1), headers: json });
    expectError(declared, 413, "payload_too_large");
    // Chunked, no Content-Length.
    const chunked = await raw(small, "POST", "/api/v1/teams", {
      body: streamed(pad(SMALL_LIMIT * 4)),
      headers: json,
    });
    expectError(chunked, 413, "payload_too_large");
    // The limit counts bytes, not characters: 1100 two-byte characters are 2200+ bytes.
    const multibyte = await raw(small, "POST", "/api/v1/teams", {
      body: streamed(JSON.stringify({ name: "é".repeat(1100) })),
      headers: json,
    });
    expectError(multibyte, 413, "payload_too_large");
    // Far over the limit (and over any framework default) still gets the envelope.
    const huge = await raw(small, "POST", "/api/v1/teams", { body: pad(4 * 1024 * 1024), headers: json });
    expectError(huge, 413, "payload_too_large");

    expect(await listAll(small.client(), "/api/v1/teams")).toEqual([]);

    // Exactly at the limit is accepted.
    const atLimit = await raw(small, "POST", "/api/v1/teams", { body: pad(SMALL_LIMIT), headers: json });
    expect(atLimit.status).toBe(201);
    expect(atLimit.body.name).toBe("padded");
    const atLimitChunked = await raw(small, "POST", "/api/v1/teams", {
      body: streamed(pad(SMALL_LIMIT).replace("padded", "stream")),
      headers: json,
    });
    expect(atLimitChunked.status).toBe(201);
    expect((await listAll(small.client(), "/api/v1/teams")).map((t) => t.name).sort()).toEqual([
      "padded",
      "stream",
    ]);
  });
});

describe("lists and cursors", () => {
  test("a list is { data, next_cursor, has_more } and limit must be an integer 1..200", async () => {
    const res = await api.get("/api/v1/users");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["data", "has_more", "next_cursor"]);
    expect(res.body).toMatchObject({ next_cursor: null, has_more: false });
    expect(res.body.data).toBeArray();

    for (const limit of ["0", "201", "abc", "-1", "1.5", "true", "", "1e1"]) {
      const bad = await api.get(`/api/v1/users?limit=${limit}`);
      expectError(bad, 400, "validation_failed");
      expect(fieldPaths(bad)).toEqual(["limit"]);
    }
    for (const limit of ["1", "200"])
      expect((await api.get(`/api/v1/users?limit=${limit}`)).status).toBe(200);
  });

  test("unknown query parameters are 400 naming them", async () => {
    const list = await api.get("/api/v1/users?limit=5&sort=email");
    expectError(list, 400, "validation_failed");
    expect(fieldPaths(list)).toEqual(["sort"]);
    const single = await api.get("/api/v1/org?verbose=1");
    expectError(single, 400, "validation_failed");
    expect(fieldPaths(single)).toEqual(["verbose"]);
  });

  test("the default page is 50 and following next_cursor yields the rest", async () => {
    const created = await Promise.all(
      Array.from({ length: 55 }, (_, i) => api.post("/api/v1/teams", { name: `page-team-${i}` })),
    );
    expect(created.map((r) => r.status)).toEqual(Array(55).fill(201));

    const first = await api.get("/api/v1/teams");
    expect(first.status).toBe(200);
    expect(first.body.data.length).toBe(50);
    expect(first.body.has_more).toBe(true);
    expect(first.body.next_cursor).toBeString();

    const rest = await api.get(`/api/v1/teams?cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ has_more: false, next_cursor: null });
    const seen = [...first.body.data, ...rest.body.data].map((t: { id: string }) => t.id);
    expect(seen.length).toBe(55);
    expect(new Set(seen)).toEqual(new Set(created.map((r) => r.body.id)));
  });

  test("paging users with limit=1 returns every user exactly once", async () => {
    for (const n of [1, 2, 3, 4]) {
      expect((await api.post("/api/v1/users", { email: `pager${n}@acme.test`, role: "member" })).status).toBe(
        201,
      );
    }
    const all = (await listAll(api, "/api/v1/users")).map((u) => u.id);
    expect(all.length).toBe(5);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      const page = await api.get(`/api/v1/users?limit=1${query}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBe(1);
      seen.push(page.body.data[0].id);
      expect(page.body.has_more).toBe(page.body.next_cursor !== null);
      cursor = page.body.next_cursor;
      pages += 1;
      expect(pages).toBeLessThanOrEqual(5);
    } while (cursor !== null);
    expect(pages).toBe(5);
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(5);
  });

  test("a garbage cursor or another list's cursor is 400 invalid_cursor", async () => {
    expect((await api.post("/api/v1/api-keys", { name: "second", scopes: ["alerts"] })).status).toBe(201);
    const keysPage = await api.get("/api/v1/api-keys?limit=1");
    expect(keysPage.body.has_more).toBe(true);
    const keysCursor = keysPage.body.next_cursor as string;
    const teamsCursor = (await api.get("/api/v1/teams?limit=1")).body.next_cursor as string;
    const usersCursor = (await api.get("/api/v1/users?limit=1")).body.next_cursor as string;
    expect((await api.get(`/api/v1/users?cursor=${encodeURIComponent(usersCursor)}`)).status).toBe(200);

    const forged = Buffer.from(JSON.stringify({ users: 1 })).toString("base64url");
    // A real cursor with a stray character after it, or inside it, is no cursor either.
    const altered = [
      `${usersCursor}x`,
      `${usersCursor}=`,
      `${usersCursor.slice(0, 4)}.${usersCursor.slice(4)}`,
    ];
    for (const cursor of ["garbage", "!!!!", "eyJ", forged, keysCursor, teamsCursor, ...altered]) {
      const res = await api.get(`/api/v1/users?cursor=${encodeURIComponent(cursor)}`);
      expectError(res, 400, "invalid_cursor");
    }
    expectError(
      await api.get(`/api/v1/api-keys?cursor=${encodeURIComponent(usersCursor)}`),
      400,
      "invalid_cursor",
    );
  });
});

describe("timestamps and ids", () => {
  test("timestamps are UTC with milliseconds and Z; ids carry their prefix", async () => {
    const org = (await api.get("/api/v1/org")).body;
    const user = (await listAll(api, "/api/v1/users"))[0];
    const key = (await api.post("/api/v1/api-keys", { name: "ts", scopes: ["alerts"] })).body;
    const team = (await api.post("/api/v1/teams", { name: "ts-team" })).body;
    const token = (await api.post("/api/v1/org/ingest-tokens", { name: "ts-token" })).body;

    for (const [value, prefix] of [
      [org.id, "org"],
      [user.id, "usr"],
      [key.id, "key"],
      [key.user_id, "usr"],
      [team.id, "team"],
      [token.id, "tok"],
    ] as const) {
      expect(value).toMatch(new RegExp(`^${prefix}_[0-9a-z]{26}$`));
    }
    for (const value of [
      org.created_at,
      org.updated_at,
      user.created_at,
      key.created_at,
      key.expires_at,
      team.created_at,
      token.created_at,
    ]) {
      expect(value).toMatch(TIMESTAMP);
    }
  });

  test("ids sort by creation time", async () => {
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.push((await api.post("/api/v1/teams", { name: `sorted-${n}` })).body.id);
    expect([...ids].sort()).toEqual(ids);
  });
});

describe("Idempotency-Key", () => {
  test("a retry with the same key and body replays the response and creates nothing more", async () => {
    const headers = { "idempotency-key": "create-team-once" };
    const first = await api.post("/api/v1/teams", { name: "idempotent" }, headers);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();

    const again = await api.post("/api/v1/teams", { name: "idempotent" }, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);

    const teams = (await listAll(api, "/api/v1/teams")).filter((t) => t.name === "idempotent");
    expect(teams.map((t) => t.id)).toEqual([first.body.id]);
  });

  test("the same key with another body or another endpoint is 409 idempotency_conflict", async () => {
    const headers = { "idempotency-key": "conflicting" };
    expect((await api.post("/api/v1/teams", { name: "conflict-a" }, headers)).status).toBe(201);
    expectError(
      await api.post("/api/v1/teams", { name: "conflict-b" }, headers),
      409,
      "idempotency_conflict",
    );
    expectError(
      await api.post("/api/v1/users", { email: "conflict@acme.test", role: "viewer" }, headers),
      409,
      "idempotency_conflict",
    );
    const names = (await listAll(api, "/api/v1/teams")).map((t) => t.name);
    expect(names).toContain("conflict-a");
    expect(names).not.toContain("conflict-b");
    expect((await listAll(api, "/api/v1/users")).map((u) => u.email)).not.toContain("conflict@acme.test");
  });

  test("an api-key replay does not show the secret again, and only one key exists", async () => {
    const headers = { "idempotency-key": "key-once" };
    const body = { name: "replayed-key", scopes: ["incidents"] };
    const first = await api.post("/api/v1/api-keys", body, headers);
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(/^svc_[0-9A-Za-z]{40}$/);

    const again = await api.post("/api/v1/api-keys", body, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).not.toHaveProperty("secret");
    expect(again.text).not.toContain(first.body.secret);
    const { secret: _secret, ...withoutSecret } = first.body;
    expect(again.body).toEqual(withoutSecret);

    const keys = (await listAll(api, "/api/v1/api-keys")).filter((k) => k.name === "replayed-key");
    expect(keys.map((k) => k.id)).toEqual([first.body.id]);
  });

  test("an Idempotency-Key that is not 1-255 visible ASCII characters is 400", async () => {
    const res = await api.post("/api/v1/teams", { name: "long-key" }, { "idempotency-key": "k".repeat(256) });
    expectError(res, 400, "validation_failed");
    expect((await listAll(api, "/api/v1/teams")).map((t) => t.name)).not.toContain("long-key");
  });
});

describe("OpenAPI document", () => {
  test("GET /api/v1/openapi.json is OpenAPI 3.1 with every route and strict request schemas", async () => {
    const res = await api.as().get("/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const expected: Record<string, string[]> = {
      "/api/v1/org": ["get", "patch"],
      "/api/v1/org/settings": ["get", "put"],
      "/api/v1/org/transfer-ownership": ["post"],
      "/api/v1/org/ingest-tokens": ["get", "post"],
      "/api/v1/org/ingest-tokens/{id}": ["delete"],
      "/api/v1/users": ["get", "post"],
      "/api/v1/users/{id}": ["delete", "get", "patch"],
      "/api/v1/users/{id}/reset-password": ["post"],
      "/api/v1/teams": ["get", "post"],
      "/api/v1/teams/{id}": ["delete", "get", "patch"],
      "/api/v1/api-keys": ["get", "post"],
      "/api/v1/api-keys/{id}": ["delete", "get"],
      "/api/v1/auth/login": ["post"],
      "/api/v1/auth/accept-invite": ["post"],
      "/api/v1/auth/confirm-mfa": ["post"],
      "/api/v1/auth/reset-password": ["post"],
      "/api/v1/auth/token": ["post"],
    };
    for (const [path, methods] of Object.entries(expected)) {
      expect(Object.keys(res.body.paths[path] ?? {}).sort()).toEqual(methods);
    }
    const invite = res.body.paths["/api/v1/users"].post.requestBody.content["application/json"].schema;
    expect(invite.additionalProperties).toBe(false);
    expect(invite.required.sort()).toEqual(["email", "role"]);
    const param = res.body.paths["/api/v1/users/{id}"].get.parameters.find((p: any) => p.in === "path");
    expect(param).toMatchObject({ name: "id", required: true });
  });
});

describe("health and metrics", () => {
  test("/healthz and /readyz answer without a credential", async () => {
    const anon = api.as();
    expect((await anon.get("/healthz")).status).toBe(200);
    const ready = await anon.get("/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: "ready" });
  });

  test("/metrics is Prometheus text with request counts and key expiry", async () => {
    const never = await api.post("/api/v1/api-keys", {
      name: "forever",
      scopes: ["alerts"],
      expires_at: null,
    });
    expect(never.status).toBe(201);
    expect(never.body.expires_at).toBeNull();

    const res = await api.as().get("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    expect(res.text).toContain("# TYPE svc_http_requests_total counter");
    expect(res.text).toMatch(
      /^svc_http_requests_total\{[^}]*route="\/api\/v1\/teams"[^}]*status="201"[^}]*\} \d+$/m,
    );
    expect(res.text).toContain("# TYPE svc_api_key_days_to_expiry gauge");
    expect(res.text).toMatch(/^svc_notification_deliveries\{status="pending"\} 0$/m);
    expect(res.text).toMatch(/^svc_notification_deliveries\{status="dead"\} 0$/m);
    const initKey = server.init?.api_key.id as string;
    const initLine = new RegExp(
      `^svc_api_key_days_to_expiry\\{[^}]*key_id="${initKey}"[^}]*\\} ([-\\d.]+)$`,
      "m",
    );
    const days = Number(initLine.exec(res.text)?.[1]);
    expect(days).toBeGreaterThan(89);
    expect(days).toBeLessThanOrEqual(90);
    const neverLine = new RegExp(
      `^svc_api_key_days_to_expiry\\{[^}]*key_id="${never.body.id}"[^}]*\\} -1$`,
      "m",
    );
    expect(res.text).toMatch(neverLine);
  });
});

describe("RFC 3339 input", () => {
  test("an offset is accepted and returned as UTC with milliseconds", async () => {
    const res = await api.post("/api/v1/api-keys", {
      name: "offset",
      scopes: ["alerts"],
      expires_at: "2031-01-01T10:00:00+02:00",
    });
    expect(res.status).toBe(201);
    expect(res.body.expires_at).toBe("2031-01-01T08:00:00.000Z");
    const stored = await api.get(`/api/v1/api-keys/${res.body.id}`);
    expect(stored.body.expires_at).toBe("2031-01-01T08:00:00.000Z");

    const fraction = await api.post("/api/v1/api-keys", {
      name: "fraction",
      scopes: ["alerts"],
      expires_at: "2031-06-30T23:59:59.5-05:30",
    });
    expect(fraction.status).toBe(201);
    expect(fraction.body.expires_at).toBe("2031-07-01T05:29:59.500Z");
  });

  test("impossible, non-RFC 3339 or past timestamps are 400 naming expires_at", async () => {
    const before = (await listAll(api, "/api/v1/api-keys")).length;
    for (const expires_at of [
      "2031-13-01T00:00:00Z",
      "2031-02-30T00:00:00Z",
      "2031-01-01T24:30:00Z",
      "tomorrow",
      "2031-01-01",
      "2031-01-01T10:00:00",
      "2020-01-01T00:00:00Z",
    ]) {
      const res = await api.post("/api/v1/api-keys", { name: "bad-time", scopes: ["alerts"], expires_at });
      expectError(res, 400, "validation_failed");
      expect(fieldPaths(res)).toEqual(["expires_at"]);
    }
    expect((await listAll(api, "/api/v1/api-keys")).length).toBe(before);
  });
});

describe("no request in this file was a 500", () => {
  test("the request counters of both servers show no status 500", async () => {
    for (const target of [server, small]) {
      const metrics = await target.client().get("/metrics");
      expect(metrics.text).toContain("svc_http_requests_total{");
      expect(metrics.text).not.toMatch(/status="5\d\d"/);
    }
  });
});
