/**
 * Escalation policies through a real `svc serve`: CRUD with exact bodies, targets checked
 * against the org (users not suspended), team rules, the in-use rules in both directions
 * (a policy used by a monitor; a schedule or user named by a policy), and access. Black-box:
 * plain HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AccessCall, expectReadOnly, expectRefused, UNKNOWN_KEY } from "../support/access.ts";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI or sign users up (argon2id) get more than the default 5 s. */
const SLOW = 30_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const POLICY_ID = /^pol_[0-9a-z]{26}$/;
const STEP_ID = /^stp_[0-9a-z]{26}$/;
const BASE = "/api/v1/escalation-policies";
const UNKNOWN = {
  user: "usr_01jzzzzzzzzzzzzzzzzzzzzzzz",
  schedule: "sch_01jzzzzzzzzzzzzzzzzzzzzzzz",
  channel: "chn_01jzzzzzzzzzzzzzzzzzzzzzzz",
};

let server: TestServer;
let admin: Client;
let anon: Client;
let alice: string;
let bob: string;
let suspended: string;
let schedule: string;
let channel: string;
let foreign: {
  client: Client;
  userId: string;
  scheduleId: string;
  channelId: string;
  teamId: string;
  policyId: string;
};

async function invite(email: string, role = "member"): Promise<string> {
  const res = await admin.post("/api/v1/users", { email, role });
  if (res.status !== 201) throw new Error(`invite ${email}: ${res.text}`);
  return res.body.id;
}

