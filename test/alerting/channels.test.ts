/**
 * Notification channels through a real `svc serve`: CRUD for each type with exact bodies, the
 * webhook signing secret (shown once, never again, never logged), config replaced whole on
 * PATCH, validation naming `config.<field>`, the in-use rules (policies, settings), the channel
 * checks of the settings document and of ingest tokens, and access. Black-box: plain HTTP and
 * the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AccessCall, expectReadOnly, expectRefused, UNKNOWN_KEY } from "../support/access.ts";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI or sign users up (argon2id) get more than the default 5 s. */
const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CHANNEL_ID = /^chn_[0-9a-z]{26}$/;
const GENERATED_SECRET = /^[A-Za-z0-9_-]{43}$/;
const BASE = "/api/v1/notification-channels";

let server: TestServer;
let admin: Client;
let anon: Client;
let owner: string;
let foreign: { client: Client; channelId: string; cloudeventsId: string };

beforeAll(async () => {
  server = await TestServer.start();
  admin = server.client();
  anon = admin.as();
  owner = server.init?.owner.id as string;
  const other = await server.admin([
    "org",
    "create",
    "--name",
    "Other",
    "--slug",
    `other-${Math.random().toString(36).slice(2, 8)}`,
    "--owner-email",
    "boss@other.test",
  ]);
  const client = admin.as(other.api_key.secret);
  const channel = await client.post(BASE, {
    name: "Their Slack",
    type: "slack",
    config: { webhook_url: "https://hooks.slack.com/services/OTHER" },
  });
  if (channel.status !== 201) throw new Error(channel.text);
  const cloudevents = await client.post(BASE, { name: "Their consumer", type: "cloudevents", config: {} });
  if (cloudevents.status !== 201) throw new Error(cloudevents.text);
  foreign = { client, channelId: channel.body.id, cloudeventsId: cloudevents.body.id };
}, SLOW);
afterAll(() => server.dispose());

function fieldPaths(res: Response2): string[] {
  return res.body.error.details.fields.map((f: { path: string }) => f.path);
}

