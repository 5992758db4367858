/**
 * Limits of the CloudEvents consumer plane (DESIGN §4, §7) in the `oss` edition, where they
 * come from `limits.*`: concurrent streams per org (the next one gets 429
 * `stream_limit_reached` at once, the open ones are unaffected, closing one frees a slot) and
 * polls per org per minute (429 `rate_limited` with `Retry-After`). Real server, curl, fetch.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { secondOrg, TestServer } from "../support/harness.ts";
import { CurlStream, ce, eventually, expectError, ingest, pollPath, streamUrl } from "./support.ts";

const SLOW = 30_000;

let streams: TestServer;
let polls: TestServer;

beforeAll(async () => {
  [streams, polls] = await Promise.all([
    TestServer.start({ env: { SVC_LIMITS_STREAMS_PER_ORG: "2" } }),
    TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "3" } }),
  ]);
}, SLOW);
afterAll(async () => {
  await Promise.all([streams.dispose(), polls.dispose()]);
});

/** Opens a stream with fetch: the status, the error body if any, and a way to close it. */
async function openStream(server: TestServer, secret: string) {
  const controller = new AbortController();
  const res = await fetch(streamUrl(server, { from: "now" }), {
    headers: { authorization: `Bearer ${secret}` },
    signal: controller.signal,
  });
  const error = res.status === 200 ? null : ((await res.json()) as any);
  return { res, error, close: () => controller.abort() };
}

/** Waits until `n` streams open one after the other (the server noticed earlier ones closing). */
async function slotsFree(server: TestServer, secret: string, n = 2): Promise<void> {
  await eventually(
    async () => {
      const opened = [];
      try {
        for (let i = 0; i < n; i++) {
          const o = await openStream(server, secret);
          opened.push(o);
          if (o.res.status !== 200) return false;
        }
        return true;
      } finally {
        for (const o of opened) o.close();
      }
    },
    5_000,
    `${n} free stream slots`,
  );
  // Let the server see those probes go.
  await Bun.sleep(300);
}

describe("concurrent streams per org (limits.streams_per_org = 2)", () => {
  test(
    "a third stream is 429 stream_limit_reached at once; the first two keep receiving; closing one frees a slot",
    async () => {
      const secret = streams.init?.api_key.secret as string;
      const a = new CurlStream(streamUrl(streams, { from: "now" }), secret);
      const b = new CurlStream(streamUrl(streams, { from: "now" }), secret);
      try {
        await Promise.all([a.opened(), b.opened()]);

        const began = Date.now();
        const third = await openStream(streams, secret);
        expect(Date.now() - began).toBeLessThan(1_000);
        expect(third.res.status).toBe(429);
        expect(third.error.error.code).toBe("stream_limit_reached");
        expect(Number(third.res.headers.get("retry-after"))).toBeGreaterThan(0);

        // The open streams are unaffected.
        const sent = await ingest(streams, [ce("com.example.limit"), ce("com.example.limit")]);
        await Promise.all([a.waitForEvents(2), b.waitForEvents(2)]);
        expect(a.events.map((e) => e.data)).toEqual(sent);
        expect(b.events.map((e) => e.data)).toEqual(sent);
        expect(a.running && b.running).toBe(true);

        // Closing one frees its slot (the server notices the client went away).
        await a.close();
        let next = await openStream(streams, secret);
        const deadline = Date.now() + 5_000;
        while (next.res.status === 429 && Date.now() < deadline) {
          await Bun.sleep(100);
          next = await openStream(streams, secret);
        }
        expect(next.res.status).toBe(200);
        // Full again.
        const fourth = await openStream(streams, secret);
        expect(fourth.res.status).toBe(429);
        expect(fourth.error.error.code).toBe("stream_limit_reached");
        next.close();
        // b still receives.
        const more = await ingest(streams, [ce("com.example.limit")]);
        await b.waitForEvents(3);
        expect(b.events.at(-1)?.data).toEqual(more[0] as Record<string, unknown>);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
      // Everything closed: both slots come back.
      await slotsFree(streams, secret);
    },
    SLOW,
  );

  test(
    "streams opened at the same moment never exceed the limit",
    async () => {
      const secret = streams.init?.api_key.secret as string;
      await slotsFree(streams, secret);
      const opened = await Promise.all(Array.from({ length: 6 }, () => openStream(streams, secret)));
      try {
        const statuses = opened.map((o) => o.res.status).sort();
        expect(statuses).toEqual([200, 200, 429, 429, 429, 429]);
      } finally {
        for (const o of opened) o.close();
      }
    },
    SLOW,
  );

  test(
    "the limit is per org: another org still opens streams",
    async () => {
      const secret = streams.init?.api_key.secret as string;
      const other = await secondOrg(streams);
      await slotsFree(streams, secret);
      const a = new CurlStream(streamUrl(streams, { from: "now" }), secret);
      const b = new CurlStream(streamUrl(streams, { from: "now" }), secret);
      try {
        await Promise.all([a.opened(), b.opened()]);
        expect((await openStream(streams, secret)).res.status).toBe(429);
        const theirs = await openStream(streams, other.key);
        expect(theirs.res.status).toBe(200);
        theirs.close();
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
    SLOW,
  );
});

describe("polls per org per minute (limits.poll_per_minute = 3)", () => {
  test(
    "the 4th poll within a minute is 429 rate_limited with Retry-After; another org is not affected",
    async () => {
      const api = polls.client();
      for (let i = 0; i < 3; i++) {
        const res = await api.get(pollPath({ wait: 0 }));
        expect(res.status).toBe(200);
      }
      const limited = await api.get(pollPath({ wait: 0 }));
      expectError(limited, 429, "rate_limited");
      const retryAfter = Number(limited.headers.get("retry-after"));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another key of the same org shares the org's budget.
      const keyRes = await api.post("/api/v1/api-keys", {
        name: "Second",
        scopes: ["events"],
        service: true,
      });
      expect(keyRes.status).toBe(201);
      expectError(await api.as(keyRes.body.secret).get(pollPath({ wait: 0 })), 429, "rate_limited");
      // Streams and the source config are not polls.
      expect((await api.get("/api/v1/knative/source-config")).status).toBe(200);
      // Another org has its own budget.
      const other = await secondOrg(polls);
      expect((await api.as(other.key).get(pollPath({ wait: 0 }))).status).toBe(200);
    },
    SLOW,
  );
});
