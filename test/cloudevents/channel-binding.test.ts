/**
 * API keys bound to a `cloudevents` channel (DESIGN §5, §6 notification channels, §7): events
 * addressed to the channel (`run.service.alert.notified.v1`, written when an escalation step
 * targets it) reach only keys bound to it, by poll and by stream, and every event a bound key
 * receives carries the `channelid` extension. Black-box: HTTP and `curl -N`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";
import { CurlStream, ce, collect, createKey, ingest, mark, poll, streamUrl } from "./support.ts";

const SLOW = 30_000;
const NOTIFIED = "run.service.alert.notified.v1";

let server: TestServer;
let api: Client;
let consumerChannel: { id: string };
let otherChannel: { id: string };
let bound: Client;
let boundSecret: string;
let boundElsewhere: Client;
let boundElsewhereSecret: string;
let unbound: Client;
let unboundSecret: string;
let monitorKey: string;

async function create(path: string, body: unknown): Promise<any> {
  const res = await api.post(path, body);
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** Fires an alert on the monitor whose policy targets the consumer channel; returns the alert id. */
async function fire(dedup: string): Promise<string> {
  const res = await api.as().post("/api/v1/events", {
    routing_key: monitorKey,
    event_action: "trigger",
    dedup_key: dedup,
    payload: { summary: `Down ${dedup}`, source: "db01", severity: "critical" },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await api.get("/api/v1/alerts?limit=200");
  const alert = list.body.data.find((a: any) => a.dedup_key === dedup);
  if (!alert) throw new Error(`no alert for ${dedup}: ${list.text}`);
  return alert.id;
}

beforeAll(async () => {
  server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "100000" } });
  api = server.client();
  consumerChannel = await create("/api/v1/notification-channels", {
    name: "Chat bridge",
    type: "cloudevents",
    config: {},
  });
  otherChannel = await create("/api/v1/notification-channels", {
    name: "Other bridge",
    type: "cloudevents",
    config: {},
  });
  boundSecret = await createKey(api, {
    name: "Bridge",
    scopes: ["events"],
    service: true,
    channel_id: consumerChannel.id,
  });
  boundElsewhereSecret = await createKey(api, {
    name: "Other bridge",
    scopes: ["events"],
    service: true,
    channel_id: otherChannel.id,
  });
  unboundSecret = await createKey(api, { name: "Plain consumer", scopes: ["events"], service: true });
  bound = api.as(boundSecret);
  boundElsewhere = api.as(boundElsewhereSecret);
  unbound = api.as(unboundSecret);
  const policy = await create("/api/v1/escalation-policies", {
    name: "To the bridge",
    repeat: 0,
    steps: [{ delay_seconds: 600, targets: [{ type: "channel", id: consumerChannel.id }] }],
  });
  const monitor = await create("/api/v1/monitors", {
    name: "Database",
    type: "event",
    escalation_policy_id: policy.id,
  });
  monitorKey = monitor.integration_key;
}, SLOW);
afterAll(() => server.dispose());