function expectValidation(res: Response2, path: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({
    status: 400,
    code: "validation_failed",
  });
  expect(fieldPaths(res)).toContain(path);
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

async function createChannel(body: Record<string, unknown>, client = admin): Promise<any> {
  const res = await client.post(BASE, body);
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${res.text}`);
  return res.body;
}

async function channelIds(): Promise<string[]> {
  const res = await admin.get(`${BASE}?limit=200`);
  expect(res.status).toBe(200);
  return res.body.data.map((c: { id: string }) => c.id);
}

/** The channel as every read shows it: the create response without `secret`. */
function withoutSecret(created: Record<string, unknown>) {
  const { secret: _secret, ...rest } = created;
  return rest;
}

const slackBody = (name = "Slack #ops") => ({
  name,
  type: "slack",
  config: { webhook_url: "https://hooks.slack.com/services/T000/B000/abcd" },
});

async function createPolicy(channelId: string, name = "Uses the channel"): Promise<string> {
  const res = await admin.post("/api/v1/escalation-policies", {
    name,
    steps: [{ delay_seconds: 60, targets: [{ type: "channel", id: channelId }] }],
  });
  if (res.status !== 201) throw new Error(`create policy: ${res.text}`);
  return res.body.id;
}

/** Lets the log lines of the requests so far reach `server.output`. */
async function settleOutput(): Promise<void> {
  await admin.get("/healthz");
  await Bun.sleep(200);
}

describe("CRUD for each type", () => {
  test("a webhook without a secret gets a generated one, shown in the create response only", async () => {
    const created = await admin.post(BASE, {
      name: "  Ops webhook  ",
      type: "webhook",
      config: { url: "https://hooks.example.test/svc" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(CHANNEL_ID),
      name: "Ops webhook",
      type: "webhook",
      config: { url: "https://hooks.example.test/svc", timeout_ms: 5000 },
      trusted: false,
      enabled: true,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
      secret: expect.stringMatching(GENERATED_SECRET),
    });
    const id = created.body.id as string;
    const secret = created.body.secret as string;
    const shown = withoutSecret(created.body);

    const read = await admin.get(`${BASE}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(shown);
    expect(read.text).not.toContain(secret);

    const list = await admin.get(`${BASE}?limit=200`);
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.next_cursor).toBeNull();
    expect(list.body.data).toContainEqual(shown);
    expect(list.text).not.toContain(secret);

    // Another webhook gets another secret.
    const second = await createChannel({
      name: "Second webhook",
      type: "webhook",
      config: { url: "https://hooks.example.test/second" },
    });
    expect(second.secret).toMatch(GENERATED_SECRET);
    expect(second.secret).not.toBe(secret);

    await settleOutput();
    expect(server.output).toContain(BASE);
    expect(server.output).not.toContain(secret);
    expect(server.output).not.toContain(second.secret);
  });

  test("a webhook given a secret: the secret is not echoed, nor ever shown", async () => {
    const given = "given-signing-secret-0123456789";
    const created = await admin.post(BASE, {
      name: "Private hook",
      type: "webhook",
      config: { url: "http://10.0.0.5:8080/hook", secret: given, timeout_ms: 2500 },
      trusted: true,
      enabled: false,
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(CHANNEL_ID),
      name: "Private hook",
      type: "webhook",
      config: { url: "http://10.0.0.5:8080/hook", timeout_ms: 2500 },
      trusted: true,
      enabled: false,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    expect(created.text).not.toContain(given);
    const read = await admin.get(`${BASE}/${created.body.id}`);
    expect(read.body).toEqual(created.body);
    expect(read.text).not.toContain(given);
    expect((await admin.get(`${BASE}?limit=200`)).text).not.toContain(given);
    await settleOutput();
    expect(server.output).not.toContain(given);
  });

  test("slack, email and cloudevents channels", async () => {
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        slackBody(),
        {
          name: "Slack #ops",
          type: "slack",
          config: { webhook_url: "https://hooks.slack.com/services/T000/B000/abcd" },
          trusted: false,
          enabled: true,
        },
      ],
      [
        {
          name: "Ops mail",
          type: "email",
          config: { to: ["ops@acme.test", "oncall@acme.test"] },
          enabled: false,
        },
        {
          name: "Ops mail",
          type: "email",
          config: { to: ["ops@acme.test", "oncall@acme.test"] },
          trusted: false,
          enabled: false,
        },
      ],
      [
        { name: "Chat bridge", type: "cloudevents", config: {}, trusted: true },
        { name: "Chat bridge", type: "cloudevents", config: {}, trusted: true, enabled: true },
      ],
    ];
    for (const [body, expected] of cases) {
      const created = await admin.post(BASE, body);
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(CHANNEL_ID),
        ...expected,
        created_at: expect.stringMatching(TIMESTAMP),
        updated_at: created.body.created_at,
      });
      const read = await admin.get(`${BASE}/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
      expect((await admin.get(`${BASE}?limit=200`)).body.data).toContainEqual(created.body);
    }
  });

  test("the list pages by cursor in creation order", async () => {
    const all = await channelIds();
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect([...all].sort()).toEqual(all);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const res = await admin.get(`${BASE}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      cursor = res.body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toEqual(all);
    expectError(await admin.get(`${BASE}?cursor=garbage`), 400, "invalid_cursor");
    expectValidation(await admin.get(`${BASE}?limit=0`), "limit");
    expectValidation(await admin.get(`${BASE}?bogus=1`), "bogus");
  });

  test("a replayed create (Idempotency-Key) does not show the secret again", async () => {
    const body = { name: "Replayed hook", type: "webhook", config: { url: "https://hooks.example.test/r" } };
    const first = await admin.post(BASE, body, { "idempotency-key": "chn-replay-1" });
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(GENERATED_SECRET);
    const replay = await admin.post(BASE, body, { "idempotency-key": "chn-replay-1" });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(withoutSecret(first.body));
    expect(replay.text).not.toContain(first.body.secret);
    expect((await channelIds()).filter((id) => id === first.body.id)).toEqual([first.body.id]);
  });

  test("delete answers 204; the channel is gone", async () => {
    const channel = await createChannel(slackBody("Short-lived"));
    const res = await admin.delete(`${BASE}/${channel.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expectError(await admin.get(`${BASE}/${channel.id}`), 404, "not_found");
    expectError(await admin.delete(`${BASE}/${channel.id}`), 404, "not_found");
    expectError(await admin.patch(`${BASE}/${channel.id}`, { name: "x" }), 404, "not_found");
    expect(await channelIds()).not.toContain(channel.id);
  });
});

describe("PATCH", () => {
  test("name, trusted and enabled change; config is replaced whole", async () => {
    const created = await createChannel({
      name: "Patched hook",
      type: "webhook",
      config: { url: "https://hooks.example.test/before", timeout_ms: 2500 },
    });
    const secret = created.secret as string;
    const id = created.id as string;

    const flags = await admin.patch(`${BASE}/${id}`, {
      name: "  Renamed hook ",
      trusted: true,
      enabled: false,
    });
    expect(flags.status).toBe(200);
    expect(flags.body).toEqual({
      ...withoutSecret(created),
      name: "Renamed hook",
      trusted: true,
      enabled: false,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(flags.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

    // A config without timeout_ms: the default returns; the secret is kept and not shown.
    const replaced = await admin.patch(`${BASE}/${id}`, {
      config: { url: "https://hooks.example.test/after" },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      ...flags.body,
      config: { url: "https://hooks.example.test/after", timeout_ms: 5000 },
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(replaced.text).not.toContain(secret);

    // A new secret replaces the old one, and is not echoed either.
    const rotated = "rotated-signing-secret-abcdefgh";
    const withSecret = await admin.patch(`${BASE}/${id}`, {
      config: { url: "https://hooks.example.test/after", secret: rotated, timeout_ms: 1000 },
    });
    expect(withSecret.status).toBe(200);
    expect(withSecret.body).toEqual({
      ...replaced.body,
      config: { url: "https://hooks.example.test/after", timeout_ms: 1000 },
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(withSecret.text).not.toContain(rotated);
    expect(withSecret.text).not.toContain(secret);

    const read = await admin.get(`${BASE}/${id}`);
    expect(read.body).toEqual(withSecret.body);
    expect(read.text).not.toContain(rotated);
    await settleOutput();
    expect(server.output).not.toContain(secret);
    expect(server.output).not.toContain(rotated);

    // An empty PATCH changes nothing but updated_at.
    const empty = await admin.patch(`${BASE}/${id}`, {});
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ ...withSecret.body, updated_at: expect.stringMatching(TIMESTAMP) });
  });

  test("email and slack configs are replaced whole; the type cannot change", async () => {
    const email = await createChannel({
      name: "Mail",
      type: "email",
      config: { to: ["a@acme.test", "b@acme.test"] },
    });
    const changed = await admin.patch(`${BASE}/${email.id}`, { config: { to: ["c@acme.test"] } });
    expect(changed.status).toBe(200);
    expect(changed.body.config).toEqual({ to: ["c@acme.test"] });

    const before = (await admin.get(`${BASE}/${email.id}`)).body;
    expectValidation(await admin.patch(`${BASE}/${email.id}`, { type: "slack" }), "type");
    // Another type's config is checked against this channel's type.
    const slackConfig = await admin.patch(`${BASE}/${email.id}`, {
      config: { webhook_url: "https://hooks.slack.com/services/X" },
    });
    expectValidation(slackConfig, "config.webhook_url");
    expect(fieldPaths(slackConfig)).toContain("config.to");
    expectValidation(await admin.patch(`${BASE}/${email.id}`, { config: { to: ["nope"] } }), "config.to.0");
    expectValidation(await admin.patch(`${BASE}/${email.id}`, { name: "" }), "name");
    expectValidation(await admin.patch(`${BASE}/${email.id}`, { name: "   " }), "name");
    expectValidation(await admin.patch(`${BASE}/${email.id}`, { enabled: "yes" }), "enabled");
    expect((await admin.get(`${BASE}/${email.id}`)).body).toEqual(before);

    const slack = await createChannel(slackBody("Slack to change"));
    const moved = await admin.patch(`${BASE}/${slack.id}`, {
      config: { webhook_url: "https://hooks.slack.com/services/NEW" },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.config).toEqual({ webhook_url: "https://hooks.slack.com/services/NEW" });
    expectValidation(await admin.patch(`${BASE}/${slack.id}`, { config: {} }), "config.webhook_url");
  });
});

describe("validation: 400 naming the field, nothing stored", () => {
  test("bad config per type, unknown type, bad top-level fields", async () => {
    const webhook = (config: unknown) => ({ name: "Bad", type: "webhook", config });
    const cases: [string, unknown, string][] = [
      ["webhook url with ftp", webhook({ url: "ftp://x" }), "config.url"],
      ["webhook url not a URL", webhook({ url: "hooks.example.test" }), "config.url"],
      ["webhook without url", webhook({}), "config.url"],
      [
        "webhook secret too short",
        webhook({ url: "https://h.example.test", secret: "short" }),
        "config.secret",
      ],
      [
        "webhook timeout too small",
        webhook({ url: "https://h.example.test", timeout_ms: 50 }),
        "config.timeout_ms",
      ],
      [
        "webhook timeout too large",
        webhook({ url: "https://h.example.test", timeout_ms: 30_001 }),
        "config.timeout_ms",
      ],
      [
        "webhook unknown config field",
        webhook({ url: "https://h.example.test", retries: 3 }),
        "config.retries",
      ],
      [
        "email with a bad address",
        { name: "Bad", type: "email", config: { to: ["not-an-email"] } },
        "config.to.0",
      ],
      [
        "email with a bad second address",
        { name: "Bad", type: "email", config: { to: ["ok@acme.test", "a b@acme.test"] } },
        "config.to.1",
      ],
      ["email without recipients", { name: "Bad", type: "email", config: { to: [] } }, "config.to"],
      ["email without to", { name: "Bad", type: "email", config: {} }, "config.to"],
      ["slack without webhook_url", { name: "Bad", type: "slack", config: {} }, "config.webhook_url"],
      [
        "slack with a bad webhook_url",
        { name: "Bad", type: "slack", config: { webhook_url: "x" } },
        "config.webhook_url",
      ],
      [
        "slack unknown config field",
        { ...slackBody("Bad"), config: { ...slackBody().config, channel: "#ops" } },
        "config.channel",
      ],
      [
        "cloudevents with a config field",
        { name: "Bad", type: "cloudevents", config: { url: "https://x.test" } },
        "config.url",
      ],
      ["unknown type", { name: "Bad", type: "pager", config: {} }, "type"],
      ["no type", { name: "Bad", config: {} }, "type"],
      ["no config", { name: "Bad", type: "cloudevents" }, "config"],
      ["config not an object", { name: "Bad", type: "cloudevents", config: "x" }, "config"],
      ["no name", { type: "cloudevents", config: {} }, "name"],
      ["empty name", { name: "", type: "cloudevents", config: {} }, "name"],
      ["blank name", { name: "   ", type: "cloudevents", config: {} }, "name"],
      ["trusted not a boolean", { name: "Bad", type: "cloudevents", config: {}, trusted: 1 }, "trusted"],
      ["unknown field", { name: "Bad", type: "cloudevents", config: {}, secret: "x" }, "secret"],
    ];
    const before = await channelIds();
    for (const [label, body, path] of cases) {
      const res = await admin.post(BASE, body);
      expect({ label, status: res.status, code: res.body?.error?.code }).toEqual({
        label,
        status: 400,
        code: "validation_failed",
      });
      expect({ label, paths: fieldPaths(res) }).toEqual({ label, paths: expect.arrayContaining([path]) });
    }
    expect(await channelIds()).toEqual(before);
  });
});

describe("in use: 409 conflict with details", () => {
  test("named by policies or by the settings, a channel cannot be deleted", async () => {
    const channel = await createChannel(slackBody("Busy"));
    const first = await createPolicy(channel.id, "First");
    const second = await createPolicy(channel.id, "Second");

    const byPolicies = await admin.delete(`${BASE}/${channel.id}`);
    expectError(byPolicies, 409, "conflict");
    expect(byPolicies.body.error.details).toEqual({
      policy_ids: [first, second].sort(),
      in_settings: false,
      ingest_token_ids: [],
      api_key_ids: [],
    });

    // In the settings too.
    const put = await admin.put("/api/v1/org/settings", {
      notifications: { default_channel_ids: [channel.id] },
    });
    expect(put.status).toBe(200);
    const both = await admin.delete(`${BASE}/${channel.id}`);
    expectError(both, 409, "conflict");
    expect(both.body.error.details).toEqual({
      policy_ids: [first, second].sort(),
      in_settings: true,
      ingest_token_ids: [],
      api_key_ids: [],
    });

    // Out of the policies: one stops naming it, the other is deleted.
    const patched = await admin.patch(`/api/v1/escalation-policies/${first}`, {
      steps: [{ delay_seconds: 0, targets: [{ type: "user", id: owner }] }],
    });
    expect(patched.status).toBe(200);
    expect((await admin.delete(`/api/v1/escalation-policies/${second}`)).status).toBe(204);
    const settingsOnly = await admin.delete(`${BASE}/${channel.id}`);
    expectError(settingsOnly, 409, "conflict");
    expect(settingsOnly.body.error.details).toEqual({
      policy_ids: [],
      in_settings: true,
      ingest_token_ids: [],
      api_key_ids: [],
    });

    // From the default channels to the incident channels: still in the settings.
    const moved = await admin.put("/api/v1/org/settings", {
      notifications: { incident_channel_ids: [channel.id] },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.notifications).toEqual({ default_channel_ids: [], incident_channel_ids: [channel.id] });
    const incident = await admin.delete(`${BASE}/${channel.id}`);
    expectError(incident, 409, "conflict");
    expect(incident.body.error.details).toEqual({
      policy_ids: [],
      in_settings: true,
      ingest_token_ids: [],
      api_key_ids: [],
    });
    expect((await admin.get(`${BASE}/${channel.id}`)).body).toEqual(channel);

    // Out of the settings: it can go.
    expect((await admin.put("/api/v1/org/settings", {})).status).toBe(200);
    expect((await admin.delete(`${BASE}/${channel.id}`)).status).toBe(204);
    expectError(await admin.get(`${BASE}/${channel.id}`), 404, "not_found");
  });
});

describe("channels in the settings document", () => {
  test("unknown or another org's channel ids are 400 naming the index; real ones are kept", async () => {
    const a = await createChannel(slackBody("Default A"));
    const b = await createChannel({
      name: "Incident mail",
      type: "email",
      config: { to: ["inc@acme.test"] },
    });
    const before = await admin.get("/api/v1/org/settings");
    const cases: [unknown, string][] = [
      [
        { notifications: { default_channel_ids: ["chn_01jzzzzzzzzzzzzzzzzzzzzzzz"] } },
        "notifications.default_channel_ids.0",
      ],
      [
        { notifications: { default_channel_ids: [a.id, foreign.channelId] } },
        "notifications.default_channel_ids.1",
      ],
      [
        { notifications: { default_channel_ids: [a.id, a.id, "nope"] } },
        "notifications.default_channel_ids.2",
      ],
      [
        {
          notifications: { default_channel_ids: [a.id], incident_channel_ids: [b.id, foreign.cloudeventsId] },
        },
        "notifications.incident_channel_ids.1",
      ],
      [{ notifications: { incident_channel_ids: [""] } }, "notifications.incident_channel_ids.0"],
    ];
    for (const [body, path] of cases) {
      const res = await admin.put("/api/v1/org/settings", body);
      expectValidation(res, path);
    }
    const unchanged = await admin.get("/api/v1/org/settings");
    expect(unchanged.body).toEqual(before.body);
    expect(unchanged.headers.get("etag")).toBe(before.headers.get("etag") as string);

    const put = await admin.put("/api/v1/org/settings", {
      notifications: { default_channel_ids: [a.id, b.id], incident_channel_ids: [b.id] },
    });
    expect(put.status).toBe(200);
    expect(put.body.notifications).toEqual({
      default_channel_ids: [a.id, b.id],
      incident_channel_ids: [b.id],
    });
    const read = await admin.get("/api/v1/org/settings");
    expect(read.body).toEqual(put.body);

    // Another org's settings cannot name our channels either.
    expectValidation(
      await foreign.client.put("/api/v1/org/settings", { notifications: { default_channel_ids: [a.id] } }),
      "notifications.default_channel_ids.0",
    );
    const theirs = await foreign.client.put("/api/v1/org/settings", {
      notifications: { default_channel_ids: [foreign.channelId] },
    });
    expect(theirs.status).toBe(200);
    expect(theirs.body.notifications.default_channel_ids).toEqual([foreign.channelId]);

    expect((await admin.put("/api/v1/org/settings", {})).status).toBe(200);
  });
});

describe("channels of ingest tokens", () => {
  test("an ingest token's channel_id must name a cloudevents channel of the org", async () => {
    const webhook = await createChannel({
      name: "Not a consumer",
      type: "webhook",
      config: { url: "https://hooks.example.test/t" },
    });
    const slack = await createChannel(slackBody("Not a consumer either"));
    const consumer = await createChannel({ name: "Consumer", type: "cloudevents", config: {} });
    const tokensBefore = (await admin.get("/api/v1/org/ingest-tokens?limit=200")).body.data;

    for (const channelId of [webhook.id, slack.id, foreign.cloudeventsId, "chn_01jzzzzzzzzzzzzzzzzzzzzzzz"]) {
      expectValidation(
        await admin.post("/api/v1/org/ingest-tokens", { name: "bound", channel_id: channelId }),
        "channel_id",
      );
    }
    expect((await admin.get("/api/v1/org/ingest-tokens?limit=200")).body.data).toEqual(tokensBefore);

    const bound = await admin.post("/api/v1/org/ingest-tokens", { name: "bound", channel_id: consumer.id });
    expect(bound.status).toBe(201);
    expect(bound.body).toEqual({
      id: expect.stringMatching(/^tok_[0-9a-z]{26}$/),
      name: "bound",
      prefix: expect.any(String),
      channel_id: consumer.id,
      created_at: expect.stringMatching(TIMESTAMP),
      revoked_at: null,
      token: expect.stringMatching(new RegExp(`^${server.orgSlug}_[A-Za-z0-9_-]{43}$`)),
    });
    expect(bound.body.token.startsWith(bound.body.prefix)).toBe(true);
    const { token: _token, ...listed } = bound.body;
    expect((await admin.get("/api/v1/org/ingest-tokens?limit=200")).body.data).toContainEqual(listed);

    // A channel with a live token bound to it stays until the token is revoked.
    const inUse = await admin.delete(`${BASE}/${consumer.id}`);
    expect(inUse.status).toBe(409);
    expect(inUse.body.error.details).toEqual({
      policy_ids: [],
      in_settings: false,
      ingest_token_ids: [bound.body.id],
      api_key_ids: [],
    });
    expect((await admin.delete(`/api/v1/org/ingest-tokens/${bound.body.id}`)).status).toBe(204);

    // So does one with a live API key bound to it.
    const key = await admin.post("/api/v1/api-keys", {
      name: "bound key",
      scopes: ["events"],
      service: true,
      channel_id: consumer.id,
    });
    expect(key.status).toBe(201);
    const keyInUse = await admin.delete(`${BASE}/${consumer.id}`);
    expect(keyInUse.status).toBe(409);
    expect(keyInUse.body.error.details).toEqual({
      policy_ids: [],
      in_settings: false,
      ingest_token_ids: [],
      api_key_ids: [key.body.id],
    });
    expect((await admin.delete(`/api/v1/api-keys/${key.body.id}`)).status).toBe(204);

    const unbound = await admin.post("/api/v1/org/ingest-tokens", { name: "unbound", channel_id: null });
    expect(unbound.status).toBe(201);
    expect(unbound.body.channel_id).toBeNull();

    // Another org cannot bind a token to our channel.
    expectValidation(
      await foreign.client.post("/api/v1/org/ingest-tokens", { name: "theirs", channel_id: consumer.id }),
      "channel_id",
    );
  });
});

describe("access", () => {
  let channel: any;
  let member: Client;
  let viewer: Client;
  let monitorsKey: Client;

  beforeAll(async () => {
    channel = await createChannel(slackBody("Access"));
    member = admin.as((await signUpUser(server, "member@acme.test", "member")).token);
    viewer = admin.as((await signUpUser(server, "viewer@acme.test", "viewer")).token);
    const key = await admin.post("/api/v1/api-keys", { name: "monitors only", scopes: ["monitors"] });
    if (key.status !== 201) throw new Error(key.text);
    monitorsKey = admin.as(key.body.secret);
  }, SLOW);

  const calls = (): AccessCall[] => [
    { label: "list", write: false, run: (c) => c.get(BASE) },
    { label: "read", write: false, run: (c) => c.get(`${BASE}/${channel.id}`) },
    { label: "create", write: true, run: (c) => c.post(BASE, slackBody("New")) },
    { label: "patch", write: true, run: (c) => c.patch(`${BASE}/${channel.id}`, { name: "Changed" }) },
    { label: "delete", write: true, run: (c) => c.delete(`${BASE}/${channel.id}`) },
  ];

  test("no credential → 401; a key without the admin scope → 403 insufficient_scope", async () => {
    const before = await channelIds();
    await expectRefused(calls(), [
      [anon, 401, "unauthenticated"],
      [admin.as(UNKNOWN_KEY), 401, "unauthenticated"],
      [monitorsKey, 403, "insufficient_scope"],
    ]);
    expect(await channelIds()).toEqual(before);
    expect((await admin.get(`${BASE}/${channel.id}`)).body).toEqual(channel);
  });

  test("members and viewers read channels but change nothing (403 forbidden_role)", async () => {
    const before = await channelIds();
    for (const [who, client] of [
      ["member", member],
      ["viewer", viewer],
    ] as const) {
      await expectReadOnly(calls(), client, who);
      expect((await client.get(`${BASE}/${channel.id}`)).body).toEqual(channel);
    }
    expect(await channelIds()).toEqual(before);
    expect((await admin.get(`${BASE}/${channel.id}`)).body).toEqual(channel);
  });

  test(
    "an admin user and a service key with scope admin change channels",
    async () => {
      const adminUser = admin.as((await signUpUser(server, "admin2@acme.test", "admin")).token);
      const made = await adminUser.post(BASE, slackBody("By an admin user"));
      expect(made.status).toBe(201);
      expect((await adminUser.patch(`${BASE}/${made.body.id}`, { enabled: false })).status).toBe(200);
      expect((await adminUser.delete(`${BASE}/${made.body.id}`)).status).toBe(204);

      const key = await admin.post("/api/v1/api-keys", {
        name: "svc admin",
        scopes: ["admin"],
        service: true,
      });
      expect(key.status).toBe(201);
      const service = admin.as(key.body.secret);
      const bySvc = await service.post(BASE, { name: "By a service key", type: "cloudevents", config: {} });
      expect(bySvc.status).toBe(201);
      expect((await service.delete(`${BASE}/${bySvc.body.id}`)).status).toBe(204);
    },
    SLOW,
  );

  test("another org's channel is 404 on every endpoint and absent from the list", async () => {
    const theirs = (await foreign.client.get(`${BASE}/${foreign.channelId}`)).body;
    for (const res of [
      await admin.get(`${BASE}/${foreign.channelId}`),
      await admin.patch(`${BASE}/${foreign.channelId}`, { name: "Mine now" }),
      await admin.patch(`${BASE}/${foreign.channelId}`, { config: { bogus: true } }),
      await admin.delete(`${BASE}/${foreign.channelId}`),
    ]) {
      expectError(res, 404, "not_found");
    }
    expect(await channelIds()).not.toContain(foreign.channelId);
    expect((await foreign.client.get(`${BASE}/${foreign.channelId}`)).body).toEqual(theirs);
    // And the other way round.
    expectError(await foreign.client.get(`${BASE}/${channel.id}`), 404, "not_found");
    const theirList = await foreign.client.get(`${BASE}?limit=200`);
    expect(theirList.body.data.map((c: { id: string }) => c.id).sort()).toEqual(
      [foreign.channelId, foreign.cloudeventsId].sort(),
    );
  });
});
