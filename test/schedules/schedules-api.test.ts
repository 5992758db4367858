/**
 * The schedules API through a real `svc serve`: CRUD, who is on call, the timeline, overrides,
 * the iCalendar feed and its secret URL, validation, access and team rules, and the
 * `user_in_use` guard on deleting users. Black-box: plain HTTP and the admin CLI only.
 *
 * On-call expectations are literals derived by hand from DESIGN §6 ("Precise rules"): windows
 * are half-open, k counts the handoff instants in (start_at, t], wall-clock handoffs in the
 * schedule's zone. Europe/Berlin is CET (UTC+1) until 2026-03-29 01:00Z, then CEST (UTC+2)
 * until 2026-10-25 01:00Z.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AccessCall, expectReadOnly, expectRefused, UNKNOWN_KEY } from "../support/access.ts";
import { type Client, type Response2, signUpUser, TestServer } from "../support/harness.ts";

/** Tests that spawn the CLI, sign users up (argon2id) or wait for the clock get more than 5 s. */
const SLOW = 30_000;
const DAY = 86_400_000;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SCHEDULE_ID = /^sch_[0-9a-z]{26}$/;
const OVERRIDE_ID = /^ovr_[0-9a-z]{26}$/;

let server: TestServer;
let admin: Client;
let anon: Client;
/** user id by email, for the users of org A (owner included). */
const idOf: Record<string, string> = {};
let owner: string;
let alice: string;
let bob: string;
let carol: string;
let dave: string;
let foreign: {
  client: Client;
  ownerId: string;
  scheduleId: string;
  overrideId: string;
  teamId: string;
};

async function invite(email: string, role = "member"): Promise<string> {
  const res = await admin.post("/api/v1/users", { email, role });
  if (res.status !== 201) throw new Error(`invite ${email}: ${res.text}`);
  idOf[email] = res.body.id;
  return res.body.id;
}

beforeAll(async () => {
  server = await TestServer.start();
  admin = server.client();
  anon = admin.as();
  owner = server.init?.owner.id as string;
  idOf["owner@acme.test"] = owner;
  alice = await invite("alice@acme.test");
  bob = await invite("bob@acme.test");
  carol = await invite("carol@acme.test");
  dave = await invite("dave@acme.test");

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
  const schedule = await client.post("/api/v1/schedules", {
    name: "Other on-call",
    time_zone: "UTC",
    layers: [{ rotation: "daily", start_at: "2026-01-01T00:00:00Z", participants: [other.owner.id] }],
  });
  if (schedule.status !== 201) throw new Error(schedule.text);
  const override = await client.post(`/api/v1/schedules/${schedule.body.id}/overrides`, {
    user_id: other.owner.id,
    start_at: new Date(Date.now() + DAY).toISOString(),
    end_at: new Date(Date.now() + 2 * DAY).toISOString(),
  });
  if (override.status !== 201) throw new Error(override.text);
  const team = await client.post("/api/v1/teams", { name: "Other team" });
  if (team.status !== 201) throw new Error(team.text);
  foreign = {
    client,
    ownerId: other.owner.id,
    scheduleId: schedule.body.id,
    overrideId: override.body.id,
    teamId: team.body.id,
  };
}, SLOW);
afterAll(() => server.dispose());

function fieldPaths(res: Response2): string[] {
  return res.body.error.details.fields.map((f: { path: string }) => f.path);
}

function expectValidation(res: Response2, path: string) {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe("validation_failed");
  expect(fieldPaths(res)).toContain(path);
}

function expectError(res: Response2, status: number, code: string) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

async function createSchedule(body: Record<string, unknown>, client = admin): Promise<any> {
  const res = await client.post("/api/v1/schedules", body);
  if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${res.text}`);
  return res.body;
}

async function createOverride(scheduleId: string, body: Record<string, unknown>, client = admin) {
  const res = await client.post(`/api/v1/schedules/${scheduleId}/overrides`, body);
  if (res.status !== 201) throw new Error(`create override: ${res.status} ${res.text}`);
  return res.body;
}

async function scheduleIds(): Promise<string[]> {
  const res = await admin.get("/api/v1/schedules?limit=200");
  expect(res.status).toBe(200);
  return res.body.data.map((s: { id: string }) => s.id);
}

/** GET on-call at `at` and compare the whole result; `email` null means nobody on call. */
async function expectOnCall(
  scheduleId: string,
  at: string,
  email: string | null,
  layer: string | null,
  until: string,
) {
  const res = await admin.get(`/api/v1/schedules/${scheduleId}/on-call?at=${encodeURIComponent(at)}`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    data: {
      schedule_id: scheduleId,
      at: new Date(at).toISOString(),
      user_id: email === null ? null : idOf[email],
      user_email: email,
      layer,
      until,
    },
  });
}

type Seg = [email: string | null, layer: string | null, start: string, end: string];

/** GET the timeline; checks that segments tile [from, to) and returns them as tuples. */
async function timeline(scheduleId: string, from: string, to: string): Promise<Seg[]> {
  const res = await admin.get(
    `/api/v1/schedules/${scheduleId}/timeline?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
  );
  expect(res.status).toBe(200);
  const data = res.body.data as {
    user_id: string | null;
    user_email: string | null;
    layer: string | null;
    start: string;
    end: string;
  }[];
  expect(data.length).toBeGreaterThan(0);
  expect(data[0]?.start).toBe(new Date(from).toISOString());
  expect(data.at(-1)?.end).toBe(new Date(to).toISOString());
  for (let i = 0; i < data.length; i++) {
    const s = data[i] as (typeof data)[number];
    expect(Object.keys(s).sort()).toEqual(["end", "layer", "start", "user_email", "user_id"]);
    expect(Date.parse(s.start)).toBeLessThan(Date.parse(s.end));
    if (i > 0) expect(s.start).toBe(data[i - 1]?.end as string);
    expect(s.user_id).toBe(s.user_email === null ? null : (idOf[s.user_email] as string));
  }
  return data.map((s) => [s.user_email, s.layer, s.start, s.end]);
}

/** The weekly layer of the DST tests: Monday 09:00 Berlin handoffs from Mon 2026-03-16 09:00 CET. */
const weeklyBerlin = () => ({
  name: "Primary",
  description: "Weekly platform rotation",
  time_zone: "Europe/Berlin",
  layers: [
    {
      name: "Primary rotation",
      rotation: "weekly",
      start_at: "2026-03-16T09:00:00+01:00",
      handoff_time: "mon 09:00",
      participants: [alice, bob, carol],
    },
  ],
});