async function must(res: Promise<Response2>, status = 201): Promise<any> {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${r.text}`);
  return r.body;
}

const scheduleBody = (name: string, participants: string[] = []) => ({
  name,
  time_zone: "UTC",
  layers:
    participants.length === 0 ? [] : [{ rotation: "daily", start_at: "2026-01-01T00:00:00Z", participants }],
});

beforeAll(async () => {
  server = await TestServer.start();
  admin = server.client();
  anon = admin.as();
  alice = await invite("alice@acme.test");
  bob = await invite("bob@acme.test");
  suspended = await invite("sus@acme.test");
  await must(admin.patch(`/api/v1/users/${suspended}`, { status: "suspended" }), 200);
  schedule = (await must(admin.post("/api/v1/schedules", scheduleBody("Primary", [alice, bob])))).id;
  channel = (
    await must(
      admin.post("/api/v1/notification-channels", {
        name: "Slack #ops",
        type: "slack",
        config: { webhook_url: "https://hooks.slack.com/services/T/B/X" },
      }),
    )
  ).id;

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
  const theirSchedule = await must(
    client.post("/api/v1/schedules", scheduleBody("Theirs", [other.owner.id])),
  );
  const theirChannel = await must(
    client.post("/api/v1/notification-channels", { name: "Theirs", type: "cloudevents", config: {} }),
  );
  const theirTeam = await must(client.post("/api/v1/teams", { name: "Their team" }));
  const theirPolicy = await must(
    client.post(BASE, {
      name: "Their policy",
      steps: [{ delay_seconds: 60, targets: [{ type: "user", id: other.owner.id }] }],
    }),
  );
  foreign = {
    client,
    userId: other.owner.id,
    scheduleId: theirSchedule.id,
    channelId: theirChannel.id,
    teamId: theirTeam.id,
    policyId: theirPolicy.id,
  };
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

async function createPolicy(body: Record<string, unknown>, client = admin): Promise<any> {
  const res = await client.post(BASE, body);
  if (res.status !== 201) throw new Error(`create policy: ${res.status} ${res.text}`);
  return res.body;
}

const simple = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  steps: [{ delay_seconds: 300, targets: [{ type: "user", id: alice }] }],
  ...extra,
});

async function policyIds(): Promise<string[]> {
  const res = await admin.get(`${BASE}?limit=200`);
  expect(res.status).toBe(200);
  return res.body.data.map((p: { id: string }) => p.id);
}

async function createMonitor(policyId: string | null, name = "Uses a policy"): Promise<string> {
  const res = await admin.post("/api/v1/monitors", { name, type: "event", escalation_policy_id: policyId });
  if (res.status !== 201) throw new Error(`create monitor: ${res.text}`);
  return res.body.id;
}

describe("policies CRUD", () => {
  test("create, read, list, change and delete", async () => {
    const created = await admin.post(BASE, {
      name: "  Platform paging  ",
      steps: [
        {
          delay_seconds: 300,
          targets: [
            { type: "user", id: alice },
            { type: "schedule", id: schedule },
          ],
        },
        { delay_seconds: 0, targets: [{ type: "channel", id: channel }] },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(POLICY_ID),
      name: "Platform paging",
      team_id: null,
      repeat: 0,
      steps: [
        {
          id: expect.stringMatching(STEP_ID),
          delay_seconds: 300,
          targets: [
            { type: "user", id: alice },
            { type: "schedule", id: schedule },
          ],
        },
        {
          id: expect.stringMatching(STEP_ID),
          delay_seconds: 0,
          targets: [{ type: "channel", id: channel }],
        },
      ],
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    const id = created.body.id as string;
    const [step1, step2] = created.body.steps.map((s: { id: string }) => s.id);
    expect(step1).not.toBe(step2);

    const read = await admin.get(`${BASE}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    const list = await admin.get(`${BASE}?limit=200`);
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.next_cursor).toBeNull();
    expect(list.body.data).toContainEqual(created.body);

    // Name and repeat: the steps and their ids stay.
    const renamed = await admin.patch(`${BASE}/${id}`, { name: "Platform paging (v2)", repeat: 3 });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({
      ...created.body,
      name: "Platform paging (v2)",
      repeat: 3,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));

    // Steps are replaced whole, with new step ids.
    const restepped = await admin.patch(`${BASE}/${id}`, {
      steps: [{ delay_seconds: 600, targets: [{ type: "user", id: bob }] }],
    });
    expect(restepped.status).toBe(200);
    expect(restepped.body).toEqual({
      ...renamed.body,
      steps: [
        { id: expect.stringMatching(STEP_ID), delay_seconds: 600, targets: [{ type: "user", id: bob }] },
      ],
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect([step1, step2]).not.toContain(restepped.body.steps[0].id);

    // The same steps again still get new ids.
    const again = await admin.patch(`${BASE}/${id}`, {
      steps: [{ delay_seconds: 600, targets: [{ type: "user", id: bob }] }],
    });
    expect(again.body.steps[0].id).toMatch(STEP_ID);
    expect(again.body.steps[0].id).not.toBe(restepped.body.steps[0].id);

    const noRepeat = await admin.patch(`${BASE}/${id}`, { repeat: 0 });
    expect(noRepeat.body.repeat).toBe(0);
    expect((await admin.get(`${BASE}/${id}`)).body).toEqual(noRepeat.body);

    const deleted = await admin.delete(`${BASE}/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expectError(await admin.get(`${BASE}/${id}`), 404, "not_found");
    expectError(await admin.patch(`${BASE}/${id}`, { name: "x" }), 404, "not_found");
    expectError(await admin.delete(`${BASE}/${id}`), 404, "not_found");
    expect(await policyIds()).not.toContain(id);
  });

  test("repeat, team and several targets of one step are stored as given", async () => {
    const team = await must(admin.post("/api/v1/teams", { name: "Storage" }));
    const created = await admin.post(BASE, {
      name: "Storage",
      team_id: team.id,
      repeat: 20,
      steps: [
        {
          delay_seconds: 7 * 86_400,
          targets: [
            { type: "schedule", id: schedule },
            { type: "user", id: bob },
            { type: "user", id: alice },
            { type: "channel", id: channel },
          ],
        },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(POLICY_ID),
      name: "Storage",
      team_id: team.id,
      repeat: 20,
      steps: [
        {
          id: expect.stringMatching(STEP_ID),
          delay_seconds: 604_800,
          targets: [
            { type: "schedule", id: schedule },
            { type: "user", id: bob },
            { type: "user", id: alice },
            { type: "channel", id: channel },
          ],
        },
      ],
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    const cleared = await admin.patch(`${BASE}/${created.body.id}`, { team_id: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.team_id).toBeNull();
  });

  test("the list pages by cursor and filters by team", async () => {
    const team = await must(admin.post("/api/v1/teams", { name: "Paging team" }));
    const made: string[] = [];
    for (const name of ["P1", "P2", "P3", "P4", "P5"]) {
      made.push((await createPolicy(simple(name, { team_id: team.id }))).id);
    }
    await createPolicy(simple("Not in the team"));
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const res = await admin.get(
        `${BASE}?limit=2&team_id=${team.id}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((p: { id: string; team_id: string }) => p.id));
      for (const p of res.body.data) expect(p.team_id).toBe(team.id);
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      cursor = res.body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toEqual(made);
    const other = await admin.get(`${BASE}?team_id=${foreign.teamId}`);
    expect(other.body).toEqual({ data: [], next_cursor: null, has_more: false });
    expectError(await admin.get(`${BASE}?cursor=nonsense`), 400, "invalid_cursor");
    expectValidation(await admin.get(`${BASE}?limit=201`), "limit");
    expectValidation(await admin.get(`${BASE}?bogus=1`), "bogus");
  });
});

