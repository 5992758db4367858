/** Schedules: CRUD with the team rules, overrides, who is on call, the timeline and the iCal feed. */
import type { Principal } from "../accounts/access.ts";
import type { AccountsContext } from "../accounts/context.ts";
import { newLinkToken, sha256 } from "../accounts/secrets.ts";
import { checkTeamExists, checkTeamWrite } from "../accounts/team-access.ts";
import { emailsOf, existingUserIds, findUser } from "../accounts/users.repository.ts";
import type { Db } from "../db/store.ts";
import { AppError, errors, requireName } from "../errors.ts";
import { policiesTargeting } from "../escalation/policies.repository.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import { DAY, iso } from "../time.ts";
import { renderCalendar } from "./ical.ts";
import { finalTimeline, onCallAt, type ScheduleSpec } from "./rotation.ts";
import type { ScheduleTable } from "./schedule.table.ts";
import {
  normalizeLayers,
  parseLayers,
  type StoredLayer,
  toLayerSpec,
  toOverride,
  toOverrideSpec,
  toSchedule,
} from "./schedule.ts";
import {
  bumpScheduleVersion,
  deleteOverride,
  deleteSchedule,
  findOverride,
  findSchedule,
  findScheduleByFeedHash,
  insertOverride,
  insertSchedule,
  listOverrides,
  listSchedules,
  overridesEndingAfter,
  scheduleVersion,
  setParticipants,
  updateSchedule,
} from "./schedules.repository.ts";
import { isValidZone } from "./zoned.ts";

export const MAX_TIMELINE_MS = 90 * DAY;
export const FEED_DAYS = 60;
export const FEED_HISTORY_DAYS = 7;

type LayerIn = Parameters<typeof normalizeLayers>[0][number];

export interface ScheduleCreate {
  name: string;
  description?: string;
  time_zone: string;
  team_id?: string | null;
  layers: LayerIn[];
}

export type SchedulePatch = Partial<ScheduleCreate>;

interface PreparedSchedule {
  orgId: string;
  version: number;
  dataVersion: number;
  windowStart: number;
  spec: ScheduleSpec;
  emails: Map<string, string>;
}

const PREPARED_CACHE_LIMIT = 10_000;

export class ScheduleService {
  private readonly preparedCache = new Map<string, PreparedSchedule>();

  constructor(private readonly ctx: AccountsContext) {}

  async list(orgId: string, filter: { team_id?: string; limit: number; cursor: (string | number)[] | null }) {
    const rows = await listSchedules(this.ctx.store.read, orgId, {
      teamId: filter.team_id,
      afterId: filter.cursor ? String(filter.cursor[0]) : undefined,
      limit: filter.limit,
    });
    return toPage(rows, filter.limit, "schedules", (r) => [r.id], toSchedule);
  }

  async get(orgId: string, id: string) {
    return toSchedule(await this.require(this.ctx.store.read, orgId, id));
  }

  async create(orgId: string, principal: Principal, input: ScheduleCreate) {
    const name = requireName(input.name);
    const zone = checkZone(input.time_zone);
    const layers = normalizeLayers(input.layers);
    const id = newId("sch");
    await this.ctx.store.write(async (tx) => {
      await checkTeamExists(tx, orgId, input.team_id);
      await checkTeamWrite(tx, principal, [input.team_id ?? null]);
      await checkParticipants(tx, orgId, layers);
      const now = Date.now();
      await insertSchedule(tx, {
        id,
        org_id: orgId,
        name,
        description: input.description ?? "",
        time_zone: zone,
        team_id: input.team_id ?? null,
        layers: JSON.stringify(layers),
        feed_token_hash: null,
        version: 1,
        created_at: now,
        updated_at: now,
      });
      await setParticipants(
        tx,
        id,
        layers.flatMap((l) => l.participants),
      );
    });
    return this.get(orgId, id);
  }