describe("schedules CRUD", () => {
  test("create, read, list, change and delete", async () => {
    const created = await admin.post("/api/v1/schedules", {
      ...weeklyBerlin(),
      name: "  Primary  ",
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(SCHEDULE_ID),
      name: "Primary",
      description: "Weekly platform rotation",
      time_zone: "Europe/Berlin",
      team_id: null,
      layers: [
        {
          name: "Primary rotation",
          rotation: "weekly",
          start_at: "2026-03-16T08:00:00.000Z", // 09:00+01:00, out in UTC
          handoff_time: "mon 09:00",
          participants: [alice, bob, carol],
          restrictions: [],
        },
      ],
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
    });
    const id = created.body.id as string;

    const read = await admin.get(`/api/v1/schedules/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    const list = await admin.get("/api/v1/schedules?limit=200");
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.next_cursor).toBeNull();
    expect(list.body.data).toContainEqual(created.body);

    const renamed = await admin.patch(`/api/v1/schedules/${id}`, {
      name: "Primary (renamed)",
      description: "",
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({
      ...created.body,
      name: "Primary (renamed)",
      description: "",
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));

    // Layers are replaced whole; a daily layer without handoff_time keeps null; names default.
    const relayered = await admin.patch(`/api/v1/schedules/${id}`, {
      time_zone: "America/New_York",
      layers: [
        { rotation: "daily", start_at: "2026-04-01T08:00:00-04:00", participants: [dave] },
        {
          rotation: "daily",
          start_at: "2026-04-01T08:00:00Z",
          handoff_time: "18:30",
          participants: [bob, alice],
          restrictions: [{ days: ["sat", "sun"], start: "00:00", end: "00:00" }],
        },
      ],
    });
    expect(relayered.status).toBe(200);
    expect(relayered.body.time_zone).toBe("America/New_York");
    expect(relayered.body.layers).toEqual([
      {
        name: "Layer 1",
        rotation: "daily",
        start_at: "2026-04-01T12:00:00.000Z",
        handoff_time: null,
        participants: [dave],
        restrictions: [],
      },
      {
        name: "Layer 2",
        rotation: "daily",
        start_at: "2026-04-01T08:00:00.000Z",
        handoff_time: "18:30",
        participants: [bob, alice],
        restrictions: [{ days: ["sat", "sun"], start: "00:00", end: "00:00" }],
      },
    ]);
    expect((await admin.get(`/api/v1/schedules/${id}`)).body).toEqual(relayered.body);

    const del = await admin.delete(`/api/v1/schedules/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect(await scheduleIds()).not.toContain(id);
    for (const res of [
      await admin.get(`/api/v1/schedules/${id}`),
      await admin.patch(`/api/v1/schedules/${id}`, { name: "Ghost" }),
      await admin.delete(`/api/v1/schedules/${id}`),
      await admin.get(`/api/v1/schedules/${id}/on-call`),
      await admin.get(`/api/v1/schedules/${id}/overrides`),
    ]) {
      expectError(res, 404, "not_found");
    }
  });

  test("the list pages by cursor and filters by team", async () => {
    const team = await admin.post("/api/v1/teams", { name: "Paging team" });
    expect(team.status).toBe(201);
    const made: string[] = [];
    for (const name of ["Page A", "Page B", "Page C"]) {
      made.push((await createSchedule({ ...weeklyBerlin(), name, team_id: team.body.id })).id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: Response2 = await admin.get(
        `/api/v1/schedules?limit=2&team_id=${team.body.id}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      seen.push(...res.body.data.map((s: { id: string }) => s.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(made); // ids sort by creation
    expectError(await admin.get("/api/v1/schedules?cursor=garbage"), 400, "invalid_cursor");
    expectValidation(await admin.get("/api/v1/schedules?limit=0"), "limit");
    expectValidation(await admin.get("/api/v1/schedules?limit=201"), "limit");
  });
});

describe("who is on call, by hand", () => {
  let primary: string;
  beforeAll(async () => {
    primary = (await createSchedule(weeklyBerlin())).id;
  });

  test("weekly Monday 09:00 Berlin handoffs across the 2026-03-29 DST change", async () => {
    // Before start_at (Mon 2026-03-16 09:00 CET = 08:00Z) the layer is skipped: nobody, until start.
    await expectOnCall(primary, "2026-03-16T07:59:59.999Z", null, null, "2026-03-16T08:00:00.000Z");
    // At start_at: k = 0 (the start itself is no handoff) → alice, until Mon 03-23 09:00 CET = 08:00Z.
    await expectOnCall(
      primary,
      "2026-03-16T08:00:00Z",
      "alice@acme.test",
      "Primary rotation",
      "2026-03-23T08:00:00.000Z",
    );
    // One ms before the handoff: still k = 0.
    await expectOnCall(
      primary,
      "2026-03-23T07:59:59.999Z",
      "alice@acme.test",
      "Primary rotation",
      "2026-03-23T08:00:00.000Z",
    );
    // The handoff instant belongs to the new shift: k = 1 → bob. Next handoff is Mon 03-30 09:00
    // local, now CEST (UTC+2) = 07:00Z: this shift is 167 hours, not 168.
    await expectOnCall(
      primary,
      "2026-03-23T08:00:00Z",
      "bob@acme.test",
      "Primary rotation",
      "2026-03-30T07:00:00.000Z",
    );
    // 03-30 07:30Z is 09:30 CEST: k = 2 → carol (a fixed 7×24 h step would still say bob).
    await expectOnCall(
      primary,
      "2026-03-30T06:59:59.999Z",
      "bob@acme.test",
      "Primary rotation",
      "2026-03-30T07:00:00.000Z",
    );
    await expectOnCall(
      primary,
      "2026-03-30T07:30:00Z",
      "carol@acme.test",
      "Primary rotation",
      "2026-04-06T07:00:00.000Z",
    );
    // k = 3, 3 mod 3 = 0 → alice again.
    await expectOnCall(
      primary,
      "2026-04-06T07:00:00Z",
      "alice@acme.test",
      "Primary rotation",
      "2026-04-13T07:00:00.000Z",
    );
    expect(await timeline(primary, "2026-03-16T00:00:00Z", "2026-04-13T07:00:00Z")).toEqual([
      [null, null, "2026-03-16T00:00:00.000Z", "2026-03-16T08:00:00.000Z"],
      ["alice@acme.test", "Primary rotation", "2026-03-16T08:00:00.000Z", "2026-03-23T08:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-23T08:00:00.000Z", "2026-03-30T07:00:00.000Z"],
      ["carol@acme.test", "Primary rotation", "2026-03-30T07:00:00.000Z", "2026-04-06T07:00:00.000Z"],
      ["alice@acme.test", "Primary rotation", "2026-04-06T07:00:00.000Z", "2026-04-13T07:00:00.000Z"],
    ]);
  });

  test("`at` with an offset, encoded or with the unencoded + arriving as a space", async () => {
    // 10:00+02:00 = 08:00Z = the Mon 03-23 handoff → bob; 09:59:59.999+02:00 = 07:59:59.999Z → alice.
    const expected = (at: string, email: string, id: string, until: string) => ({
      data: {
        schedule_id: primary,
        at,
        user_id: id,
        user_email: email,
        layer: "Primary rotation",
        until,
      },
    });
    const handoff = expected("2026-03-23T08:00:00.000Z", "bob@acme.test", bob, "2026-03-30T07:00:00.000Z");
    const before = expected("2026-03-23T07:59:59.999Z", "alice@acme.test", alice, "2026-03-23T08:00:00.000Z");
    for (const [query, want] of [
      ["at=2026-03-23T10:00:00%2B02:00", handoff],
      ["at=2026-03-23T10:00:00+02:00", handoff], // `+` arrives as a space
      ["at=2026-03-23T10:00:00%2002:00", handoff], // an explicit space, likewise
      ["at=2026-03-23T09:59:59.999+02:00", before],
      ["at=2026-03-23T06:59:59.999-01:00", before],
    ] as const) {
      const res = await admin.get(`/api/v1/schedules/${primary}/on-call?${query}`);
      expect({ query, status: res.status, body: res.body }).toEqual({ query, status: 200, body: want });
    }
  });

  test("`at` defaults to now; a bad `at` is 400", async () => {
    const before = Date.now();
    const res = await admin.get(`/api/v1/schedules/${primary}/on-call`);
    const after = Date.now();
    expect(res.status).toBe(200);
    const at = Date.parse(res.body.data.at);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
    // Whoever it is, the answer holds until a later Monday 09:00 Berlin handoff.
    expect(Date.parse(res.body.data.until)).toBeGreaterThan(at);
    expect(Date.parse(res.body.data.until) - at).toBeLessThanOrEqual(7 * DAY);
    expect(res.body.data.layer).toBe("Primary rotation");
    expect([alice, bob, carol]).toContain(res.body.data.user_id);

    expectValidation(await admin.get(`/api/v1/schedules/${primary}/on-call?at=yesterday`), "at");
    expectValidation(await admin.get(`/api/v1/schedules/${primary}/on-call?at=2026-02-30T00:00:00Z`), "at");
    expectValidation(await admin.get(`/api/v1/schedules/${primary}/on-call?at=2026-03-01T00:00:00`), "at");
    expectValidation(await admin.get(`/api/v1/schedules/${primary}/on-call?when=now`), "when");
  });

  test("timeline bounds: to > from, at most 90 days", async () => {
    const url = (from: string, to: string) =>
      `/api/v1/schedules/${primary}/timeline?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    expectValidation(await admin.get(url("2026-03-20T00:00:00Z", "2026-03-20T00:00:00Z")), "to");
    expectValidation(await admin.get(url("2026-03-20T00:00:00Z", "2026-03-19T00:00:00Z")), "to");
    // Exactly 90 days is allowed; one millisecond more is not.
    const ok = await admin.get(url("2026-03-01T00:00:00Z", "2026-05-30T00:00:00Z"));
    expect(ok.status).toBe(200);
    expect(ok.body.data.at(-1).end).toBe("2026-05-30T00:00:00.000Z");
    expectValidation(await admin.get(url("2026-03-01T00:00:00Z", "2026-05-30T00:00:00.001Z")), "to");
    expectValidation(
      await admin.get(`/api/v1/schedules/${primary}/timeline?to=2026-03-02T00:00:00Z`),
      "from",
    );
    expectValidation(
      await admin.get(`/api/v1/schedules/${primary}/timeline?from=2026-03-02T00:00:00Z`),
      "to",
    );
    expectValidation(await admin.get(url("soon", "2026-03-02T00:00:00Z")), "from");
    // Offsets are read as instants: 2026-03-23 09:00+01:00 = 08:00Z is bob's handoff.
    expect(await timeline(primary, "2026-03-23T08:30:00+01:00", "2026-03-23T11:00:00+02:00")).toEqual([
      ["alice@acme.test", "Primary rotation", "2026-03-23T07:30:00.000Z", "2026-03-23T08:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-23T08:00:00.000Z", "2026-03-23T09:00:00.000Z"],
    ]);
  });

  test("daily layer without handoff_time hands off at start_at's local time, DST-correct", async () => {
    // start_at Mon 2026-01-05 08:00 CET (07:00Z): handoffs every day at 08:00 Berlin.
    const id = (
      await createSchedule({
        name: "Daily",
        time_zone: "Europe/Berlin",
        layers: [
          {
            name: "day",
            rotation: "daily",
            start_at: "2026-01-05T07:00:00Z",
            participants: [alice, bob, carol],
          },
        ],
      })
    ).id;
    // Handoffs in (01-05 08:00, 03-30 07:59 CEST]: Jan 6..31 = 26, Feb = 28, Mar 1..29 = 29 → k = 83,
    // 83 mod 3 = 2 → carol, until Mon 03-30 08:00 CEST = 06:00Z (a 24 h step from 07:00Z would say 07:00Z).
    await expectOnCall(id, "2026-03-30T05:59:59.999Z", "carol@acme.test", "day", "2026-03-30T06:00:00.000Z");
    // The 03-30 handoff makes k = 84, 84 mod 3 = 0 → alice until Tue 08:00 CEST.
    await expectOnCall(id, "2026-03-30T06:00:00Z", "alice@acme.test", "day", "2026-03-31T06:00:00.000Z");
    // The week before: Mar 28 08:00 CET (07:00Z) is handoff k = 82 → bob; the next one is Sun 03-29
    // 08:00, already CEST (the switch is at 02:00 local) = 06:00Z: a 23-hour shift.
    await expectOnCall(id, "2026-03-28T12:00:00Z", "bob@acme.test", "day", "2026-03-29T06:00:00.000Z");
  });

  test("daily handoff in the spring gap and the autumn overlap", async () => {
    const twoThirty = (start: string) => ({
      name: "Night shift",
      time_zone: "Europe/Berlin",
      layers: [
        {
          name: "nights",
          rotation: "daily",
          start_at: start,
          handoff_time: "02:30",
          participants: [alice, bob],
        },
      ],
    });
    // Spring: start Fri 03-27 02:30 CET = 01:30Z (alice). Sat 03-28 02:30 CET = 01:30Z → bob.
    // Sun 03-29 02:30 does not exist (02:00 → 03:00): the first instant after the gap, 03:00 CEST
    // = 01:00Z → alice. Mon 03-30 02:30 CEST = 00:30Z → bob.
    const spring = (await createSchedule(twoThirty("2026-03-27T02:30:00+01:00"))).id;
    expect(await timeline(spring, "2026-03-27T01:30:00Z", "2026-03-31T00:30:00Z")).toEqual([
      ["alice@acme.test", "nights", "2026-03-27T01:30:00.000Z", "2026-03-28T01:30:00.000Z"],
      ["bob@acme.test", "nights", "2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z"],
      ["alice@acme.test", "nights", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"],
      ["bob@acme.test", "nights", "2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z"],
    ]);
    await expectOnCall(
      spring,
      "2026-03-29T00:59:59.999Z",
      "bob@acme.test",
      "nights",
      "2026-03-29T01:00:00.000Z",
    );
    // Autumn: start Fri 10-23 02:30 CEST = 00:30Z (alice). Sat 10-24 00:30Z → bob. Sun 10-25 02:30
    // happens twice (00:30Z CEST, 01:30Z CET): the first → alice at 00:30Z, and the second
    // occurrence is no handoff. Mon 10-26 02:30 CET = 01:30Z → bob: Sunday's shift is 25 hours.
    const autumn = (await createSchedule(twoThirty("2026-10-23T02:30:00+02:00"))).id;
    expect(await timeline(autumn, "2026-10-23T00:30:00Z", "2026-10-27T01:30:00Z")).toEqual([
      ["alice@acme.test", "nights", "2026-10-23T00:30:00.000Z", "2026-10-24T00:30:00.000Z"],
      ["bob@acme.test", "nights", "2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z"],
      ["alice@acme.test", "nights", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
      ["bob@acme.test", "nights", "2026-10-26T01:30:00.000Z", "2026-10-27T01:30:00.000Z"],
    ]);
    await expectOnCall(
      autumn,
      "2026-10-25T01:30:00Z",
      "alice@acme.test",
      "nights",
      "2026-10-26T01:30:00.000Z",
    );
  });

  test("business hours over a catch-all layer", async () => {
    const id = (
      await createSchedule({
        name: "Support",
        time_zone: "Europe/Berlin",
        layers: [
          {
            name: "business",
            rotation: "weekly",
            start_at: "2026-06-01T09:00:00+02:00",
            handoff_time: "mon 09:00",
            participants: [alice, bob],
            restrictions: [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "09:00", end: "17:00" }],
          },
          {
            name: "catch-all",
            rotation: "daily",
            start_at: "2026-05-01T00:00:00+02:00",
            handoff_time: "09:00",
            participants: [carol],
          },
        ],
      })
    ).id;
    // June is CEST (UTC+2). Mon 06-01 08:59:59.999 local: before the window → catch-all carol.
    await expectOnCall(
      id,
      "2026-06-01T06:59:59.999Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-01T07:00:00.000Z",
    );
    // 09:00 local: window opens and business starts, k = 0 → alice until 17:00 local = 15:00Z.
    await expectOnCall(id, "2026-06-01T07:00:00Z", "alice@acme.test", "business", "2026-06-01T15:00:00.000Z");
    // 17:00 is the window's first uncovered instant → carol until Tue 09:00 = 07:00Z. The daily
    // catch-all handoffs change nothing (one participant), so `until` is the next window edge.
    await expectOnCall(
      id,
      "2026-06-01T15:00:00Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-02T07:00:00.000Z",
    );
    // Sat 06-06 12:00 local: no window on weekends → carol until Mon 06-08 09:00 = 07:00Z.
    await expectOnCall(
      id,
      "2026-06-06T10:00:00Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-08T07:00:00.000Z",
    );
    // Mon 06-08 09:00 is business's first handoff: k = 1 → bob.
    await expectOnCall(id, "2026-06-08T07:00:00Z", "bob@acme.test", "business", "2026-06-08T15:00:00.000Z");
    expect(await timeline(id, "2026-06-05T00:00:00Z", "2026-06-08T12:00:00Z")).toEqual([
      ["carol@acme.test", "catch-all", "2026-06-05T00:00:00.000Z", "2026-06-05T07:00:00.000Z"],
      ["alice@acme.test", "business", "2026-06-05T07:00:00.000Z", "2026-06-05T15:00:00.000Z"],
      ["carol@acme.test", "catch-all", "2026-06-05T15:00:00.000Z", "2026-06-08T07:00:00.000Z"],
      ["bob@acme.test", "business", "2026-06-08T07:00:00.000Z", "2026-06-08T12:00:00.000Z"],
    ]);
  });

  test("a fri 22:00–06:00 window belongs to Friday and ends Saturday 06:00", async () => {
    const id = (
      await createSchedule({
        name: "Weekend nights",
        time_zone: "Europe/Berlin",
        layers: [
          {
            name: "friday night",
            rotation: "weekly",
            start_at: "2026-05-01T00:00:00+02:00",
            handoff_time: "mon 09:00",
            participants: [dave],
            restrictions: [{ days: ["fri"], start: "22:00", end: "06:00" }],
          },
          {
            name: "catch-all",
            rotation: "weekly",
            start_at: "2026-05-01T00:00:00+02:00",
            handoff_time: "mon 09:00",
            participants: [carol],
          },
        ],
      })
    ).id;
    // Thu 06-04 23:00 local (21:00Z): a Thursday night is not in the window → carol until Fri 22:00 = 20:00Z.
    await expectOnCall(
      id,
      "2026-06-04T21:00:00Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-05T20:00:00.000Z",
    );
    await expectOnCall(
      id,
      "2026-06-05T19:59:59.999Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-05T20:00:00.000Z",
    );
    // Fri 22:00 local → dave until Sat 06:00 local = Sat 04:00Z.
    await expectOnCall(
      id,
      "2026-06-05T20:00:00Z",
      "dave@acme.test",
      "friday night",
      "2026-06-06T04:00:00.000Z",
    );
    // Sat 01:00 local is still Friday's window.
    await expectOnCall(
      id,
      "2026-06-05T23:00:00Z",
      "dave@acme.test",
      "friday night",
      "2026-06-06T04:00:00.000Z",
    );
    // Sat 06:00 local: the window's end is uncovered → carol until next Fri 22:00 = 06-12 20:00Z.
    await expectOnCall(
      id,
      "2026-06-06T04:00:00Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-12T20:00:00.000Z",
    );
    // Sat 23:00 local: Saturday is not in `days`, so no window starts then.
    await expectOnCall(
      id,
      "2026-06-06T21:00:00Z",
      "carol@acme.test",
      "catch-all",
      "2026-06-12T20:00:00.000Z",
    );
  });

  test("overrides win inside [start_at, end_at) and stop at their edges", async () => {
    const id = (await createSchedule({ ...weeklyBerlin(), name: "With overrides" })).id;
    // bob holds 03-23 08:00Z .. 03-30 07:00Z (see the weekly test). dave takes 10:00Z..12:00Z on 03-24.
    await createOverride(id, {
      user_id: dave,
      start_at: "2026-03-24T11:00:00+01:00",
      end_at: "2026-03-24T12:00:00Z",
    });
    await expectOnCall(
      id,
      "2026-03-24T09:59:59.999Z",
      "bob@acme.test",
      "Primary rotation",
      "2026-03-24T10:00:00.000Z",
    );
    await expectOnCall(id, "2026-03-24T10:00:00Z", "dave@acme.test", "override", "2026-03-24T12:00:00.000Z");
    await expectOnCall(
      id,
      "2026-03-24T11:59:59.999Z",
      "dave@acme.test",
      "override",
      "2026-03-24T12:00:00.000Z",
    );
    // end_at is the first uncovered instant.
    await expectOnCall(
      id,
      "2026-03-24T12:00:00Z",
      "bob@acme.test",
      "Primary rotation",
      "2026-03-30T07:00:00.000Z",
    );
    expect(await timeline(id, "2026-03-24T00:00:00Z", "2026-03-25T00:00:00Z")).toEqual([
      ["bob@acme.test", "Primary rotation", "2026-03-24T00:00:00.000Z", "2026-03-24T10:00:00.000Z"],
      ["dave@acme.test", "override", "2026-03-24T10:00:00.000Z", "2026-03-24T12:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-24T12:00:00.000Z", "2026-03-25T00:00:00.000Z"],
    ]);

    // An override ending exactly at the 03-30 07:00Z handoff: the next instant is carol's shift.
    await createOverride(id, {
      user_id: dave,
      start_at: "2026-03-30T05:00:00Z",
      end_at: "2026-03-30T07:00:00Z",
    });
    await expectOnCall(
      id,
      "2026-03-30T06:59:59.999Z",
      "dave@acme.test",
      "override",
      "2026-03-30T07:00:00.000Z",
    );
    await expectOnCall(
      id,
      "2026-03-30T07:00:00Z",
      "carol@acme.test",
      "Primary rotation",
      "2026-04-06T07:00:00.000Z",
    );
    // An override for the person already on call still says "override" (a change of layer).
    await createOverride(id, {
      user_id: bob,
      start_at: "2026-03-27T00:00:00Z",
      end_at: "2026-03-27T06:00:00Z",
    });
    expect(await timeline(id, "2026-03-26T23:00:00Z", "2026-03-27T07:00:00Z")).toEqual([
      ["bob@acme.test", "Primary rotation", "2026-03-26T23:00:00.000Z", "2026-03-27T00:00:00.000Z"],
      ["bob@acme.test", "override", "2026-03-27T00:00:00.000Z", "2026-03-27T06:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-27T06:00:00.000Z", "2026-03-27T07:00:00.000Z"],
    ]);
  });

  test("where overrides overlap, the one created last wins", async () => {
    const id = (await createSchedule({ ...weeklyBerlin(), name: "Overlaps" })).id;
    // 03-25: carol [10, 14) created first, then alice [12, 13): alice wins inside, carol around her.
    await createOverride(id, {
      user_id: carol,
      start_at: "2026-03-25T10:00:00Z",
      end_at: "2026-03-25T14:00:00Z",
    });
    await createOverride(id, {
      user_id: alice,
      start_at: "2026-03-25T12:00:00Z",
      end_at: "2026-03-25T13:00:00Z",
    });
    await expectOnCall(id, "2026-03-25T11:00:00Z", "carol@acme.test", "override", "2026-03-25T12:00:00.000Z");
    await expectOnCall(id, "2026-03-25T12:00:00Z", "alice@acme.test", "override", "2026-03-25T13:00:00.000Z");
    await expectOnCall(id, "2026-03-25T13:00:00Z", "carol@acme.test", "override", "2026-03-25T14:00:00.000Z");
    await expectOnCall(
      id,
      "2026-03-25T14:00:00Z",
      "bob@acme.test",
      "Primary rotation",
      "2026-03-30T07:00:00.000Z",
    );
    // 03-26: the same pair created in the other order: carol, created last, hides alice entirely.
    await createOverride(id, {
      user_id: alice,
      start_at: "2026-03-26T12:00:00Z",
      end_at: "2026-03-26T13:00:00Z",
    });
    await createOverride(id, {
      user_id: carol,
      start_at: "2026-03-26T10:00:00Z",
      end_at: "2026-03-26T14:00:00Z",
    });
    expect(await timeline(id, "2026-03-26T09:00:00Z", "2026-03-26T15:00:00Z")).toEqual([
      ["bob@acme.test", "Primary rotation", "2026-03-26T09:00:00.000Z", "2026-03-26T10:00:00.000Z"],
      ["carol@acme.test", "override", "2026-03-26T10:00:00.000Z", "2026-03-26T14:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-26T14:00:00.000Z", "2026-03-26T15:00:00.000Z"],
    ]);
    await expectOnCall(id, "2026-03-26T12:30:00Z", "carol@acme.test", "override", "2026-03-26T14:00:00.000Z");
  });

  test("a schedule that starts in the future: nobody, until start_at", async () => {
    // start_at: a whole minute 10 days ahead (within the 90-day horizon).
    const start = new Date(Math.ceil((Date.now() + 10 * DAY) / 60_000) * 60_000).toISOString();
    const id = (
      await createSchedule({
        name: "Next rotation",
        time_zone: "UTC",
        layers: [
          {
            name: "later",
            rotation: "weekly",
            start_at: start,
            handoff_time: "mon 09:00",
            participants: [dave],
          },
        ],
      })
    ).id;
    const res = await admin.get(`/api/v1/schedules/${id}/on-call`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      schedule_id: id,
      at: expect.stringMatching(TIMESTAMP),
      user_id: null,
      user_email: null,
      layer: null,
      until: start,
    });
    // At start_at, k = 0 → dave.
    const at = await admin.get(`/api/v1/schedules/${id}/on-call?at=${start}`);
    expect(at.body.data.user_id).toBe(dave);
    expect(at.body.data.layer).toBe("later");
  });

  test("a window past midnight across the spring change is 7 hours long", async () => {
    const id = (
      await createSchedule({
        name: "Saturday nights",
        time_zone: "Europe/Berlin",
        layers: [
          {
            name: "saturday night",
            rotation: "weekly",
            start_at: "2026-03-01T00:00:00+01:00",
            handoff_time: "mon 09:00",
            participants: [dave],
            restrictions: [{ days: ["sat"], start: "22:00", end: "06:00" }],
          },
        ],
      })
    ).id;
    // Sat 03-28 22:00 CET = 21:00Z; it ends Sun 03-29 06:00, by then CEST = 04:00Z. Outside the
    // window nobody is on call; the next window opens Sat 04-04 22:00 CEST = 20:00Z.
    await expectOnCall(id, "2026-03-28T20:59:59.999Z", null, null, "2026-03-28T21:00:00.000Z");
    await expectOnCall(
      id,
      "2026-03-28T21:00:00Z",
      "dave@acme.test",
      "saturday night",
      "2026-03-29T04:00:00.000Z",
    );
    await expectOnCall(id, "2026-03-29T04:00:00Z", null, null, "2026-04-04T20:00:00.000Z");
  });

  test("a schedule without layers: nobody until the horizon, an empty calendar", async () => {
    const id = (await createSchedule({ name: "Empty", time_zone: "UTC", layers: [] })).id;
    // at + 90 days: 2026-03-01 + 31 (Mar) + 30 (Apr) + 29 = 2026-05-30.
    await expectOnCall(id, "2026-03-01T00:00:00Z", null, null, "2026-05-30T00:00:00.000Z");
    expect(await timeline(id, "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z")).toEqual([
      [null, null, "2026-03-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z"],
    ]);
    const ical = await admin.get(`/api/v1/schedules/${id}/ical`);
    expect(ical.status).toBe(200);
    expect(ical.text).not.toContain("BEGIN:VEVENT");
    expect(ical.text.startsWith("BEGIN:VCALENDAR\r\n")).toBe(true);
    expect(ical.text.endsWith("END:VCALENDAR\r\n")).toBe(true);
  });

  test("overrides with the same window: the one created last wins", async () => {
    const id = (await createSchedule({ ...weeklyBerlin(), name: "Same window" })).id;
    for (const user of [alice, carol, dave]) {
      await createOverride(id, {
        user_id: user,
        start_at: "2026-03-24T10:00:00Z",
        end_at: "2026-03-24T12:00:00Z",
      });
    }
    // dave was created last; at 12:00Z all three end together and bob's shift resumes.
    expect(await timeline(id, "2026-03-24T09:00:00Z", "2026-03-24T13:00:00Z")).toEqual([
      ["bob@acme.test", "Primary rotation", "2026-03-24T09:00:00.000Z", "2026-03-24T10:00:00.000Z"],
      ["dave@acme.test", "override", "2026-03-24T10:00:00.000Z", "2026-03-24T12:00:00.000Z"],
      ["bob@acme.test", "Primary rotation", "2026-03-24T12:00:00.000Z", "2026-03-24T13:00:00.000Z"],
    ]);
  });

  test("nothing changes within 90 days: `until` is the horizon", async () => {
    const id = (
      await createSchedule({
        name: "Solo",
        time_zone: "UTC",
        layers: [
          {
            name: "solo",
            rotation: "weekly",
            start_at: "2026-01-01T00:00:00Z",
            handoff_time: "mon 09:00",
            participants: [dave],
          },
        ],
      })
    ).id;
    // One participant: handoffs never change the answer; 2026-02-01 + 90 days = 2026-05-02.
    await expectOnCall(id, "2026-02-01T00:00:00Z", "dave@acme.test", "solo", "2026-05-02T00:00:00.000Z");
  });
});

describe("overrides", () => {
  let schedule: string;
  beforeAll(async () => {
    schedule = (await createSchedule({ ...weeklyBerlin(), name: "Override CRUD" })).id;
  });

  test("create answers 201 with created_by the caller's user id", async () => {
    const res = await admin.post(`/api/v1/schedules/${schedule}/overrides`, {
      user_id: dave,
      start_at: "2026-03-24T11:00:00+01:00",
      end_at: "2026-03-24T13:00:00+01:00",
      reason: "Swap with bob",
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(OVERRIDE_ID),
      schedule_id: schedule,
      user_id: dave,
      start_at: "2026-03-24T10:00:00.000Z",
      end_at: "2026-03-24T12:00:00.000Z",
      reason: "Swap with bob",
      created_by: owner, // the init key belongs to the owner
      created_at: expect.stringMatching(TIMESTAMP),
    });
  });

  test("a service key is recorded as key:<key_id>", async () => {
    const key = await admin.post("/api/v1/api-keys", {
      name: "rota-bot",
      scopes: ["schedules"],
      service: true,
    });
    expect(key.status).toBe(201);
    const res = await admin.as(key.body.secret).post(`/api/v1/schedules/${schedule}/overrides`, {
      user_id: carol,
      start_at: "2026-03-25T10:00:00Z",
      end_at: "2026-03-25T11:00:00Z",
    });
    expect(res.status).toBe(201);
    expect(res.body.created_by).toBe(`key:${key.body.id}`);
    expect(res.body.reason).toBe("");
  });

  test("list, active=true, delete, and 409 override_ended", async () => {
    const past = await createOverride(schedule, {
      user_id: alice,
      start_at: "2026-03-26T10:00:00Z",
      end_at: "2026-03-26T11:00:00Z",
    });
    const now = Date.now();
    const current = await createOverride(schedule, {
      user_id: bob,
      start_at: new Date(now - 3_600_000).toISOString(),
      end_at: new Date(now + 3_600_000).toISOString(),
    });
    const future = await createOverride(schedule, {
      user_id: carol,
      start_at: new Date(now + DAY).toISOString(),
      end_at: new Date(now + 2 * DAY).toISOString(),
    });

    const all = await admin.get(`/api/v1/schedules/${schedule}/overrides`);
    expect(all.status).toBe(200);
    expect(all.body.has_more).toBe(false);
    expect(all.body.next_cursor).toBeNull();
    expect(all.body.data.length).toBe(5); // two from the tests above, then these three
    expect(all.body.data.slice(2)).toEqual([past, current, future]);

    const active = await admin.get(`/api/v1/schedules/${schedule}/overrides?active=true`);
    expect(active.status).toBe(200);
    expect(active.body.data).toEqual([current, future]);
    const inactive = await admin.get(`/api/v1/schedules/${schedule}/overrides?active=false`);
    expect(inactive.body.data.length).toBe(5);
    expectValidation(await admin.get(`/api/v1/schedules/${schedule}/overrides?active=maybe`), "active");

    const page1 = await admin.get(`/api/v1/schedules/${schedule}/overrides?limit=2`);
    expect(page1.body.has_more).toBe(true);
    const page2 = await admin.get(
      `/api/v1/schedules/${schedule}/overrides?limit=2&cursor=${encodeURIComponent(page1.body.next_cursor)}`,
    );
    expect(page2.body.data[0]).toEqual(past);

    // Deleting one that has not ended yet (current or future) works.
    for (const o of [current, future]) {
      const del = await admin.delete(`/api/v1/schedules/${schedule}/overrides/${o.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe("");
      expectError(await admin.delete(`/api/v1/schedules/${schedule}/overrides/${o.id}`), 404, "not_found");
    }
    // One that has ended stays as history.
    const ended = await admin.delete(`/api/v1/schedules/${schedule}/overrides/${past.id}`);
    expectError(ended, 409, "override_ended");
    const after = await admin.get(`/api/v1/schedules/${schedule}/overrides`);
    expect(after.body.data.map((o: { id: string }) => o.id)).toContain(past.id);
    expect(after.body.data.length).toBe(3);

    // An override of another schedule is not found under this one.
    const other = (await createSchedule({ ...weeklyBerlin(), name: "Other overrides" })).id;
    const elsewhere = await createOverride(other, {
      user_id: carol,
      start_at: new Date(now + DAY).toISOString(),
      end_at: new Date(now + 2 * DAY).toISOString(),
    });
    expectError(
      await admin.delete(`/api/v1/schedules/${schedule}/overrides/${elsewhere.id}`),
      404,
      "not_found",
    );
    expectError(
      await admin.delete(`/api/v1/schedules/${schedule}/overrides/ovr_01jzzzzzzzzzzzzzzzzzzzzzzz`),
      404,
      "not_found",
    );
  });

  test("deleting a schedule deletes its overrides", async () => {
    const id = (await createSchedule({ ...weeklyBerlin(), name: "Short-lived" })).id;
    const o = await createOverride(id, {
      user_id: dave,
      start_at: new Date(Date.now() + DAY).toISOString(),
      end_at: new Date(Date.now() + 2 * DAY).toISOString(),
    });
    expect((await admin.delete(`/api/v1/schedules/${id}`)).status).toBe(204);
    expectError(await admin.get(`/api/v1/schedules/${id}/overrides`), 404, "not_found");
    expectError(await admin.delete(`/api/v1/schedules/${id}/overrides/${o.id}`), 404, "not_found");
  });
});

interface VEvent {
  [property: string]: string[];
}

/** Unfolds RFC 5545 content lines and collects each VEVENT's properties (name → values). */
function parseCalendar(body: string): { lines: string[]; events: VEvent[] } {
  const lines = body.replace(/\r\n[ \t]/g, "").split("\r\n");
  expect(lines.pop()).toBe(""); // the body ends with CRLF
  const events: VEvent[] = [];
  let current: VEvent | null = null;
  for (const line of lines) {
    if (line === "BEGIN:VEVENT") current = {};
    else if (line === "END:VEVENT") {
      events.push(current as VEvent);
      current = null;
    } else if (current) {
      const name = line.slice(0, line.search(/[:;]/));
      current[name] = [...(current[name] ?? []), line.slice(line.indexOf(":") + 1)];
    }
  }
  return { lines, events };
}

/** The wire-level RFC 5545 rules: CRLF only, each physical line ≤ 75 octets, whole UTF-8. */
function expectWellFormed(bytes: Uint8Array) {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  expect(text.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/);
  expect(text.endsWith("\r\n")).toBe(true);
  let start = 0;
  for (let i = 0; i < bytes.length - 1; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10) {
      const line = bytes.subarray(start, i);
      expect(line.length).toBeLessThanOrEqual(75);
      // A fold never splits a UTF-8 sequence: each physical line decodes on its own.
      new TextDecoder("utf-8", { fatal: true }).decode(line);
      start = i + 2;
    }
  }
  expect(start).toBe(bytes.length);
  const { lines } = parseCalendar(text);
  expect(lines[0]).toBe("BEGIN:VCALENDAR");
  expect(lines.at(-1)).toBe("END:VCALENDAR");
  expect(lines).toContain("VERSION:2.0");
  expect(lines.some((l) => l.startsWith("PRODID:"))).toBe(true);
}

async function fetchBytes(path: string, credential?: string) {
  const response = await fetch(`${server.base}${path}`, {
    headers: credential ? { authorization: `Bearer ${credential}` } : {},
  });
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}

describe("iCalendar feed", () => {
  // A UTC schedule starting tomorrow 09:00Z: daily handoffs at 09:00Z, alice then bob, and an
  // override for carol 12:00Z..15:00Z on the third day.
  let id: string;
  let start: number;
  // 191 characters, 205 UTF-8 octets: the calendar name folds into three physical lines.
  const name =
    "Plattform-Bereitschaft für Ünïcode-Teams, primär; sekundär — ein sehr langer Name, der über mehrere gefaltete Zeilen läuft: Größe, Übergabe, Äquivalenz; dazu noch etwas mehr Text für 2 Falten";
  beforeAll(async () => {
    start = Math.floor(Date.now() / DAY) * DAY + DAY + 9 * 3_600_000;
    id = (
      await createSchedule({
        name,
        time_zone: "UTC",
        layers: [
          {
            name: "days",
            rotation: "daily",
            start_at: new Date(start).toISOString(),
            participants: [alice, bob],
          },
        ],
      })
    ).id;
    await createOverride(id, {
      user_id: carol,
      start_at: new Date(start + 2 * DAY + 3 * 3_600_000).toISOString(),
      end_at: new Date(start + 2 * DAY + 6 * 3_600_000).toISOString(),
    });
  });

  test(
    "GET /ical is RFC 5545 with one VEVENT per on-call segment",
    async () => {
      const before = Date.now();
      const res = await fetchBytes(`/api/v1/schedules/${id}/ical`, server.init?.api_key.secret);
      const after = Date.now();
      expect(res.status).toBe(200);
      expect(res.type).toBe("text/calendar; charset=utf-8");
      expectWellFormed(res.bytes);
      const text = new TextDecoder().decode(res.bytes);
      const { lines, events } = parseCalendar(text);
      // The long name is folded on the wire and escaped as TEXT (`,` and `;`).
      expect(text).toContain("\r\n ");
      expect(lines).toContain(`X-WR-CALNAME:${name.replace(/,/g, "\\,").replace(/;/g, "\\;")}`);
      expect(lines.filter((l) => l === "BEGIN:VEVENT").length).toBe(events.length);

      // The feed runs 60 days from now; the last event ends there (to the second).
      const stamp = (ms: number) =>
        new Date(ms)
          .toISOString()
          .replace(/[-:]/g, "")
          .replace(/\.\d{3}/, "");
      const lastEnd = events.at(-1)?.DTEND?.[0] as string;
      expect(lastEnd >= stamp(before + 60 * DAY) && lastEnd <= stamp(after + 60 * DAY)).toBe(true);
      const feedEnd = Date.parse(
        lastEnd.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"),
      );

      // Expected segments: day i from start is alice (even) or bob (odd); day 2 is alice with carol's
      // override 12:00..15:00 inside. Nothing before start (nobody on call: no event).
      const expected: [string, number, number][] = [];
      for (let i = 0; start + i * DAY < feedEnd; i++) {
        const dayStart = start + i * DAY;
        const dayEnd = Math.min(dayStart + DAY, feedEnd);
        const who = i % 2 === 0 ? "alice@acme.test" : "bob@acme.test";
        if (i === 2) {
          expected.push([who, dayStart, dayStart + 3 * 3_600_000]);
          expected.push(["carol@acme.test", dayStart + 3 * 3_600_000, dayStart + 6 * 3_600_000]);
          expected.push([who, dayStart + 6 * 3_600_000, dayEnd]);
        } else {
          expected.push([who, dayStart, dayEnd]);
        }
      }
      expect(events.length).toBe(expected.length);
      expect(events.length).toBeGreaterThan(55);
      events.forEach((event, i) => {
        const [who, from, to] = expected[i] as [string, number, number];
        for (const property of ["UID", "DTSTAMP", "DTSTART", "DTEND", "SUMMARY"]) {
          expect({ i, property, count: event[property]?.length }).toEqual({ i, property, count: 1 });
        }
        expect(event.DTSTART?.[0]).toBe(stamp(from));
        expect(event.DTEND?.[0]).toBe(i === events.length - 1 ? lastEnd : stamp(to));
        expect(event.DTSTAMP?.[0]).toMatch(/^\d{8}T\d{6}Z$/);
        expect(event.SUMMARY?.[0]).toContain(who);
      });
      const uids = events.map((e) => e.UID?.[0]);
      expect(new Set(uids).size).toBe(uids.length);

      // UIDs are stable: a second fetch names the same events.
      await Bun.sleep(1100); // a new DTSTAMP second
      const again = parseCalendar(
        new TextDecoder().decode(
          (await fetchBytes(`/api/v1/schedules/${id}/ical`, server.init?.api_key.secret)).bytes,
        ),
      );
      expect(again.events.map((e) => e.UID?.[0])).toEqual(uids);
    },
    SLOW,
  );

  test(
    "feed token: a public URL, rotated tokens stop working, and never logged",
    async () => {
      const first = await admin.post(`/api/v1/schedules/${id}/feed-token`);
      expect(first.status).toBe(201);
      expect(Object.keys(first.body).sort()).toEqual(["token", "url"]);
      const token = first.body.token as string;
      expect(token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
      expect(first.body.url.endsWith(`/feeds/${token}`)).toBe(true);

      const feed = await fetchBytes(`/feeds/${token}`); // no credential at all
      expect(feed.status).toBe(200);
      expect(feed.type).toBe("text/calendar; charset=utf-8");
      expectWellFormed(feed.bytes);
      const viaApi = await fetchBytes(`/api/v1/schedules/${id}/ical`, server.init?.api_key.secret);
      const uidsOf = (bytes: Uint8Array) =>
        parseCalendar(new TextDecoder().decode(bytes)).events.map((e) => e.UID);
      expect(uidsOf(feed.bytes)).toEqual(uidsOf(viaApi.bytes));
      expect((await fetchBytes(`/feeds/${token}.ics`)).status).toBe(200);

      const second = await admin.post(`/api/v1/schedules/${id}/feed-token`);
      expect(second.status).toBe(201);
      const rotated = second.body.token as string;
      expect(rotated).not.toBe(token);
      expectError(await anon.get(`/feeds/${token}`), 404, "not_found");
      expect((await fetchBytes(`/feeds/${rotated}`)).status).toBe(200);
      expectError(await anon.get("/feeds/not-a-token"), 404, "not_found");

      await Bun.sleep(300); // let the request log lines arrive
      expect(server.output).toContain("/feeds/[redacted]");
      expect(server.output).not.toContain(token);
      expect(server.output).not.toContain(rotated);
    },
    SLOW,
  );
});

describe("validation: 400 naming the field, nothing stored", () => {
  let suspended: string;
  beforeAll(async () => {
    suspended = await invite("sus@acme.test");
    const res = await admin.patch(`/api/v1/users/${suspended}`, { status: "suspended" });
    if (res.status !== 200) throw new Error(res.text);
  });

  const base = (layer: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
    name: "Invalid",
    time_zone: "Europe/Berlin",
    layers: [
      {
        name: "main",
        rotation: "weekly",
        start_at: "2026-03-16T09:00:00+01:00",
        handoff_time: "mon 09:00",
        participants: [alice],
        ...layer,
      },
    ],
    ...top,
  });

  test("schedule bodies", async () => {
    const cases: [string, () => unknown, string][] = [
      ["unknown zone", () => base({}, { time_zone: "Mars/Olympus_Mons" }), "time_zone"],
      ["empty zone", () => base({}, { time_zone: "" }), "time_zone"],
      ["weekly handoff as words", () => base({ handoff_time: "monday 09:00" }), "layers.0.handoff_time"],
      ["weekly handoff without day", () => base({ handoff_time: "09:00" }), "layers.0.handoff_time"],
      ["weekly handoff 9:00", () => base({ handoff_time: "mon 9:00" }), "layers.0.handoff_time"],
      ["weekly handoff missing", () => base({ handoff_time: undefined }), "layers.0.handoff_time"],
      [
        "daily handoff with a day",
        () => base({ rotation: "daily", handoff_time: "mon 09:00" }),
        "layers.0.handoff_time",
      ],
      [
        "daily handoff 24:00",
        () => base({ rotation: "daily", handoff_time: "24:00" }),
        "layers.0.handoff_time",
      ],
      ["daily handoff 9am", () => base({ rotation: "daily", handoff_time: "9am" }), "layers.0.handoff_time"],
      [
        "restriction day funday",
        () => base({ restrictions: [{ days: ["mon", "funday"], start: "09:00", end: "17:00" }] }),
        "layers.0.restrictions.0.days.1",
      ],
      [
        "restriction start 25:00",
        () => base({ restrictions: [{ days: ["mon"], start: "25:00", end: "17:00" }] }),
        "layers.0.restrictions.0.start",
      ],
      [
        "restriction end 25:00",
        () => base({ restrictions: [{ days: ["mon"], start: "09:00", end: "25:00" }] }),
        "layers.0.restrictions.0.end",
      ],
      [
        "unknown participant",
        () => base({ participants: [alice, "usr_01jzzzzzzzzzzzzzzzzzzzzzzz"] }),
        "layers.0.participants.1",
      ],
      [
        "another org's user",
        () => base({ participants: [alice, bob, foreign.ownerId] }),
        "layers.0.participants.2",
      ],
      ["suspended user", () => base({ participants: [suspended] }), "layers.0.participants.0"],
      [
        "duplicate layer names",
        () => ({ ...base(), layers: [...base().layers, { ...base().layers[0], participants: [bob] }] }),
        "layers.1.name",
      ],
      [
        "a default name taken",
        () => ({
          ...base(),
          layers: [
            { ...base().layers[0], name: "Layer 2" },
            { ...base().layers[0], name: undefined },
          ],
        }),
        "layers.1.name",
      ],
      ["layer named override", () => base({ name: "override" }), "layers.0.name"],
      ["unknown top-level field", () => base({}, { owner: "me" }), "owner"],
      ["unknown layer field", () => base({ colour: "red" }), "layers.0.colour"],
      [
        "unknown restriction field",
        () => base({ restrictions: [{ days: ["mon"], start: "09:00", end: "17:00", tz: "UTC" }] }),
        "layers.0.restrictions.0.tz",
      ],
      ["bad start_at", () => base({ start_at: "next monday" }), "layers.0.start_at"],
      ["no participants", () => base({ participants: [] }), "layers.0.participants"],
      ["unknown rotation", () => base({ rotation: "hourly" }), "layers.0.rotation"],
      ["team of another org", () => base({}, { team_id: foreign.teamId }), "team_id"],
      ["unknown team", () => base({}, { team_id: "team_01jzzzzzzzzzzzzzzzzzzzzzzz" }), "team_id"],
      ["missing name", () => base({}, { name: undefined }), "name"],
      ["blank name", () => base({}, { name: "   " }), "name"],
      ["blank layer name", () => base({ name: "  " }), "layers.0.name"],
    ];
    const before = await scheduleIds();
    for (const [label, body, path] of cases) {
      const res = await admin.post("/api/v1/schedules", JSON.parse(JSON.stringify(body())));
      expect({ label, status: res.status, code: res.body?.error?.code }).toEqual({
        label,
        status: 400,
        code: "validation_failed",
      });
      expect({ label, paths: fieldPaths(res) }).toEqual({ label, paths: expect.arrayContaining([path]) });
    }
    expect(await scheduleIds()).toEqual(before);

    // The same checks on PATCH leave the schedule as it was.
    const schedule = await createSchedule(base());
    const patches: [Record<string, unknown>, string][] = [
      [{ time_zone: "Nowhere/Special" }, "time_zone"],
      [{ layers: base({ handoff_time: "funday 09:00" }).layers }, "layers.0.handoff_time"],
      [{ layers: base({ participants: [alice, foreign.ownerId] }).layers }, "layers.0.participants.1"],
      [{ layers: base({ participants: [suspended] }).layers }, "layers.0.participants.0"],
      [{ layers: base({ name: "override" }).layers }, "layers.0.name"],
      [{ team_id: foreign.teamId }, "team_id"],
      [{ id: "sch_mine" }, "id"],
      [{ name: "" }, "name"],
      [{ name: " \t " }, "name"],
    ];
    for (const [patch, path] of patches) {
      expectValidation(await admin.patch(`/api/v1/schedules/${schedule.id}`, patch), path);
    }
    expect((await admin.get(`/api/v1/schedules/${schedule.id}`)).body).toEqual(schedule);
  });

  test("override bodies", async () => {
    const schedule = (await createSchedule(base())).id;
    const ok = { user_id: bob, start_at: "2026-03-24T10:00:00Z", end_at: "2026-03-24T12:00:00Z" };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, end_at: ok.start_at }, "end_at"],
      [{ ...ok, end_at: "2026-03-24T09:00:00Z" }, "end_at"],
      [{ ...ok, end_at: "2026-03-24T11:00:00+02:00" }, "end_at"], // 09:00Z, before start
      [{ ...ok, user_id: foreign.ownerId }, "user_id"],
      [{ ...ok, user_id: "usr_01jzzzzzzzzzzzzzzzzzzzzzzz" }, "user_id"],
      [{ ...ok, user_id: suspended }, "user_id"],
      [{ ...ok, start_at: "tomorrow" }, "start_at"],
      [{ ...ok, layer: "main" }, "layer"],
      [{ start_at: ok.start_at, end_at: ok.end_at }, "user_id"],
    ];
    for (const [body, path] of cases) {
      expectValidation(await admin.post(`/api/v1/schedules/${schedule}/overrides`, body), path);
    }
    const list = await admin.get(`/api/v1/schedules/${schedule}/overrides`);
    expect(list.body.data).toEqual([]);
  });
});

describe("another org's schedule is 404 on every endpoint", () => {
  test("paths naming org B's schedule or override", async () => {
    const sid = () => foreign.scheduleId;
    const own = (await createSchedule({ ...weeklyBerlin(), name: "Own" })).id;
    const calls: [string, () => Promise<Response2>][] = [
      ["GET schedule", () => admin.get(`/api/v1/schedules/${sid()}`)],
      ["PATCH schedule", () => admin.patch(`/api/v1/schedules/${sid()}`, { name: "Hijacked" })],
      ["DELETE schedule", () => admin.delete(`/api/v1/schedules/${sid()}`)],
      ["on-call", () => admin.get(`/api/v1/schedules/${sid()}/on-call`)],
      [
        "timeline",
        () =>
          admin.get(`/api/v1/schedules/${sid()}/timeline?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`),
      ],
      ["list overrides", () => admin.get(`/api/v1/schedules/${sid()}/overrides`)],
      [
        "create override",
        () =>
          admin.post(`/api/v1/schedules/${sid()}/overrides`, {
            user_id: alice,
            start_at: "2026-03-24T10:00:00Z",
            end_at: "2026-03-24T12:00:00Z",
          }),
      ],
      ["delete override", () => admin.delete(`/api/v1/schedules/${sid()}/overrides/${foreign.overrideId}`)],
      [
        "delete override via own schedule",
        () => admin.delete(`/api/v1/schedules/${own}/overrides/${foreign.overrideId}`),
      ],
      ["ical", () => admin.get(`/api/v1/schedules/${sid()}/ical`)],
      ["feed-token", () => admin.post(`/api/v1/schedules/${sid()}/feed-token`)],
    ];
    for (const [label, call] of calls) {
      const res = await call();
      expect({ label, status: res.status, code: res.body?.error?.code }).toEqual({
        label,
        status: 404,
        code: "not_found",
      });
    }
    // Org A's list never shows it; org B's schedule and override are untouched.
    expect(await scheduleIds()).not.toContain(foreign.scheduleId);
    const theirs = await foreign.client.get(`/api/v1/schedules/${foreign.scheduleId}`);
    expect(theirs.status).toBe(200);
    expect(theirs.body.name).toBe("Other on-call");
    const overrides = await foreign.client.get(`/api/v1/schedules/${foreign.scheduleId}/overrides`);
    expect(overrides.body.data.map((o: { id: string }) => o.id)).toEqual([foreign.overrideId]);
    // And the other way round: org B cannot see org A's schedules.
    expectError(await foreign.client.get(`/api/v1/schedules/${own}`), 404, "not_found");
    const list = await foreign.client.get("/api/v1/schedules");
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([foreign.scheduleId]);
  });
});

describe("access", () => {
  let schedule: string;
  let override: string;
  let viewer: string;
  let alertsKey: string;

  beforeAll(async () => {
    schedule = (await createSchedule({ ...weeklyBerlin(), name: "Access" })).id;
    override = (
      await createOverride(schedule, {
        user_id: dave,
        start_at: new Date(Date.now() + DAY).toISOString(),
        end_at: new Date(Date.now() + 2 * DAY).toISOString(),
      })
    ).id;
    viewer = (await signUpUser(server, "viewer@acme.test", "viewer")).token;
    const key = await admin.post("/api/v1/api-keys", { name: "alerts only", scopes: ["alerts"] });
    if (key.status !== 201) throw new Error(key.text);
    alertsKey = key.body.secret;
  }, SLOW);

  const calls = (): AccessCall[] => [
    { label: "list", write: false, run: (c) => c.get("/api/v1/schedules") },
    { label: "read", write: false, run: (c) => c.get(`/api/v1/schedules/${schedule}`) },
    { label: "on-call", write: false, run: (c) => c.get(`/api/v1/schedules/${schedule}/on-call`) },
    {
      label: "timeline",
      write: false,
      run: (c) =>
        c.get(`/api/v1/schedules/${schedule}/timeline?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`),
    },
    { label: "overrides", write: false, run: (c) => c.get(`/api/v1/schedules/${schedule}/overrides`) },
    { label: "ical", write: false, run: (c) => c.get(`/api/v1/schedules/${schedule}/ical`) },
    {
      label: "create",
      write: true,
      run: (c) => c.post("/api/v1/schedules", { ...weeklyBerlin(), name: "New" }),
    },
    {
      label: "patch",
      write: true,
      run: (c) => c.patch(`/api/v1/schedules/${schedule}`, { name: "Changed" }),
    },
    { label: "delete", write: true, run: (c) => c.delete(`/api/v1/schedules/${schedule}`) },
    {
      label: "create override",
      write: true,
      run: (c) =>
        c.post(`/api/v1/schedules/${schedule}/overrides`, {
          user_id: alice,
          start_at: "2026-03-24T10:00:00Z",
          end_at: "2026-03-24T12:00:00Z",
        }),
    },
    {
      label: "delete override",
      write: true,
      run: (c) => c.delete(`/api/v1/schedules/${schedule}/overrides/${override}`),
    },
    { label: "feed-token", write: true, run: (c) => c.post(`/api/v1/schedules/${schedule}/feed-token`) },
  ];

  test("no credential → 401, a key without the schedules scope → 403 insufficient_scope", async () => {
    await expectRefused(calls(), [
      [anon, 401, "unauthenticated"],
      [admin.as(UNKNOWN_KEY), 401, "unauthenticated"],
      [admin.as(alertsKey), 403, "insufficient_scope"],
    ]);
    expect((await admin.get(`/api/v1/schedules/${schedule}`)).body.name).toBe("Access");
  });

  test("a viewer reads everything and changes nothing (403 forbidden_role)", async () => {
    const before = (await admin.get(`/api/v1/schedules/${schedule}`)).body;
    const schedulesBefore = await scheduleIds();
    await expectReadOnly(calls(), admin.as(viewer));
    expect((await admin.get(`/api/v1/schedules/${schedule}`)).body).toEqual(before);
    expect(await scheduleIds()).toEqual(schedulesBefore);
    const overrides = await admin.get(`/api/v1/schedules/${schedule}/overrides`);
    expect(overrides.body.data.map((o: { id: string }) => o.id)).toEqual([override]);
  });

  test(
    "team rules: a member changes schedules of their teams or of no team",
    async () => {
      const mia = await signUpUser(server, "mia@acme.test", "member");
      idOf["mia@acme.test"] = mia.user.id;
      const teamA = await admin.post("/api/v1/teams", { name: "Team A", member_ids: [mia.user.id] });
      const teamB = await admin.post("/api/v1/teams", { name: "Team B" });
      expect([teamA.status, teamB.status]).toEqual([201, 201]);
      const A = teamA.body.id as string;
      const B = teamB.body.id as string;
      const member = admin.as(mia.token);

      // Create: team A or no team; not team B.
      const ofA = await member.post("/api/v1/schedules", { ...weeklyBerlin(), name: "A's", team_id: A });
      expect(ofA.status).toBe(201);
      expect(ofA.body.team_id).toBe(A);
      const ofNone = await member.post("/api/v1/schedules", { ...weeklyBerlin(), name: "Nobody's" });
      expect(ofNone.status).toBe(201);
      expect(ofNone.body.team_id).toBeNull();
      const before = await scheduleIds();
      expectError(
        await member.post("/api/v1/schedules", { ...weeklyBerlin(), name: "B's", team_id: B }),
        403,
        "forbidden_role",
      );
      expect(await scheduleIds()).toEqual(before);

      // Change: A's and no team's schedules, including overrides and feed tokens.
      expect((await member.patch(`/api/v1/schedules/${ofA.body.id}`, { name: "A's (changed)" })).status).toBe(
        200,
      );
      expect((await member.patch(`/api/v1/schedules/${ofNone.body.id}`, { team_id: A })).status).toBe(200);
      expect((await member.patch(`/api/v1/schedules/${ofNone.body.id}`, { team_id: null })).status).toBe(200);
      const o = await member.post(`/api/v1/schedules/${ofA.body.id}/overrides`, {
        user_id: bob,
        start_at: new Date(Date.now() + DAY).toISOString(),
        end_at: new Date(Date.now() + 2 * DAY).toISOString(),
      });
      expect(o.status).toBe(201);
      expect(o.body.created_by).toBe(mia.user.id);
      expect((await member.delete(`/api/v1/schedules/${ofA.body.id}/overrides/${o.body.id}`)).status).toBe(
        204,
      );
      expect((await member.post(`/api/v1/schedules/${ofA.body.id}/feed-token`)).status).toBe(201);

      // Team B's schedule: readable, not changeable.
      const ofB = await createSchedule({ ...weeklyBerlin(), name: "B's", team_id: B });
      const bOverride = await createOverride(ofB.id, {
        user_id: carol,
        start_at: new Date(Date.now() + DAY).toISOString(),
        end_at: new Date(Date.now() + 2 * DAY).toISOString(),
      });
      expect((await member.get(`/api/v1/schedules/${ofB.id}`)).status).toBe(200);
      expect((await member.get(`/api/v1/schedules/${ofB.id}/on-call`)).status).toBe(200);
      for (const res of [
        await member.patch(`/api/v1/schedules/${ofB.id}`, { name: "Mine now" }),
        await member.patch(`/api/v1/schedules/${ofB.id}`, { team_id: A }),
        await member.patch(`/api/v1/schedules/${ofB.id}`, { team_id: null }),
        await member.delete(`/api/v1/schedules/${ofB.id}`),
        await member.post(`/api/v1/schedules/${ofB.id}/overrides`, {
          user_id: alice,
          start_at: "2026-03-24T10:00:00Z",
          end_at: "2026-03-24T12:00:00Z",
        }),
        await member.delete(`/api/v1/schedules/${ofB.id}/overrides/${bOverride.id}`),
        await member.post(`/api/v1/schedules/${ofB.id}/feed-token`),
        // Moving one of their own schedules to team B.
        await member.patch(`/api/v1/schedules/${ofA.body.id}`, { team_id: B }),
        await member.patch(`/api/v1/schedules/${ofNone.body.id}`, { team_id: B }),
      ]) {
        expectError(res, 403, "forbidden_role");
      }
      expect((await admin.get(`/api/v1/schedules/${ofB.id}`)).body).toEqual(ofB);
      expect((await admin.get(`/api/v1/schedules/${ofA.body.id}`)).body.team_id).toBe(A);
      expect((await admin.get(`/api/v1/schedules/${ofNone.body.id}`)).body.team_id).toBeNull();
      const bOverrides = await admin.get(`/api/v1/schedules/${ofB.id}/overrides`);
      expect(bOverrides.body.data).toEqual([bOverride]);

      // A team of another org is 400 for members too.
      expectValidation(
        await member.patch(`/api/v1/schedules/${ofA.body.id}`, { team_id: foreign.teamId }),
        "team_id",
      );

      // A member's own API key is held to the same team rules.
      const key = await member.post("/api/v1/api-keys", { name: "mia's key", scopes: ["schedules"] });
      expect(key.status).toBe(201);
      const miaKey = admin.as(key.body.secret);
      expectError(
        await miaKey.patch(`/api/v1/schedules/${ofB.id}`, { name: "Via key" }),
        403,
        "forbidden_role",
      );
      expectError(
        await miaKey.post("/api/v1/schedules", { ...weeklyBerlin(), name: "B's via key", team_id: B }),
        403,
        "forbidden_role",
      );
      expect(
        (await miaKey.patch(`/api/v1/schedules/${ofA.body.id}`, { description: "via key" })).status,
      ).toBe(200);

      // An admin changes anything, and may move schedules between teams.
      const moved = await admin.patch(`/api/v1/schedules/${ofB.id}`, { team_id: A });
      expect(moved.status).toBe(200);
      expect(moved.body.team_id).toBe(A);
      expect((await member.patch(`/api/v1/schedules/${ofB.id}`, { name: "Now A's" })).status).toBe(200);
      expect((await admin.patch(`/api/v1/schedules/${ofA.body.id}`, { team_id: B })).status).toBe(200);
      expectError(
        await member.patch(`/api/v1/schedules/${ofA.body.id}`, { name: "Gone" }),
        403,
        "forbidden_role",
      );
      expect((await admin.delete(`/api/v1/schedules/${ofA.body.id}`)).status).toBe(204);
    },
    SLOW,
  );
});

describe("user_in_use", () => {
  test("a layer participant or a future override blocks deleting the user until removed", async () => {
    const pat = await invite("pat@acme.test");
    const schedule = await createSchedule({
      ...weeklyBerlin(),
      name: "Pat's rotation",
      layers: [{ ...weeklyBerlin().layers[0], participants: [alice, pat] }],
    });
    const elsewhere = (await createSchedule({ ...weeklyBerlin(), name: "Pat overrides here" })).id;
    const future = await createOverride(elsewhere, {
      user_id: pat,
      start_at: new Date(Date.now() + DAY).toISOString(),
      end_at: new Date(Date.now() + 2 * DAY).toISOString(),
    });

    const both = await admin.delete(`/api/v1/users/${pat}`);
    expectError(both, 409, "user_in_use");
    expect(both.body.error.details).toEqual({
      schedule_ids: [schedule.id],
      override_ids: [future.id],
      policy_ids: [],
    });

    // Out of the layers: only the override is left.
    const patched = await admin.patch(`/api/v1/schedules/${schedule.id}`, {
      layers: [{ ...weeklyBerlin().layers[0], participants: [alice] }],
    });
    expect(patched.status).toBe(200);
    const overrideOnly = await admin.delete(`/api/v1/users/${pat}`);
    expectError(overrideOnly, 409, "user_in_use");
    expect(overrideOnly.body.error.details).toEqual({
      schedule_ids: [],
      override_ids: [future.id],
      policy_ids: [],
    });
    expect((await admin.get(`/api/v1/users/${pat}`)).status).toBe(200);

    expect((await admin.delete(`/api/v1/schedules/${elsewhere}/overrides/${future.id}`)).status).toBe(204);
    expect((await admin.delete(`/api/v1/users/${pat}`)).status).toBe(204);
    expectError(await admin.get(`/api/v1/users/${pat}`), 404, "not_found");
  });

  test(
    "an override that has ended no longer blocks",
    async () => {
      const quinn = await invite("quinn@acme.test");
      const id = (await createSchedule({ ...weeklyBerlin(), name: "Quinn's cover" })).id;
      const endsAt = Date.now() + 1500;
      const o = await createOverride(id, {
        user_id: quinn,
        start_at: new Date(endsAt - 3_600_000).toISOString(),
        end_at: new Date(endsAt).toISOString(),
      });
      const blocked = await admin.delete(`/api/v1/users/${quinn}`);
      expectError(blocked, 409, "user_in_use");
      expect(blocked.body.error.details).toEqual({ schedule_ids: [], override_ids: [o.id], policy_ids: [] });

      await Bun.sleep(Math.max(0, endsAt - Date.now()) + 50);
      expectError(await admin.delete(`/api/v1/schedules/${id}/overrides/${o.id}`), 409, "override_ended");
      expect((await admin.delete(`/api/v1/users/${quinn}`)).status).toBe(204);
      const history = await admin.get(`/api/v1/schedules/${id}/overrides`);
      expect(history.body.data).toEqual([o]);
    },
    SLOW,
  );

  test("a user with only past overrides can be deleted; the overrides stay listed", async () => {
    const rey = await invite("rey@acme.test");
    const id = (await createSchedule({ ...weeklyBerlin(), name: "Rey's past" })).id;
    const past = await createOverride(id, {
      user_id: rey,
      start_at: "2026-03-24T10:00:00Z",
      end_at: "2026-03-24T12:00:00Z",
      reason: "Covered a shift",
    });
    expect((await admin.delete(`/api/v1/users/${rey}`)).status).toBe(204);
    const list = await admin.get(`/api/v1/schedules/${id}/overrides`);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([past]);
    expect(list.body.data[0].user_id).toBe(rey);
  });

  test("deleting the schedule releases its participants", async () => {
    const sam = await invite("sam@acme.test");
    const id = (
      await createSchedule({
        ...weeklyBerlin(),
        name: "Sam's",
        layers: [{ ...weeklyBerlin().layers[0], participants: [sam] }],
      })
    ).id;
    expectError(await admin.delete(`/api/v1/users/${sam}`), 409, "user_in_use");
    expect((await admin.delete(`/api/v1/schedules/${id}`)).status).toBe(204);
    expect((await admin.delete(`/api/v1/users/${sam}`)).status).toBe(204);
  });
});

describe("edges of the input", () => {
  test("a weekly handoff day may be written in capitals and is stored in lower case", async () => {
    const body = weeklyBerlin();
    (body.layers[0] as { handoff_time: string }).handoff_time = "MON 09:00";
    const created = await createSchedule({ ...body, name: "Capitals" });
    expect(created.layers[0].handoff_time).toBe("mon 09:00");
  });

  test("instants from the year 9999 on are 400: answers must stay four-digit years", async () => {
    const created = await createSchedule({ ...weeklyBerlin(), name: "Far future" });
    const res = await admin.get(`/api/v1/schedules/${created.id}/on-call?at=9999-12-31T23:59:59Z`);
    expectValidation(res, "at");
  });

  test("a bad override body on another org's schedule is 404, not 400", async () => {
    const res = await admin.post(`/api/v1/schedules/${foreign.scheduleId}/overrides`, {
      user_id: alice,
      start_at: "2026-05-02T00:00:00Z",
      end_at: "2026-05-01T00:00:00Z",
    });
    expectError(res, 404, "not_found");
  });
});

describe("answers follow every committed change", () => {
  test("on-call asked again right after an override, a PATCH or a delete gives the new answer", async () => {
    const body = weeklyBerlin();
    (body.layers[0] as { participants: string[] }).participants = [alice]; // alice whenever the layer runs
    const created = await createSchedule({ ...body, name: "Fresh answers" });
    const at = new Date(Date.now() + 2 * DAY).toISOString();
    const ask = async () =>
      (await admin.get(`/api/v1/schedules/${created.id}/on-call?at=${encodeURIComponent(at)}`)).body;
    expect((await ask()).data.user_id).toBe(alice);
    expect((await ask()).data.user_id).toBe(alice);

    const override = await createOverride(created.id, {
      user_id: dave,
      start_at: new Date(Date.now() + DAY).toISOString(),
      end_at: new Date(Date.now() + 3 * DAY).toISOString(),
    });
    expect((await ask()).data).toEqual(expect.objectContaining({ user_id: dave, layer: "override" }));

    expect((await admin.delete(`/api/v1/schedules/${created.id}/overrides/${override.id}`)).status).toBe(204);
    expect((await ask()).data.user_id).toBe(alice);

    (body.layers[0] as { participants: string[] }).participants = [carol];
    expect((await admin.patch(`/api/v1/schedules/${created.id}`, { layers: body.layers })).status).toBe(200);
    expect((await ask()).data.user_id).toBe(carol);

    expect((await admin.delete(`/api/v1/schedules/${created.id}`)).status).toBe(204);
    expect(
      (await admin.get(`/api/v1/schedules/${created.id}/on-call?at=${encodeURIComponent(at)}`)).status,
    ).toBe(404);
  });
});