describe("validation: 400 naming the field, nothing stored", () => {
  test("targets must exist in the org; users must not be suspended", async () => {
    const step0 = { delay_seconds: 60, targets: [{ type: "user", id: alice }] };
    const withTarget = (type: string, id: string) => ({
      name: "Bad target",
      steps: [
        step0,
        {
          delay_seconds: 60,
          targets: [
            { type: "channel", id: channel },
            { type, id },
          ],
        },
      ],
    });
    const cases: [string, unknown][] = [
      ["unknown user", withTarget("user", UNKNOWN.user)],
      ["another org's user", withTarget("user", foreign.userId)],
      ["a suspended user", withTarget("user", suspended)],
      ["unknown schedule", withTarget("schedule", UNKNOWN.schedule)],
      ["another org's schedule", withTarget("schedule", foreign.scheduleId)],
      ["unknown channel", withTarget("channel", UNKNOWN.channel)],
      ["another org's channel", withTarget("channel", foreign.channelId)],
      ["a user id as a schedule", withTarget("schedule", alice)],
      ["a schedule id as a channel", withTarget("channel", schedule)],
      ["a channel id as a user", withTarget("user", channel)],
    ];
    const before = await policyIds();
    for (const [label, body] of cases) {
      const res = await admin.post(BASE, body);
      expect({
        label,
        status: res.status,
        code: res.body?.error?.code,
        paths: res.body?.error?.details,
      }).toEqual({
        label,
        status: 400,
        code: "validation_failed",
        paths: { fields: [{ path: "steps.1.targets.1.id", problem: expect.any(String) }] },
      });
    }
    // The first bad target is named, in step order.
    const twoBad = await admin.post(BASE, {
      name: "Two bad",
      steps: [
        {
          delay_seconds: 0,
          targets: [
            { type: "user", id: alice },
            { type: "schedule", id: UNKNOWN.schedule },
          ],
        },
        { delay_seconds: 0, targets: [{ type: "user", id: UNKNOWN.user }] },
      ],
    });
    expectValidation(twoBad, "steps.0.targets.1.id");
    expect(await policyIds()).toEqual(before);

    // On PATCH too, and the policy stays as it was.
    const policy = await createPolicy(simple("Patched with a bad target"));
    for (const [, body] of cases) {
      const res = await admin.patch(`${BASE}/${policy.id}`, { steps: (body as { steps: unknown }).steps });
      expectValidation(res, "steps.1.targets.1.id");
    }
    expect((await admin.get(`${BASE}/${policy.id}`)).body).toEqual(policy);
  });

  test("an invited user (not yet signed up) is a valid target", async () => {
    const invited = await invite("newbie@acme.test");
    const created = await admin.post(BASE, {
      name: "Invited target",
      steps: [{ delay_seconds: 0, targets: [{ type: "user", id: invited }] }],
    });
    expect(created.status).toBe(201);
    expect(created.body.steps[0].targets).toEqual([{ type: "user", id: invited }]);
  });

  test("body shapes", async () => {
    const step = { delay_seconds: 60, targets: [{ type: "user", id: alice }] };
    const cases: [unknown, string][] = [
      [{ steps: [step] }, "name"],
      [{ name: "", steps: [step] }, "name"],
      [{ name: "   ", steps: [step] }, "name"],
      [{ name: "No steps" }, "steps"],
      [{ name: "Empty steps", steps: [] }, "steps"],
      [{ name: "Empty targets", steps: [{ delay_seconds: 0, targets: [] }] }, "steps.0.targets"],
      [{ name: "Negative delay", steps: [{ ...step, delay_seconds: -1 }] }, "steps.0.delay_seconds"],
      [{ name: "Fractional delay", steps: [{ ...step, delay_seconds: 1.5 }] }, "steps.0.delay_seconds"],
      [{ name: "Week+1 delay", steps: [{ ...step, delay_seconds: 604_801 }] }, "steps.0.delay_seconds"],
      [{ name: "No delay", steps: [{ targets: step.targets }] }, "steps.0.delay_seconds"],
      [
        { name: "Team target", steps: [{ ...step, targets: [{ type: "team", id: alice }] }] },
        "steps.0.targets.0.type",
      ],
      [{ name: "No target id", steps: [{ ...step, targets: [{ type: "user" }] }] }, "steps.0.targets.0.id"],
      [
        {
          name: "Extra target field",
          steps: [{ ...step, targets: [{ type: "user", id: alice, urgent: true }] }],
        },
        "steps.0.targets.0.urgent",
      ],
      [{ name: "Extra step field", steps: [{ ...step, id: "stp_x" }] }, "steps.0.id"],
      [{ name: "Repeat 21", repeat: 21, steps: [step] }, "repeat"],
      [{ name: "Repeat -1", repeat: -1, steps: [step] }, "repeat"],
      [{ name: "Unknown team", team_id: "team_01jzzzzzzzzzzzzzzzzzzzzzzz", steps: [step] }, "team_id"],
      [{ name: "Their team", team_id: foreign.teamId, steps: [step] }, "team_id"],
      [{ name: "Unknown field", steps: [step], targets: [] }, "targets"],
    ];
    const before = await policyIds();
    for (const [body, path] of cases) {
      expectValidation(await admin.post(BASE, body), path);
    }
    expect(await policyIds()).toEqual(before);

    const policy = await createPolicy(simple("Shapes"));
    for (const [body, path] of [
      [{ name: "  " }, "name"],
      [{ steps: [] }, "steps"],
      [{ repeat: 21 }, "repeat"],
      [{ team_id: foreign.teamId }, "team_id"],
      [{ id: "pol_x" }, "id"],
    ] as const) {
      expectValidation(await admin.patch(`${BASE}/${policy.id}`, body), path);
    }
    expect((await admin.get(`${BASE}/${policy.id}`)).body).toEqual(policy);
  });
});

