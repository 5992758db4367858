/**
 * Incidents opened from alerts, and the incident copies sent to the org's incident channels
 * (DESIGN §5-§7), through a real `svc serve`: `POST /alerts/{id}/create-incident` takes the
 * alert's summary, maps its severity (critical→major, warning→minor, info→minor) and links its
 * monitor unless the body says otherwise, and records `incident_created` on the alert's timeline.
 * Incident changes reach the channels of `notifications.incident_channel_ids`: a webhook
 * receiver checks the signed structured CloudEvents (created, updated, resolved; never deleted),
 * a Slack receiver the text, a real SMTP server the email. Black-box: HTTP, SMTP and the CLI.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hmacHex, type Received, WebhookReceiver } from "../alerting/webhook-receiver.ts";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";
import { MailCatcher } from "../support/smtp.ts";

const SLOW = 30_000;
const EVENT_ID = /^evt_[0-9a-z]{26}$/;
const INC_ID = /^inc_[0-9a-z]{26}$/;

let mail: MailCatcher;
let receiver: WebhookReceiver;
let server: TestServer;
let api: Client;
let anon: Client;
let ownerId: string;

async function must(res: Promise<Response2> | Response2, status = 201): Promise<any> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

function expectValidation(res: Response2, path: string) {
  expectError(res, 400, "validation_failed");
  expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual([path]);
}

let monitorCount = 0;
async function createMonitor(client = api): Promise<{ id: string; integration_key: string }> {
  monitorCount += 1;
  return must(client.post("/api/v1/monitors", { name: `Monitor ${monitorCount}`, type: "event" }));
}

/** Fires an alert through the Events API (PagerDuty v2 body) and returns it as the API shows it. */
async function fire(
  monitor: { id: string; integration_key: string },
  dedupKey: string,
  payload: { summary: string; severity: string },
  client = api,
): Promise<any> {
  const res = await anon.post("/api/v1/events", {
    routing_key: monitor.integration_key,
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: { source: "db01", ...payload },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await must(client.get(`/api/v1/alerts?monitor_id=${monitor.id}&limit=200`), 200);
  const alert = list.data.find((a: { dedup_key: string }) => a.dedup_key === dedupKey);
  if (!alert) throw new Error(`no alert for ${dedupKey}`);
  return alert;
}

async function timeline(alertId: string, client = api): Promise<{ type: string; at: string; data: any }[]> {
  return (await must(client.get(`/api/v1/alerts/${alertId}/timeline`), 200)).data;
}

const incidentEntries = async (alertId: string, client = api) =>
  (await timeline(alertId, client)).filter((e) => e.type === "incident_created");

beforeAll(async () => {
  mail = await MailCatcher.start();
  receiver = WebhookReceiver.start();
  server = await TestServer.start({ env: mail.env });
  api = server.client();
  anon = api.as();
  ownerId = server.init?.owner.id as string;
}, SLOW);
afterAll(async () => {
  await server.dispose();
  receiver.stop();
  await mail.close();
});

describe("POST /alerts/{id}/create-incident", () => {
  test("from the alert: its summary, mapped severity and monitor; status pages from the body", async () => {
    const monitor = await createMonitor();
    const page = await must(api.post("/api/v1/status-pages", { slug: "public", title: "Public" }));
    const alert = await fire(monitor, "disk", { summary: "Disk full on db01", severity: "critical" });
    const res = await api.post(`/api/v1/alerts/${alert.id}/create-incident`, { status_page_ids: [page.id] });
    expect(res.status).toBe(201);
    const incident = res.body;
    expect(incident).toEqual({
      id: incident.id,
      title: "Disk full on db01",
      status: "investigating",
      severity: "major",
      started_at: incident.created_at,
      resolved_at: null,
      created_by: ownerId,
      created_at: incident.created_at,
      updated_at: incident.created_at,
      monitor_ids: [monitor.id],
      status_page_ids: [page.id],
      updates: [],
    });
    expect(incident.id).toMatch(INC_ID);
    expect(await must(api.get(`/api/v1/incidents/${incident.id}`), 200)).toEqual(incident);

    // The alert's timeline records it; the alert itself is unchanged.
    const entries = await timeline(alert.id);
    expect(entries.filter((e) => e.type === "incident_created")).toEqual([
      { type: "incident_created", at: incident.created_at, data: { incident_id: incident.id } },
    ]);
    expect(entries[0]?.type).toBe("fired");
    expect(await must(api.get(`/api/v1/alerts/${alert.id}`), 200)).toEqual(alert);
  });

  test("alert severity → incident severity: critical→major, warning→minor, info→minor", async () => {
    const monitor = await createMonitor();
    const cases: [string, string, string][] = [
      ["critical", "critical", "major"],
      ["error", "critical", "major"],
      ["warning", "warning", "minor"],
      ["info", "info", "minor"],
    ];
    for (const [sent, alertSeverity, incidentSeverity] of cases) {
      const alert = await fire(monitor, `sev-${sent}`, { summary: `Severity ${sent}`, severity: sent });
      expect(alert.severity).toBe(alertSeverity);
      const incident = await must(api.post(`/api/v1/alerts/${alert.id}/create-incident`, {}));
      expect([sent, incident.title, incident.severity, incident.status, incident.monitor_ids]).toEqual([
        sent,
        `Severity ${sent}`,
        incidentSeverity,
        "investigating",
        [monitor.id],
      ]);
      expect(await incidentEntries(alert.id)).toEqual([
        { type: "incident_created", at: incident.created_at, data: { incident_id: incident.id } },
      ]);
    }
  });

  test("what the body gives wins: title, severity, status, monitors, initial update", async () => {
    const monitor = await createMonitor();
    const other = await createMonitor();
    const alert = await fire(monitor, "override", { summary: "Raw alert text", severity: "info" });
    const incident = await must(
      api.post(`/api/v1/alerts/${alert.id}/create-incident`, {
        title: "Checkout degraded",
        severity: "critical",
        status: "identified",
        monitor_ids: [monitor.id, other.id],
        initial_update: { body: "Payments are slow.\nWe know why." },
      }),
    );
    expect(incident).toEqual({
      id: incident.id,
      title: "Checkout degraded",
      status: "identified",
      severity: "critical",
      started_at: incident.created_at,
      resolved_at: null,
      created_by: ownerId,
      created_at: incident.created_at,
      updated_at: incident.created_at,
      monitor_ids: [monitor.id, other.id].sort(),
      status_page_ids: [],
      updates: [
        {
          id: incident.updates[0].id,
          incident_id: incident.id,
          status: "identified",
          body: "Payments are slow.\nWe know why.",
          public: true,
          user_id: ownerId,
          user_email: "owner@acme.test",
          created_at: incident.created_at,
          edited_at: null,
          edit_history: [],
        },
      ],
    });
    // Severity only: the title still comes from the alert; monitor_ids [] links none.
    const second = await must(
      api.post(`/api/v1/alerts/${alert.id}/create-incident`, { severity: "major", monitor_ids: [] }),
    );
    expect([second.title, second.severity, second.monitor_ids]).toEqual(["Raw alert text", "major", []]);
    // Maintenance: the status defaults to maintenance.
    const maint = await must(
      api.post(`/api/v1/alerts/${alert.id}/create-incident`, { severity: "maintenance" }),
    );
    expect([maint.severity, maint.status]).toEqual(["maintenance", "maintenance"]);
    // Each incident is on the timeline, in order.
    expect((await incidentEntries(alert.id)).map((e) => e.data.incident_id)).toEqual([
      incident.id,
      second.id,
      maint.id,
    ]);
  });

  test("a service key opens it as key:<id>", async () => {
    const key = await server.admin([
      "key",
      "create",
      "--org",
      server.orgSlug,
      "--name",
      "bridge",
      "--scopes",
      "incidents,alerts",
      "--service",
    ]);
    const alert = await fire(await createMonitor(), "bot", { summary: "From a bot", severity: "warning" });
    const incident = await must(
      api
        .as(key.secret)
        .post(`/api/v1/alerts/${alert.id}/create-incident`, { initial_update: { body: "Auto" } }),
    );
    expect([incident.created_by, incident.updates[0].user_id, incident.updates[0].user_email]).toEqual([
      `key:${key.id}`,
      `key:${key.id}`,
      null,
    ]);
  });

  test("unknown or another org's alert is 404; bad bodies are 400; nothing is created", async () => {
    const monitor = await createMonitor();
    const alert = await fire(monitor, "errors", { summary: "Errors", severity: "critical" });
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
    const theirs = api.as(other.api_key.secret);
    const theirPage = await must(theirs.post("/api/v1/status-pages", { slug: "public", title: "Theirs" }));
    const before = (await must(api.get("/api/v1/incidents?status=all&limit=200"), 200)).data;

    expectError(
      await api.post("/api/v1/alerts/alt_01jzzzzzzzzzzzzzzzzzzzzzzz/create-incident", {}),
      404,
      "not_found",
    );
    // Another org cannot open an incident from our alert.
    expectError(await theirs.post(`/api/v1/alerts/${alert.id}/create-incident`, {}), 404, "not_found");
    const path = `/api/v1/alerts/${alert.id}/create-incident`;
    expectValidation(await api.post(path, { status_page_ids: [theirPage.id] }), "status_page_ids.0");
    expectValidation(await api.post(path, { status_page_ids: ["spg_nope"] }), "status_page_ids.0");
    expectValidation(await api.post(path, { monitor_ids: [monitor.id, "mon_nope"] }), "monitor_ids.1");
    expectValidation(await api.post(path, { severity: "warning" }), "severity");
    expectValidation(await api.post(path, { title: "" }), "title");
    expectValidation(await api.post(path, { alert_id: alert.id }), "alert_id");

    expect(await incidentEntries(alert.id)).toEqual([]);
    expect((await must(api.get("/api/v1/incidents?status=all&limit=200"), 200)).data).toEqual(before);
    expect((await must(theirs.get("/api/v1/incidents?status=all"), 200)).data).toEqual([]);
  });

  test("access: scope incidents is needed (alerts alone is 403); a viewer cannot", async () => {
    const alert = await fire(await createMonitor(), "access", { summary: "Access", severity: "critical" });
    const path = `/api/v1/alerts/${alert.id}/create-incident`;
    const alertsOnly = await must(api.post("/api/v1/api-keys", { name: "alerts", scopes: ["alerts"] }));
    expectError(await api.as(alertsOnly.secret).post(path, {}), 403, "insufficient_scope");
    const viewer = await signUpUser(server, "viewer@acme.test", "viewer");
    expectError(await api.as(viewer.token).post(path, {}), 403, "forbidden_role");
    expectError(await anon.post(path, {}), 401, "unauthenticated");
    expect(await incidentEntries(alert.id)).toEqual([]);
    const incidentsOnly = await must(
      api.post("/api/v1/api-keys", { name: "incidents", scopes: ["incidents"] }),
    );
    const incident = await must(api.as(incidentsOnly.secret).post(path, {}));
    expect(await incidentEntries(alert.id)).toEqual([
      { type: "incident_created", at: incident.created_at, data: { incident_id: incident.id } },
    ]);
  });
});

describe("incident copies to the incident channels", () => {
  /** A separate org, so that its incident channels see only these tests' incidents. */
  let client: Client;
  let slug: string;
  let hook: { id: string; path: string };
  let disabled: { id: string; path: string };
  let slack: { id: string; path: string };
  let emailChannel: { id: string };

  async function webhook(name: string, path: string, enabled = true) {
    const res = await must(
      client.post("/api/v1/notification-channels", {
        name,
        type: "webhook",
        config: { url: receiver.url(path) },
        enabled,
      }),
    );
    receiver.secret(path, res.secret);
    return { id: res.id as string, path };
  }

  async function deliveries(channelId: string): Promise<any[]> {
    return (await must(client.get(`/api/v1/notification-channels/${channelId}/deliveries`), 200)).data;
  }

  /** A channel's deliveries once `count` of them are no longer pending (svc records them a moment after sending). */
  async function sentDeliveries(channelId: string, count: number): Promise<any[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await deliveries(channelId);
      if (rows.filter((d) => d.status !== "pending").length >= count || Date.now() > deadline) return rows;
      await Bun.sleep(20);
    }
  }

  function expectCloudEvent(r: Received, type: string, incident: any) {
    expect(r.signatureOk).toBe(true);
    expect(r.contentType?.split(";")[0]).toBe("application/cloudevents+json");
    expect(r.timestamp).toMatch(/^\d+$/);
    expect(Math.abs(Number(r.timestamp) * 1000 - r.at)).toBeLessThan(5_000);
    expect(r.json).toEqual({
      specversion: "1.0",
      id: r.json.id,
      source: `/orgs/${slug}/incidents/${incident.id}`,
      type,
      subject: incident.id,
      time: incident.updated_at,
      datacontenttype: "application/json",
      data: incident,
    });
    expect(r.json.id).toMatch(EVENT_ID);
  }

  beforeAll(async () => {
    slug = `copies-${Math.random().toString(36).slice(2, 8)}`;
    const org = await server.admin([
      "org",
      "create",
      "--name",
      "Copies",
      "--slug",
      slug,
      "--owner-email",
      "owner@copies.test",
    ]);
    client = api.as(org.api_key.secret);
    hook = await webhook("Incident hook", "/incidents-hook");
    disabled = await webhook("Disabled hook", "/disabled-hook", false);
    const slackRes = await must(
      client.post("/api/v1/notification-channels", {
        name: "Status Slack",
        type: "slack",
        config: { webhook_url: receiver.url("/incidents-slack") },
      }),
    );
    slack = { id: slackRes.id, path: "/incidents-slack" };
    emailChannel = await must(
      client.post("/api/v1/notification-channels", {
        name: "Comms mail",
        type: "email",
        config: { to: ["comms@copies.test"] },
      }),
    );
    const put = await client.put("/api/v1/org/settings", {
      notifications: {
        default_channel_ids: [],
        incident_channel_ids: [hook.id, disabled.id, slack.id, emailChannel.id],
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.notifications.incident_channel_ids).toEqual([
      hook.id,
      disabled.id,
      slack.id,
      emailChannel.id,
    ]);
  }, SLOW);

  test(
    "created, updated and resolved reach the webhook as signed CloudEvents; deleted sends nothing",
    async () => {
      const monitor = await createMonitor(client);
      const alert = await fire(monitor, "copy", { summary: "Login failures", severity: "critical" }, client);
      const mine = (r: Received) => r.path === hook.path;

      // created: from the alert.
      const created = await must(client.post(`/api/v1/alerts/${alert.id}/create-incident`, {}));
      const [c] = await receiver.waitFor(mine, 1);
      expectCloudEvent(c as Received, "run.service.incident.created.v1", created);

      // updated: a new update.
      const update = await must(
        client.post(`/api/v1/incidents/${created.id}/updates`, { body: "Rolling back the deploy" }),
      );
      const afterUpdate = await must(client.get(`/api/v1/incidents/${created.id}`), 200);
      expect(afterUpdate.updates).toEqual([update]);
      const got2 = await receiver.waitFor(mine, 2);
      expectCloudEvent(got2[1] as Received, "run.service.incident.updated.v1", afterUpdate);

      // resolved: PATCH status resolved.
      const resolved = await must(
        client.patch(`/api/v1/incidents/${created.id}`, { status: "resolved" }),
        200,
      );
      const got3 = await receiver.waitFor(mine, 3);
      expectCloudEvent(got3[2] as Received, "run.service.incident.resolved.v1", resolved);
      expect(resolved.resolved_at).toBe(resolved.updated_at);

      // Each is a delivery of the channel, sent, with no alert.
      const rows = await sentDeliveries(hook.id, 3);
      expect(
        rows
          .map((d) => [d.event_id, d.alert_id, d.status, d.attempts, d.last_status, d.last_error])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      ).toEqual(
        got3
          .map((r) => [r.json.id, null, "sent", 1, 200, null])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
      expect(new Set(got3.map((r) => r.json.id)).size).toBe(3);
      expect(hmacHex("not-the-secret", got3[0]?.timestamp as string, got3[0]?.body as string)).not.toBe(
        got3[0]?.signature,
      );

      // deleted: no copy at all.
      expect((await client.delete(`/api/v1/incidents/${created.id}`)).status).toBe(204);
      await Bun.sleep(1_500);
      expect(receiver.received.filter(mine).map((r) => r.json.type)).toEqual([
        "run.service.incident.created.v1",
        "run.service.incident.updated.v1",
        "run.service.incident.resolved.v1",
      ]);
      expect(await deliveries(hook.id)).toHaveLength(3);
      // A disabled channel gets nothing.
      expect(receiver.received.filter((r) => r.path === disabled.path)).toEqual([]);
      expect(await deliveries(disabled.id)).toEqual([]);
    },
    SLOW,
  );

  test(
    "edits, title changes and deleted updates are updates too; a status change by update can resolve",
    async () => {
      const incident = await must(
        client.post("/api/v1/incidents", {
          title: "Search is slow",
          severity: "minor",
          initial_update: { body: "Looking" },
        }),
      );
      const mine = (r: Received) => r.path === hook.path && r.json?.subject === incident.id;
      await receiver.waitFor(mine, 1);
      const edited = await must(
        client.patch(`/api/v1/incidents/${incident.id}/updates/${incident.updates[0].id}`, {
          body: "Looking!",
        }),
        200,
      );
      const afterEdit = await must(client.get(`/api/v1/incidents/${incident.id}`), 200);
      expect(afterEdit.updates).toEqual([edited]);
      const got = await receiver.waitFor(mine, 2);
      expectCloudEvent(got[1] as Received, "run.service.incident.updated.v1", afterEdit);

      const renamed = await must(
        client.patch(`/api/v1/incidents/${incident.id}`, { title: "Search slow" }),
        200,
      );
      expectCloudEvent(
        (await receiver.waitFor(mine, 3))[2] as Received,
        "run.service.incident.updated.v1",
        renamed,
      );

      // Deleting an update (the owner's key may) is an update of the incident too.
      const extra = await must(client.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Oops" }));
      await receiver.waitFor(mine, 4);
      expect((await client.delete(`/api/v1/incidents/${incident.id}/updates/${extra.id}`)).status).toBe(204);
      const afterDelete = await must(client.get(`/api/v1/incidents/${incident.id}`), 200);
      expect(afterDelete.updates).toEqual([edited]);
      expectCloudEvent(
        (await receiver.waitFor(mine, 5))[4] as Received,
        "run.service.incident.updated.v1",
        afterDelete,
      );

      await must(
        client.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Fixed", status: "resolved" }),
      );
      const resolved = await must(client.get(`/api/v1/incidents/${incident.id}`), 200);
      expectCloudEvent(
        (await receiver.waitFor(mine, 6))[5] as Received,
        "run.service.incident.resolved.v1",
        resolved,
      );
    },
    SLOW,
  );

  test(
    "Slack gets a short text with a link; the email channel a message with the status and latest update",
    async () => {
      const incident = await must(
        client.post("/api/v1/incidents", {
          title: "Mail delays",
          severity: "major",
          initial_update: { body: "Queues are backing up" },
        }),
      );
      const url = `${server.base}/api/v1/incidents/${incident.id}`;
      const slackFor = (r: Received) => r.path === slack.path && r.json?.text?.includes(incident.id);
      const [s1] = await receiver.waitFor(slackFor, 1);
      expect(s1?.contentType?.split(";")[0]).toBe("application/json");
      expect(s1?.json).toEqual({ text: `[INCIDENT] major: Mail delays — <${url}|${incident.id}>` });

      const created = await mail.waitFor(
        (m) => m.to.includes("comms@copies.test") && m.subject === "[svc] INCIDENT: Mail delays",
      );
      // The mail transport may add a line ending at the end; the lines are what matters.
      expect(created.text.replace(/\r\n/g, "\n").trimEnd().split("\n")).toEqual([
        "INCIDENT: Mail delays",
        "Severity: major",
        "Status: investigating",
        "Latest update: Queues are backing up",
        `Incident: ${incident.id}`,
        "",
        url,
      ]);
      expect(created.html).toContain(url);
      expect(created.html).toContain("<p>Status: investigating</p>");

      await must(client.patch(`/api/v1/incidents/${incident.id}`, { status: "resolved" }), 200);
      const s = await receiver.waitFor(slackFor, 2);
      expect(s[1]?.json).toEqual({
        text: `[INCIDENT RESOLVED] major: Mail delays — <${url}|${incident.id}>`,
      });
      const done = await mail.waitFor(
        (m) => m.to.includes("comms@copies.test") && m.subject === "[svc] INCIDENT RESOLVED: Mail delays",
      );
      // The status change's update has no body: the latest update with words is quoted.
      expect(done.text).toContain("Status: resolved");
      expect(done.text).toContain("Latest update: Queues are backing up");

      await must(client.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Postmortem published" }));
      const s3 = await receiver.waitFor(slackFor, 3);
      expect(s3[2]?.json).toEqual({ text: `[INCIDENT UPDATE] major: Mail delays — <${url}|${incident.id}>` });
      const upd = await mail.waitFor(
        (m) => m.to.includes("comms@copies.test") && m.subject === "[svc] INCIDENT UPDATE: Mail delays",
      );
      expect(upd.text).toContain("Latest update: Postmortem published");

      // Every incident channel got the same events, each sent once: 3 + 6 + 3 in these tests.
      const eventIds = (rows: any[]) => rows.map((d) => `${d.event_id} ${d.status} ${d.alert_id}`).sort();
      const hookRows = eventIds(await sentDeliveries(hook.id, 12));
      expect(hookRows).toHaveLength(12);
      expect(hookRows.every((r) => r.endsWith(" sent null"))).toBe(true);
      expect(eventIds(await sentDeliveries(slack.id, 12))).toEqual(hookRows);
      expect(eventIds(await sentDeliveries(emailChannel.id, 12))).toEqual(hookRows);
    },
    SLOW,
  );

  test(
    "without incident channels in the settings, nothing is sent",
    async () => {
      const put = await client.put("/api/v1/org/settings", { notifications: { incident_channel_ids: [] } });
      expect(put.status).toBe(200);
      const incident = await must(
        client.post("/api/v1/incidents", { title: "Quiet incident", severity: "minor" }),
      );
      await must(client.post(`/api/v1/incidents/${incident.id}/updates`, { body: "Still quiet" }));
      await must(client.patch(`/api/v1/incidents/${incident.id}`, { status: "resolved" }), 200);
      await Bun.sleep(1_500);
      expect(receiver.received.filter((r) => r.body.includes(incident.id))).toEqual([]);
      expect(mail.messages.filter((m) => m.subject.includes("Quiet incident"))).toEqual([]);
      for (const channel of [hook, slack, emailChannel]) {
        const rows = await deliveries(channel.id);
        expect(rows.filter((d) => d.created_at >= incident.created_at)).toEqual([]);
      }
    },
    SLOW,
  );
});
