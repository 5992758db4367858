import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await TestServer.start();
});
afterAll(() => server.dispose());

describe("organization", () => {
  test("GET /org returns the caller's organization with seat_count", async () => {
    const res = await server.client().get("/api/v1/org");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: server.orgSlug, name: "Acme", plan: "enterprise", seat_count: 1 });
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test("PATCH renames; slug and plan are immutable_field", async () => {
    const client = server.client();
    const renamed = await client.patch("/api/v1/org", { name: "Acme Corp" });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("Acme Corp");
    for (const body of [{ slug: "other" }, { plan: "free" }]) {
      const res = await client.patch("/api/v1/org", body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("immutable_field");
    }
    expect((await client.get("/api/v1/org")).body.name).toBe("Acme Corp");
  });
});

describe("settings document", () => {
  test("GET returns defaults with an ETag; PUT with a stale If-Match is 412", async () => {
    const client = server.client();
    const first = await client.get("/api/v1/org/settings");
    expect(first.status).toBe(200);
    expect(first.body.cloudevents.source).toEqual({
      mode: "auto",
      poll_interval_seconds: 5,
      stream_heartbeat_seconds: 20,
      refresh_after_seconds: 300,
    });
    const etag = first.headers.get("etag") as string;
    expect(etag).toMatch(/^"\d+"$/);

    const put = await client.put(
      "/api/v1/org/settings",
      { cloudevents: { source: { mode: "poll", poll_interval_seconds: 2 } } },
      { "if-match": etag },
    );
    expect(put.status).toBe(200);
    expect(put.body.cloudevents.source.mode).toBe("poll");
    expect(put.body.cloudevents.source.stream_heartbeat_seconds).toBe(20);
    expect(put.headers.get("etag")).not.toBe(etag);

    const stale = await client.put("/api/v1/org/settings", {}, { "if-match": etag });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe("precondition_failed");
    expect((await client.get("/api/v1/org/settings")).body.cloudevents.source.mode).toBe("poll");
  });

  test("a section left out of a PUT returns to its defaults", async () => {
    const client = server.client();
    await client.put("/api/v1/org/settings", { retention: { events_days: 7 } });
    const res = await client.put("/api/v1/org/settings", {});
    expect(res.body.retention.events_days).toBeNull();
    expect(res.body.cloudevents.source.mode).toBe("auto");
  });

  test("bad settings are 400 naming the field and change nothing", async () => {
    const client = server.client();
    const before = await client.get("/api/v1/org/settings");
    const cases: [unknown, string][] = [
      [{ retention: { events_days: 400 } }, "retention.events_days"],
      [{ sso: { oidc: { issuer: "http://idp.example.com", client_id: "x" } } }, "sso.oidc.issuer"],
      [{ notifications: { default_channel_ids: ["chn_nope"] } }, "notifications.default_channel_ids.0"],
      [{ cloudevents: { source: { mode: "carrier-pigeon" } } }, "cloudevents.source.mode"],
      [{ surprise: true }, "surprise"],
    ];
    for (const [body, path] of cases) {
      const res = await client.put("/api/v1/org/settings", body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toContain(path);
    }
    const after = await client.get("/api/v1/org/settings");
    expect(after.headers.get("etag")).toBe(before.headers.get("etag"));
  });

  test("an OIDC issuer may use http on a loopback host", async () => {
    const res = await server.client().put("/api/v1/org/settings", {
      cloudevents: { ingest: { oidc: { issuer: "http://127.0.0.1:9999", audiences: ["svc"] } } },
    });
    expect(res.status).toBe(200);
    expect(res.body.cloudevents.ingest.oidc.issuer).toBe("http://127.0.0.1:9999");
  });
});