describe("in use", () => {
  test("a policy that monitors use cannot be deleted (409 conflict with monitor_ids)", async () => {
    const policy = await createPolicy(simple("Used by monitors"));
    const m1 = await createMonitor(policy.id, "First user");
    const m2 = await createMonitor(policy.id, "Second user");

    const res = await admin.delete(`${BASE}/${policy.id}`);
    expectError(res, 409, "conflict");
    expect(res.body.error.details).toEqual({ monitor_ids: [m1, m2].sort() });
    expect((await admin.get(`${BASE}/${policy.id}`)).body).toEqual(policy);

    // Changing the policy is fine while it is in use.
    expect((await admin.patch(`${BASE}/${policy.id}`, { repeat: 1 })).status).toBe(200);

    expect((await admin.patch(`/api/v1/monitors/${m1}`, { escalation_policy_id: null })).status).toBe(200);
    const one = await admin.delete(`${BASE}/${policy.id}`);
    expectError(one, 409, "conflict");
    expect(one.body.error.details).toEqual({ monitor_ids: [m2] });

    expect((await admin.delete(`/api/v1/monitors/${m2}`)).status).toBe(204);
    expect((await admin.delete(`${BASE}/${policy.id}`)).status).toBe(204);
    expectError(await admin.get(`${BASE}/${policy.id}`), 404, "not_found");
  });

  test("deleting a schedule a policy names is 409 schedule_in_use with the policy ids", async () => {
    const sched = await must(admin.post("/api/v1/schedules", scheduleBody("Named by policies")));
    const stepWith = { delay_seconds: 0, targets: [{ type: "schedule", id: sched.id }] };
    const p1 = await createPolicy({ name: "Names it", steps: [stepWith] });
    const p2 = await createPolicy({
      name: "Names it twice",
      steps: [stepWith, { delay_seconds: 60, targets: [{ type: "user", id: alice }, ...stepWith.targets] }],
    });
    const res = await admin.delete(`/api/v1/schedules/${sched.id}`);
    expectError(res, 409, "schedule_in_use");
    expect(res.body.error.details).toEqual({ policy_ids: [p1.id, p2.id].sort() });
    expect((await admin.get(`/api/v1/schedules/${sched.id}`)).status).toBe(200);

    // One policy stops naming it, the other is deleted: the schedule can go.
    expect((await admin.patch(`${BASE}/${p2.id}`, { steps: [step0()] })).status).toBe(200);
    const left = await admin.delete(`/api/v1/schedules/${sched.id}`);
    expectError(left, 409, "schedule_in_use");
    expect(left.body.error.details).toEqual({ policy_ids: [p1.id] });
    expect((await admin.delete(`${BASE}/${p1.id}`)).status).toBe(204);
    expect((await admin.delete(`/api/v1/schedules/${sched.id}`)).status).toBe(204);
  });

  test("deleting a user a policy names is 409 user_in_use with the policy ids", async () => {
    const pat = await invite("pat@acme.test");
    const p1 = await createPolicy({
      name: "Pages Pat",
      steps: [{ delay_seconds: 0, targets: [{ type: "user", id: pat }] }],
    });
    const p2 = await createPolicy({
      name: "Pages Pat later",
      steps: [step0(), { delay_seconds: 0, targets: [{ type: "user", id: pat }] }],
    });
    const res = await admin.delete(`/api/v1/users/${pat}`);
    expectError(res, 409, "user_in_use");
    expect(res.body.error.details).toEqual({
      schedule_ids: [],
      override_ids: [],
      policy_ids: [p1.id, p2.id].sort(),
    });

    // In a schedule as well: both are listed.
    const sched = await must(admin.post("/api/v1/schedules", scheduleBody("Pat's rota", [pat])));
    const both = await admin.delete(`/api/v1/users/${pat}`);
    expectError(both, 409, "user_in_use");
    expect(both.body.error.details).toEqual({
      schedule_ids: [sched.id],
      override_ids: [],
      policy_ids: [p1.id, p2.id].sort(),
    });
    expect((await admin.delete(`/api/v1/schedules/${sched.id}`)).status).toBe(204);

    expect((await admin.patch(`${BASE}/${p2.id}`, { steps: [step0()] })).status).toBe(200);
    const one = await admin.delete(`/api/v1/users/${pat}`);
    expectError(one, 409, "user_in_use");
    expect(one.body.error.details).toEqual({ schedule_ids: [], override_ids: [], policy_ids: [p1.id] });

    // Deleting the policy releases the user.
    expect((await admin.delete(`${BASE}/${p1.id}`)).status).toBe(204);
    expect((await admin.delete(`/api/v1/users/${pat}`)).status).toBe(204);
    expectError(await admin.get(`/api/v1/users/${pat}`), 404, "not_found");
  });
});