  async update(orgId: string, principal: Principal, id: string, patch: SchedulePatch) {
    const layers = patch.layers === undefined ? undefined : normalizeLayers(patch.layers);
    const zone = patch.time_zone === undefined ? undefined : checkZone(patch.time_zone);
    const name = patch.name === undefined ? undefined : requireName(patch.name);
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamExists(tx, orgId, patch.team_id);
      await checkTeamWrite(tx, principal, [
        row.team_id,
        ...(patch.team_id !== undefined ? [patch.team_id] : []),
      ]);
      const changes: Partial<ScheduleTable> = { updated_at: Date.now(), version: row.version + 1 };
      if (name !== undefined) changes.name = name;
      if (patch.description !== undefined) changes.description = patch.description;
      if (zone !== undefined) changes.time_zone = zone;
      if (patch.team_id !== undefined) changes.team_id = patch.team_id;
      if (layers !== undefined) {
        await checkParticipants(tx, orgId, layers);
        changes.layers = JSON.stringify(layers);
        await setParticipants(
          tx,
          id,
          layers.flatMap((l) => l.participants),
        );
      }
      await updateSchedule(tx, id, changes);
    });
    return this.get(orgId, id);
  }

  async remove(orgId: string, principal: Principal, id: string) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamWrite(tx, principal, [row.team_id]);
      const policyIds = await policiesTargeting(tx, "schedule", id);
      if (policyIds.length > 0) {
        throw new AppError("schedule_in_use", "Escalation policies still name this schedule.", {
          policy_ids: policyIds,
        });
      }
      await deleteSchedule(tx, id);
    });
  }

  /** Who is on call at `at` (default now), with their email and until when. */
  async onCall(orgId: string, id: string, at: number) {
    const { spec, emails } = await this.prepared(orgId, id, at);
    const result = onCallAt(spec, at);
    return {
      schedule_id: id,
      at: iso(at),
      user_id: result.userId,
      user_email: result.userId ? (emails.get(result.userId) ?? null) : null,
      layer: result.layer,
      until: iso(result.until),
    };
  }

  /**
   * The engine's input for answers at `at`, kept per schedule while nothing was committed
   * (`Store.dataVersion`) or, after a commit, while the schedule's `version` is unchanged. It
   * holds the overrides that end after a window 90 days back; older instants are built fresh.
   */
  private async prepared(orgId: string, id: string, at: number): Promise<PreparedSchedule> {
    const store = this.ctx.store;
    const dataVersion = store.dataVersion();
    const cached = this.preparedCache.get(id);
    if (cached && cached.orgId === orgId && at >= cached.windowStart) {
      if (cached.dataVersion === dataVersion) return cached;
      const version = scheduleVersion(store, orgId, id);
      if (version === undefined) {
        this.preparedCache.delete(id);
        throw errors.notFound("Schedule");
      }
      if (version === cached.version) {
        cached.emails = await emailsOf(store.read, [...cached.emails.keys()]);
        cached.dataVersion = dataVersion;
        return cached;
      }
    }
    const row = await this.require(store.read, orgId, id);
    const windowStart = Math.min(at, Date.now() - MAX_TIMELINE_MS);
    const spec = await this.spec(store.read, row, windowStart);
    const userIds = new Set([
      ...spec.layers.flatMap((l) => l.participants),
      ...spec.overrides.map((o) => o.userId),
    ]);
    const prepared = {
      orgId,
      version: row.version,
      dataVersion,
      windowStart,
      spec,
      emails: await emailsOf(store.read, [...userIds]),
    };
    if (this.preparedCache.size >= PREPARED_CACHE_LIMIT) this.preparedCache.clear();
    this.preparedCache.set(id, prepared);
    return prepared;
  }

  /** The final schedule over [from, to), at most 90 days. */
  async timeline(orgId: string, id: string, from: number, to: number) {
    if (to <= from) throw errors.field("to", "must be after from");
    if (to - from > MAX_TIMELINE_MS) throw errors.field("to", "must be at most 90 days after from");
    const db = this.ctx.store.read;
    const row = await this.require(db, orgId, id);
    return this.segments(db, row, from, to);
  }

  private async segments(db: Db, row: ScheduleTable, from: number, to: number) {
    const spec = await this.spec(db, row, from);
    const segments = finalTimeline(spec, from, to);
    const emails = await emailsOf(db, [...new Set(segments.flatMap((s) => (s.userId ? [s.userId] : [])))]);
    return segments.map((s) => ({
      user_id: s.userId,
      user_email: s.userId ? (emails.get(s.userId) ?? null) : null,
      layer: s.layer,
      start: iso(s.start),
      end: iso(s.end),
    }));
  }

  /** The engine's input: layers and the overrides that still matter from `from` on. */
  private async spec(db: Db, row: ScheduleTable, from: number): Promise<ScheduleSpec> {
    const overrides = await overridesEndingAfter(db, row.id, from);
    return {
      zone: row.time_zone,
      layers: parseLayers(row).map((l) => toLayerSpec(l, row.time_zone)),
      overrides: overrides.map((o, i) => toOverrideSpec(o, i)),
    };
  }

  async listOverrides(
    orgId: string,
    id: string,
    filter: { active?: boolean; limit: number; cursor: (string | number)[] | null },
  ) {
    const db = this.ctx.store.read;
    await this.require(db, orgId, id);
    const rows = await listOverrides(db, id, {
      endsAfter: filter.active ? Date.now() : undefined,
      afterId: filter.cursor ? String(filter.cursor[0]) : undefined,
      limit: filter.limit,
    });
    return toPage(rows, filter.limit, `overrides:${id}`, (r) => [r.id], toOverride);
  }

  async createOverride(
    orgId: string,
    principal: Principal,
    scheduleId: string,
    input: { user_id: string; start_at: number; end_at: number; reason?: string },
  ) {
    return this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, scheduleId);
      await checkTeamWrite(tx, principal, [row.team_id]);
      if (input.end_at <= input.start_at) throw errors.field("end_at", "must be after start_at");
      const user = await findUser(tx, orgId, input.user_id);
      if (!user || user.status === "suspended") {
        throw errors.field("user_id", "must name an active or invited user of this organization");
      }
      const override = {
        id: newId("ovr"),
        org_id: orgId,
        schedule_id: scheduleId,
        user_id: input.user_id,
        start_at: input.start_at,
        end_at: input.end_at,
        reason: input.reason ?? "",
        created_by: principal.actor,
        created_at: Date.now(),
      };
      await insertOverride(tx, override);
      await bumpScheduleVersion(tx, scheduleId);
      return toOverride(override);
    });
  }

  async deleteOverride(orgId: string, principal: Principal, scheduleId: string, overrideId: string) {
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, scheduleId);
      await checkTeamWrite(tx, principal, [row.team_id]);
      const override = await findOverride(tx, scheduleId, overrideId);
      if (!override) throw errors.notFound("Override");
      if (override.end_at <= Date.now()) {
        throw new AppError("override_ended", "This override has already ended; it stays as history.");
      }
      await deleteOverride(tx, overrideId);
      await bumpScheduleVersion(tx, scheduleId);
    });
  }

  /** A new secret feed URL for calendar apps; the previous one stops working. */
  async rotateFeedToken(orgId: string, principal: Principal, id: string) {
    const link = newLinkToken();
    await this.ctx.store.write(async (tx) => {
      const row = await this.require(tx, orgId, id);
      await checkTeamWrite(tx, principal, [row.team_id]);
      await updateSchedule(tx, id, { feed_token_hash: link.hash });
    });
    return { token: link.token, url: `${this.ctx.config.base_url}/feeds/${link.token}` };
  }

  /** The iCalendar of the next 60 days, for an API caller. */
  async ical(orgId: string, id: string, now = Date.now()) {
    const db = this.ctx.store.read;
    return this.calendar(db, await this.require(db, orgId, id), now);
  }

  /** The iCalendar behind a secret feed token, or 404. */
  async icalByFeedToken(token: string, now = Date.now()) {
    const db = this.ctx.store.read;
    const row = await findScheduleByFeedHash(db, sha256(token));
    if (!row) throw errors.notFound("Feed");
    return this.calendar(db, row, now);
  }

  /**
   * The feed starts 7 days back, at a UTC midnight: a segment's UID is made from its start, and
   * a start clipped at `now` would change on every fetch and duplicate events in calendar apps.
   */
  private async calendar(db: Db, row: ScheduleTable, now: number) {
    const from = Math.floor(now / DAY) * DAY - FEED_HISTORY_DAYS * DAY;
    const segments = await this.segments(db, row, from, now + FEED_DAYS * DAY);
    const events = segments
      .filter((s) => s.user_id !== null)
      .map((s) => ({
        uid: `${row.id}-${Date.parse(s.start)}-${s.user_id}@svc`,
        start: Date.parse(s.start),
        end: Date.parse(s.end),
        summary: `On call: ${s.user_email ?? s.user_id}`,
        description: `${row.name}: ${s.layer === "override" ? "override" : `layer ${s.layer}`}`,
      }));
    return renderCalendar(row.name, events, now);
  }

  private async require(db: Db, orgId: string, id: string): Promise<ScheduleTable> {
    const row = await findSchedule(db, orgId, id);
    if (!row) throw errors.notFound("Schedule");
    return row;
  }
}

function checkZone(zone: string): string {
  if (!isValidZone(zone)) throw errors.field("time_zone", "must be an IANA time zone such as Europe/Berlin");
  return zone;
}

/** Every participant must be an active or invited user of the org: 400 naming the first that is not. */
async function checkParticipants(db: Db, orgId: string, layers: StoredLayer[]): Promise<void> {
  const ids = [...new Set(layers.flatMap((l) => l.participants))];
  if (ids.length === 0) return;
  const ok = new Set(await existingUserIds(db, orgId, ids, { excludeSuspended: true }));
  layers.forEach((layer, i) => {
    const j = layer.participants.findIndex((p) => !ok.has(p));
    if (j !== -1) {
      throw errors.field(
        `layers.${i}.participants.${j}`,
        "must name an active or invited user of this organization",
      );
    }
  });
}
