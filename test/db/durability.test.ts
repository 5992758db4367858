import { afterAll, expect, test } from "bun:test";
import { TestServer } from "../support/harness.ts";

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.dispose();
});

test("every write answered 201 survives kill -9 of the server", async () => {
  const first = await TestServer.start();
  servers.push(first);
  const client = first.client();
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) => client.post("/api/v1/teams", { name: `team-${i}` })),
  );
  expect(results.map((r) => r.status)).toEqual(Array(40).fill(201));
  first.proc.kill("SIGKILL");
  await first.proc.exited;

  const second = await TestServer.start({ dataDir: first.dataDir, init: false });
  servers.push(second);
  const listed = await second.client(first.init?.api_key.secret).get("/api/v1/teams?limit=200");
  expect(listed.status).toBe(200);
  expect(listed.body.data.map((t: { id: string }) => t.id).sort()).toEqual(
    results.map((r) => r.body.id).sort(),
  );
}, 20_000);
