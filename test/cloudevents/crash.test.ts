/**
 * Ingest survives a crash (DESIGN §9: an acknowledged write is durable, a unit commits whole;
 * §7: a batch is all-or-nothing, an event is stored once). `svc serve` is killed with SIGKILL
 * while several clients post 64-event batches with unique ids, then started again on the same
 * data directory with the credentials of the first init. Reading the whole log back: every
 * batch that got a 202 is there, no event is there twice, and each batch is either entirely
 * present (in order) or entirely absent. Two crash rounds, the second on the restarted server.
 */
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { type Client, TestServer } from "../support/harness.ts";

const BATCH = "application/cloudevents-batch+json";
const WORKERS = 8;
const BATCH_SIZE = 64;
const ROUNDS = 3;
/** Kill once this many batches of the round were acknowledged (or after KILL_AFTER_MS). */
const ACKED_BEFORE_KILL = 40;
const KILL_AFTER_MS = 4000;
const ENV = { SVC_LIMITS_POLL_PER_MINUTE: "1000000" };

type Outcome = "in flight" | "acked" | "failed" | `status ${number}`;

const servers: TestServer[] = [];
let dataDir: string | null = null;

afterAll(async () => {
  for (const s of servers) {
    if (s.proc.exitCode === null && s.proc.signalCode === null) {
      s.proc.kill("SIGKILL");
      await s.proc.exited;
    }
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function eventsOf(batchId: string) {
  return Array.from({ length: BATCH_SIZE }, (_, i) => ({
    specversion: "1.0",
    id: `${batchId}-e${i}`,
    source: "/crash",
    type: "com.example.crash",
    data: { batch: batchId, i },
  }));
}

/**
 * Workers post batches until the server dies; the server is SIGKILLed once enough batches of
 * this round were acknowledged. Returns what became of each batch.
 */
async function ingestUntilKilled(server: TestServer, token: string, round: number) {
  const url = `${server.base}/api/v1/cloudevents/ingest/${token}`;
  const outcomes = new Map<string, Outcome>();
  let acked = 0;
  let killed = false;
  const wrongCounts: string[] = [];

  const worker = async (w: number) => {
    for (let k = 0; !killed; k++) {
      const batchId = `r${round}-w${w}-b${k}`;
      outcomes.set(batchId, "in flight");
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "content-type": BATCH },
          body: JSON.stringify(eventsOf(batchId)),
        });
        // The status line is written only after the commit: a 202 is an acknowledgement even
        // if the body is cut off by the kill.
        if (res.status === 202) {
          outcomes.set(batchId, "acked");
          acked += 1;
          const body: any = await res.json().catch(() => null);
          if (body !== null && body.accepted !== BATCH_SIZE) wrongCounts.push(JSON.stringify(body));
        } else {
          outcomes.set(batchId, `status ${res.status}`);
          await res.arrayBuffer().catch(() => {});
        }
      } catch {
        outcomes.set(batchId, "failed");
        return;
      }
    }
  };

  const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
  const deadline = Date.now() + KILL_AFTER_MS;
  while (acked < ACKED_BEFORE_KILL && Date.now() < deadline) await Bun.sleep(5);
  // A little jitter so the kill lands at a different point of a commit each time.
  await Bun.sleep(Math.floor(Math.random() * 15));
  server.proc.kill("SIGKILL");
  killed = true;
  await server.proc.exited;
  expect(server.proc.signalCode).toBe("SIGKILL");
  await Promise.all(workers);
  expect(wrongCounts).toEqual([]);
  return outcomes;
}

async function wholeLog(client: Client): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const res = await client.get(`/api/v1/cloudevents/poll?wait=0&limit=1000${query}`);
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
    if (!res.body.has_more) return out;
  }
}

test("SIGKILL during concurrent batch ingest: acknowledged batches survive, each batch whole or absent", async () => {
  let server = await TestServer.start({ init: true, env: ENV });
  servers.push(server);
  dataDir = server.dataDir;
  const secret = server.init?.api_key.secret as string;
  const token = server.init?.ingest_token.token as string;

  const outcomes = new Map<string, Outcome>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [id, outcome] of await ingestUntilKilled(server, token, round)) outcomes.set(id, outcome);
    // Same data directory, no init: the first init's API key and ingest token stay valid.
    server = await TestServer.start({ dataDir, init: false, env: ENV });
    servers.push(server);
  }

  const all = [...outcomes.values()];
  const acked = [...outcomes].filter(([, o]) => o === "acked").map(([id]) => id);
  // Before the kill every answer was a 202; after it, requests fail.
  expect(all.filter((o) => o.startsWith("status"))).toEqual([]);
  expect(acked.length).toBeGreaterThanOrEqual(ROUNDS * ACKED_BEFORE_KILL * 0.5);

  const api = server.client(secret);
  const stored = (await wholeLog(api)).filter((e) => e.source === "/crash");

  // No event twice.
  const ids = stored.map((e) => e.id as string);
  expect(new Set(ids).size).toBe(ids.length);

  // Group by batch; every stored event is one that was sent, with its data.
  const byBatch = new Map<string, any[]>();
  for (const e of stored) {
    const batchId = e.data?.batch as string;
    expect(outcomes.has(batchId)).toBe(true);
    expect(e.id).toBe(`${batchId}-e${e.data.i}`);
    const list = byBatch.get(batchId) ?? [];
    list.push(e);
    byBatch.set(batchId, list);
  }

  // Each batch whole (and in its own order) or absent.
  const partial = [...byBatch]
    .filter(([, list]) => list.length !== BATCH_SIZE)
    .map(([id, l]) => [id, l.length]);
  expect(partial).toEqual([]);
  for (const [batchId, list] of byBatch) {
    expect(list).toEqual(eventsOf(batchId));
  }

  // Every acknowledged batch survived.
  const lost = acked.filter((id) => !byBatch.has(id));
  expect(lost).toEqual([]);

  // Batches whose fate the client never learned: present or absent, never half.
  const unknown = [...outcomes].filter(([, o]) => o !== "acked").map(([id]) => id);
  const unknownPresent = unknown.filter((id) => byBatch.has(id)).length;
  expect(byBatch.size).toBe(acked.length + unknownPresent);

  // The restarted server takes events with the old token as before.
  const after = await fetch(`${server.base}/api/v1/cloudevents/ingest/${token}`, {
    method: "POST",
    headers: { "content-type": BATCH },
    body: JSON.stringify(eventsOf("after-restart")),
  });
  expect(after.status).toBe(202);
  expect(await after.json()).toEqual({ accepted: BATCH_SIZE });
  console.log(
    `crash: ${JSON.stringify({ batches: outcomes.size, acked: acked.length, unknown: unknown.length, unknownPresent })}`,
  );
}, 60_000);