function step0() {
  return { delay_seconds: 60, targets: [{ type: "user", id: alice }] };
}

describe("access", () => {
  let policy: any;
  let viewer: Client;
  let monitorsKey: Client;
  let alertsKey: Client;

  beforeAll(async () => {
    policy = await createPolicy(simple("Access"));
    viewer = admin.as((await signUpUser(server, "viewer@acme.test", "viewer")).token);
    const monitors = await must(
      admin.post("/api/v1/api-keys", { name: "monitors only", scopes: ["monitors"] }),
    );
    monitorsKey = admin.as(monitors.secret);
    const alerts = await must(admin.post("/api/v1/api-keys", { name: "alerts only", scopes: ["alerts"] }));
    alertsKey = admin.as(alerts.secret);
  }, SLOW);

  const calls = (): AccessCall[] => [
    { label: "list", write: false, run: (c) => c.get(BASE) },
    { label: "read", write: false, run: (c) => c.get(`${BASE}/${policy.id}`) },
    { label: "create", write: true, run: (c) => c.post(BASE, simple("New")) },
    { label: "patch", write: true, run: (c) => c.patch(`${BASE}/${policy.id}`, { name: "Changed" }) },
    { label: "delete", write: true, run: (c) => c.delete(`${BASE}/${policy.id}`) },
  ];

  test("no credential → 401; a key without the alerts scope → 403 insufficient_scope", async () => {
    const before = await policyIds();
    await expectRefused(calls(), [
      [anon, 401, "unauthenticated"],
      [admin.as(UNKNOWN_KEY), 401, "unauthenticated"],
      [monitorsKey, 403, "insufficient_scope"],
    ]);
    expect(await policyIds()).toEqual(before);
    expect((await admin.get(`${BASE}/${policy.id}`)).body).toEqual(policy);
  });

  test("a key with the alerts scope reads and changes policies", async () => {
    expect((await alertsKey.get(BASE)).status).toBe(200);
    expect((await alertsKey.get(`${BASE}/${policy.id}`)).body).toEqual(policy);
    const made = await alertsKey.post(BASE, simple("Via alerts key"));
    expect(made.status).toBe(201);
    expect((await alertsKey.patch(`${BASE}/${made.body.id}`, { repeat: 2 })).body.repeat).toBe(2);
    expect((await alertsKey.delete(`${BASE}/${made.body.id}`)).status).toBe(204);
  });

  test("a viewer reads policies and changes nothing (403 forbidden_role)", async () => {
    const before = await policyIds();
    await expectReadOnly(calls(), viewer);
    expect(await policyIds()).toEqual(before);
    expect((await admin.get(`${BASE}/${policy.id}`)).body).toEqual(policy);
  });

  test("another org's policy is 404 on every endpoint and absent from the list", async () => {
    const theirs = (await foreign.client.get(`${BASE}/${foreign.policyId}`)).body;
    for (const res of [
      await admin.get(`${BASE}/${foreign.policyId}`),
      await admin.patch(`${BASE}/${foreign.policyId}`, { name: "Mine now" }),
      await admin.patch(`${BASE}/${foreign.policyId}`, { steps: [step0()] }),
      await admin.delete(`${BASE}/${foreign.policyId}`),
    ]) {
      expectError(res, 404, "not_found");
    }
    expect(await policyIds()).not.toContain(foreign.policyId);
    expect((await foreign.client.get(`${BASE}/${foreign.policyId}`)).body).toEqual(theirs);
    expectError(await foreign.client.get(`${BASE}/${policy.id}`), 404, "not_found");
    const theirList = await foreign.client.get(`${BASE}?limit=200`);
    expect(theirList.body.data.map((p: { id: string }) => p.id)).toEqual([foreign.policyId]);
  });

  test(
    "team rules: a member changes policies of their teams or of no team",
    async () => {
      const mia = await signUpUser(server, "mia@acme.test", "member");
      const teamA = await must(admin.post("/api/v1/teams", { name: "Team A", member_ids: [mia.user.id] }));
      const teamB = await must(admin.post("/api/v1/teams", { name: "Team B" }));
      const A = teamA.id as string;
      const B = teamB.id as string;
      const member = admin.as(mia.token);

      // Create: team A or no team; not team B.
      const ofA = await member.post(BASE, simple("A's", { team_id: A }));
      expect(ofA.status).toBe(201);
      expect(ofA.body.team_id).toBe(A);
      const ofNone = await member.post(BASE, simple("Nobody's"));
      expect(ofNone.status).toBe(201);
      expect(ofNone.body.team_id).toBeNull();
      const before = await policyIds();
      expectError(await member.post(BASE, simple("B's", { team_id: B })), 403, "forbidden_role");
      expect(await policyIds()).toEqual(before);

      // Change: A's and no team's policies.
      expect(
        (await member.patch(`${BASE}/${ofA.body.id}`, { name: "A's (changed)", repeat: 1 })).status,
      ).toBe(200);
      expect((await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: A })).status).toBe(200);
      expect((await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: null })).status).toBe(200);
      expect(
        (
          await member.patch(`${BASE}/${ofNone.body.id}`, {
            steps: [{ delay_seconds: 5, targets: [{ type: "schedule", id: schedule }] }],
          })
        ).status,
      ).toBe(200);

      // Team B's policy: readable, not changeable.
      const ofB = await createPolicy(simple("B's", { team_id: B }));
      expect((await member.get(`${BASE}/${ofB.id}`)).body).toEqual(ofB);
      expect((await member.get(`${BASE}?team_id=${B}`)).body.data).toEqual([ofB]);
      for (const res of [
        await member.patch(`${BASE}/${ofB.id}`, { name: "Mine now" }),
        await member.patch(`${BASE}/${ofB.id}`, { team_id: A }),
        await member.patch(`${BASE}/${ofB.id}`, { team_id: null }),
        await member.patch(`${BASE}/${ofB.id}`, { steps: [step0()] }),
        await member.delete(`${BASE}/${ofB.id}`),
        // Moving one of their own policies to team B.
        await member.patch(`${BASE}/${ofA.body.id}`, { team_id: B }),
        await member.patch(`${BASE}/${ofNone.body.id}`, { team_id: B }),
      ]) {
        expectError(res, 403, "forbidden_role");
      }
      expect((await admin.get(`${BASE}/${ofB.id}`)).body).toEqual(ofB);
      expect((await admin.get(`${BASE}/${ofA.body.id}`)).body.team_id).toBe(A);
      expect((await admin.get(`${BASE}/${ofNone.body.id}`)).body.team_id).toBeNull();

      // A team of another org is 400 for members too.
      expectValidation(await member.patch(`${BASE}/${ofA.body.id}`, { team_id: foreign.teamId }), "team_id");

      // A member's own API key is held to the same team rules.
      const key = await member.post("/api/v1/api-keys", { name: "mia's key", scopes: ["alerts"] });
      expect(key.status).toBe(201);
      const miaKey = admin.as(key.body.secret);
      expectError(await miaKey.patch(`${BASE}/${ofB.id}`, { name: "Via key" }), 403, "forbidden_role");
      expectError(await miaKey.post(BASE, simple("B's via key", { team_id: B })), 403, "forbidden_role");
      expect((await miaKey.patch(`${BASE}/${ofA.body.id}`, { repeat: 2 })).status).toBe(200);

      // An admin changes anything, and may move policies between teams.
      const moved = await admin.patch(`${BASE}/${ofB.id}`, { team_id: A });
      expect(moved.status).toBe(200);
      expect(moved.body.team_id).toBe(A);
      expect((await member.patch(`${BASE}/${ofB.id}`, { name: "Now A's" })).status).toBe(200);
      expect((await admin.patch(`${BASE}/${ofA.body.id}`, { team_id: B })).status).toBe(200);
      expectError(await member.patch(`${BASE}/${ofA.body.id}`, { name: "Gone" }), 403, "forbidden_role");
      expectError(await member.delete(`${BASE}/${ofA.body.id}`), 403, "forbidden_role");
      expect((await member.delete(`${BASE}/${ofB.id}`)).status).toBe(204);
      expect((await member.delete(`${BASE}/${ofNone.body.id}`)).status).toBe(204);
      expect((await admin.delete(`${BASE}/${ofA.body.id}`)).status).toBe(204);
    },
    SLOW,
  );
});