describe("poll", () => {
  test(
    "the bound key sees the notified event; unbound keys and keys bound elsewhere never do",
    async () => {
      const start = await mark(api);
      const alertId = await fire("poll-1");
      // A sentinel after the alert's events: once a consumer has it, it has everything before.
      const [sentinel] = await ingest(server, [ce("com.example.sentinel")]);
      const upToSentinel = async (client: Client) => {
        const got: Record<string, any>[] = [];
        let cursor = start;
        const deadline = Date.now() + 10_000;
        while (!got.some((e) => e.id === sentinel?.id) && Date.now() < deadline) {
          const page = await poll(client, { cursor, wait: 1, limit: 1000 });
          got.push(...page.data);
          cursor = page.next_cursor;
        }
        return got;
      };
      const [mine, plain, elsewhere, owner] = await Promise.all(
        [bound, unbound, boundElsewhere, api].map(upToSentinel),
      );

      const notified = (mine ?? []).filter((e) => e.type === NOTIFIED);
      expect(notified).toHaveLength(1);
      expect(notified[0]).toMatchObject({
        channelid: consumerChannel.id,
        type: NOTIFIED,
        subject: alertId,
        source: `/orgs/${server.orgSlug}/alerts/${alertId}`,
        data: { id: alertId },
      });
      for (const events of [plain, elsewhere, owner]) {
        expect((events ?? []).map((e) => e.type)).not.toContain(NOTIFIED);
      }

      // Every event the bound key gets carries its channel; unbound keys get none.
      expect((mine ?? []).every((e) => e.channelid === consumerChannel.id)).toBe(true);
      expect((elsewhere ?? []).every((e) => e.channelid === otherChannel.id)).toBe(true);
      expect((plain ?? []).some((e) => "channelid" in e)).toBe(false);
      expect((owner ?? []).some((e) => "channelid" in e)).toBe(false);

      // Apart from the addressed event, all see the same events, the same but for `channelid`.
      const strip = (events: Record<string, any>[] | undefined) =>
        (events ?? []).filter((e) => e.type !== NOTIFIED).map(({ channelid: _, ...rest }) => rest);
      expect(strip(mine)).toEqual(plain ?? []);
      expect(strip(elsewhere)).toEqual(plain ?? []);
      expect(owner).toEqual(plain ?? []);
      expect((plain ?? []).map((e) => e.type)).toContain("run.service.alert.fired.v1");
    },
    SLOW,
  );

  test(
    "a filter on the notified type: exactly one event for the bound key, none and no has_more for others",
    async () => {
      const start = await mark(api);
      const alertId = await fire("poll-2");
      const { events } = await collect(bound, start, 1, { filter: NOTIFIED });
      expect(events.map((e) => [e.type, e.subject, e.channelid])).toEqual([
        [NOTIFIED, alertId, consumerChannel.id],
      ]);
      for (const client of [unbound, boundElsewhere, api]) {
        const page = await poll(client, { cursor: start, filter: NOTIFIED });
        expect(page).toEqual({ data: [], next_cursor: expect.any(String), has_more: false });
      }
      // A long-poll of another key is not woken by the addressed event either.
      const began = Date.now();
      const waiting = poll(unbound, { cursor: start, filter: NOTIFIED, wait: 2 });
      await fire("poll-3");
      expect((await waiting).data).toEqual([]);
      expect(Date.now() - began).toBeGreaterThanOrEqual(1_900);
    },
    SLOW,
  );
});

describe("stream", () => {
  test(
    "the bound key's stream carries the notified event and channelid on every event; others never see it",
    async () => {
      const streams = [boundSecret, unboundSecret, boundElsewhereSecret].map(
        (secret) => new CurlStream(streamUrl(server, { from: "now" }), secret),
      );
      const [mine, plain, elsewhere] = streams as [CurlStream, CurlStream, CurlStream];
      try {
        await Promise.all(streams.map((s) => s.opened()));
        const alertId = await fire("stream-1");
        const [sentinel] = await ingest(server, [ce("com.example.sentinel")]);
        for (const s of streams) {
          await s.parser.until(
            () => s.events.some((e) => e.data.id === sentinel?.id),
            10_000,
            "the sentinel",
          );
        }
        const notified = mine.events.filter((e) => e.data.type === NOTIFIED);
        expect(notified.map((e) => [e.data.subject, e.data.channelid])).toEqual([
          [alertId, consumerChannel.id],
        ]);
        expect(mine.events.every((e) => e.data.channelid === consumerChannel.id)).toBe(true);
        expect(elsewhere.events.every((e) => e.data.channelid === otherChannel.id)).toBe(true);
        expect(plain.events.some((e) => "channelid" in e.data)).toBe(false);
        for (const s of [plain, elsewhere]) {
          expect(s.events.map((e) => e.data.type)).not.toContain(NOTIFIED);
          expect(s.events.map((e) => e.data.type)).toContain("run.service.alert.fired.v1");
        }
        // Each frame: one id, one data line.
        for (const s of streams) {
          for (const e of s.events) {
            expect(typeof e.id).toBe("string");
            expect(e.dataLines).toHaveLength(1);
          }
        }
      } finally {
        await Promise.all(streams.map((s) => s.close()));
      }
    },
    SLOW,
  );

  test(
    "the bound key resuming from a cursor taken before the alert catches up on the notified event",
    async () => {
      const start = await mark(bound);
      const alertId = await fire("stream-2");
      const s = new CurlStream(
        streamUrl(server, { cursor: start, filter: "run.service.alert.*" }),
        boundSecret,
      );
      try {
        await s.parser.until(
          () => s.events.some((e) => e.data.type === NOTIFIED),
          10_000,
          "the notified event",
        );
        const notified = s.events.find((e) => e.data.type === NOTIFIED);
        expect(notified?.data).toMatchObject({ subject: alertId, channelid: consumerChannel.id });
      } finally {
        await s.close();
      }
    },
    SLOW,
  );
});
