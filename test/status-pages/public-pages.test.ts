/** Public status pages through a real server: no credential, only public updates, fresh after every change. */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Client, TestServer } from "../support/harness.ts";

let server: TestServer;
let api: Client;
let pageId: string;

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  pageId = (
    await api.post("/api/v1/status-pages", {
      slug: "public",
      title: "Acme status",
      description: "Our services",
    })
  ).body.id;
}, 20_000);
afterAll(() => server.dispose());

const page = (suffix = "") => fetch(`${server.base}/status/${server.orgSlug}/public${suffix}`);

describe("public status pages", () => {
  test("an empty page says all systems are operational, in HTML and JSON, without a credential", async () => {
    const json = await page("/index.json");
    expect(json.status).toBe(200);
    const body = await json.json();
    expect(body).toEqual({
      page: { slug: "public", title: "Acme status", description: "Our services" },
      banner: { text: "All Systems Operational", colour: "green", severity: null, maintenance: false },
      active_incidents: [],
      recent_incidents: [],
      generated_at: expect.stringMatching(/Z$/),
    });
    const html = await page();
    expect(html.headers.get("content-type")).toStartWith("text/html");
    const text = await html.text();
    expect(text).toContain("All Systems Operational");
    expect(text).not.toContain("<script");
  });

  test("a committed change shows on the next request; private updates never appear", async () => {
    const created = await api.post("/api/v1/incidents", {
      title: "Checkout errors",
      severity: "critical",
      status_page_ids: [pageId],
      initial_update: { body: "We are investigating.\nMore soon.", public: true },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const secret = "internal: the db primary ran out of disk";
    expect((await api.post(`/api/v1/incidents/${id}/updates`, { body: secret, public: false })).status).toBe(
      201,
    );

    const body = (await (await page("/index.json")).json()) as any;
    expect(body.banner).toEqual({
      text: "Major Outage",
      colour: "red",
      severity: "critical",
      maintenance: false,
    });
    expect(body.active_incidents.map((i: { title: string }) => i.title)).toEqual(["Checkout errors"]);
    expect(body.active_incidents[0].updates).toEqual([
      {
        status: "investigating",
        body: "We are investigating.\nMore soon.",
        created_at: expect.any(String),
        edited: false,
      },
    ]);
    const html = await (await page()).text();
    expect(html).toContain("We are investigating.<br>More soon.");
    expect(html).not.toContain("ran out of disk");
    expect(JSON.stringify(body)).not.toContain("ran out of disk");

    // Resolve: at once the banner is green again and the incident moves to recent incidents.
    expect((await api.patch(`/api/v1/incidents/${id}`, { status: "resolved" })).status).toBe(200);
    const after = (await (await page("/index.json")).json()) as any;
    expect(after.banner.text).toBe("All Systems Operational");
    expect(after.active_incidents).toEqual([]);
    expect(after.recent_incidents.map((i: { title: string; status: string }) => [i.title, i.status])).toEqual(
      [["Checkout errors", "resolved"]],
    );
    // The status change by PATCH shows as its label alone.
    expect(after.recent_incidents[0].updates[0]).toEqual({
      status: "resolved",
      body: "",
      created_at: expect.any(String),
      edited: false,
    });
  });

  test("an edited public update carries only an edited marker", async () => {
    const created = await api.post("/api/v1/incidents", {
      title: "Slow search",
      severity: "minor",
      status_page_ids: [pageId],
      initial_update: { body: "Typo in the first versoin" },
    });
    const update = created.body.updates[0];
    expect(
      (
        await api.patch(`/api/v1/incidents/${created.body.id}/updates/${update.id}`, {
          body: "Fixed wording",
        })
      ).status,
    ).toBe(200);
    const body = (await (await page("/index.json")).json()) as any;
    const incident = body.active_incidents.find((i: { title: string }) => i.title === "Slow search");
    expect(incident.updates).toEqual([
      { status: "investigating", body: "Fixed wording", created_at: expect.any(String), edited: true },
    ]);
    expect(JSON.stringify(body)).not.toContain("versoin");
    expect(await (await page()).text()).toContain("(edited)");
  });

  test("unknown org or page: a friendly HTML 404, or a 404 JSON envelope", async () => {
    const html = await fetch(`${server.base}/status/${server.orgSlug}/nope`);
    expect(html.status).toBe(404);
    expect(html.headers.get("content-type")).toStartWith("text/html");
    expect(await html.text()).toContain("Status page not found");
    const json = await fetch(`${server.base}/status/no-such-org/public/index.json`);
    expect(json.status).toBe(404);
    expect(((await json.json()) as any).error.code).toBe("not_found");
  });
});

describe("recent incidents age out", () => {
  test("an incident resolved more than 7 days ago is no longer on the page", async () => {
    const own = await TestServer.start();
    try {
      const client = own.client();
      const page = (await client.post("/api/v1/status-pages", { slug: "ageing", title: "Ageing" })).body.id;
      const recent = (
        await client.post("/api/v1/incidents", {
          title: "Last week",
          severity: "minor",
          status_page_ids: [page],
        })
      ).body.id;
      const old = (
        await client.post("/api/v1/incidents", {
          title: "Long ago",
          severity: "minor",
          status_page_ids: [page],
        })
      ).body.id;
      for (const id of [recent, old]) await client.patch(`/api/v1/incidents/${id}`, { status: "resolved" });
      // Time cannot be moved inside the server, so the clock of the stored rows is: stop it,
      // move one resolution 8 days and the other 6 days into the past, start it again.
      expect(await own.stop()).toBe(0);
      const db = new Database(join(own.dataDir, "svc.db"));
      const day = 86_400_000;
      db.query("UPDATE incidents SET resolved_at = ? WHERE id = ?").run(Date.now() - 8 * day, old);
      db.query("UPDATE incidents SET resolved_at = ? WHERE id = ?").run(Date.now() - 6 * day, recent);
      db.close();
      const again = await TestServer.start({ dataDir: own.dataDir, init: false });
      try {
        const body = (await (
          await fetch(`${again.base}/status/${own.orgSlug}/ageing/index.json`)
        ).json()) as any;
        expect(body.recent_incidents.map((i: { title: string }) => i.title)).toEqual(["Last week"]);
      } finally {
        await again.stop();
      }
    } finally {
      await own.dispose();
    }
  }, 30_000);
});
