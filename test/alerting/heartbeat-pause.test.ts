/** Pausing a heartbeat: time spent paused is never a missed ping, and its timer keeps running. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";

let server: TestServer;
let api: Client;
beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
}, 20_000);
afterAll(() => server.dispose());

async function monitorStatus(id: string): Promise<string> {
  return (await api.get(`/api/v1/monitors/${id}`)).body.status;
}

async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(100);
  }
  return check();
}

test("unpausing starts the deadline afresh instead of firing for the paused time", async () => {
  const created = await api.post("/api/v1/monitors", {
    name: "nightly job",
    type: "heartbeat",
    paused: true,
    config: { interval_seconds: 2, grace_seconds: 0 },
  });
  expect(created.status).toBe(201);
  await Bun.sleep(3_000); // the first deadline passes while paused
  expect((await api.patch(`/api/v1/monitors/${created.body.id}`, { paused: false })).status).toBe(200);
  await Bun.sleep(1_200);
  expect(await monitorStatus(created.body.id)).toBe("up");
  expect((await api.get(`/api/v1/alerts?monitor_id=${created.body.id}`)).body.data).toEqual([]);
  // Without a ping, the fresh deadline (2 s after unpausing) takes it down.
  expect(await eventually(async () => (await monitorStatus(created.body.id)) === "down", 3_000)).toBe(true);
}, 15_000);

test("a /fail while paused keeps the timer: after unpausing, a missing ping still takes it down", async () => {
  const created = await api.post("/api/v1/monitors", {
    name: "backup job",
    type: "heartbeat",
    paused: true,
    config: { interval_seconds: 1, grace_seconds: 0 },
  });
  const ping = await fetch(`${created.body.ping_url.replace(/^https?:\/\/[^/]+/, server.base)}/fail`);
  expect(ping.status).toBe(200);
  expect(await monitorStatus(created.body.id)).toBe("up");
  expect((await api.patch(`/api/v1/monitors/${created.body.id}`, { paused: false })).status).toBe(200);
  expect(await eventually(async () => (await monitorStatus(created.body.id)) === "down", 4_000)).toBe(true);
}, 15_000);
