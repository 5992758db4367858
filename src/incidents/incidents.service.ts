/**
 * Incidents: customer-facing records of a disruption and their updates. Every status change is
 * also an update; `resolved` stamps `resolved_at` and leaving it clears it. Each change writes
 * its `run.service.incident.*` event and, for created, updated and resolved, queues copies to
 * the org's incident channels, in the same transaction.
 */
import { hasAdminPrivilege, type Principal } from "../accounts/access.ts";
import type { AccountsContext } from "../accounts/context.ts";
import { findOrgById } from "../accounts/orgs.repository.ts";
import { parseSettings } from "../accounts/settings.ts";
import { emailsOf } from "../accounts/users.repository.ts";
import { addTimeline, findAlert } from "../alerts/alerts.repository.ts";
import type { Db } from "../db/store.ts";
import { errors, requireName } from "../errors.ts";
import { appendEvent } from "../events/outbox.ts";
import { toPage } from "../http/pagination.ts";
import { firstUnknownId, newId } from "../ids.ts";
import { findChannels } from "../notifications/channels.repository.ts";
import type { Deliverer } from "../notifications/deliverer.ts";
import { enqueueDelivery } from "../notifications/deliveries.repository.ts";
import { existingPageIds } from "../status-pages/status-pages.repository.ts";
import { parseRfc3339 } from "../time.ts";
import type { IncidentSeverity, IncidentStatus, IncidentTable } from "./incident.table.ts";
import { toIncident, toUpdate } from "./incident.ts";
import {
  changeUpdate,
  deleteIncident,
  deleteUpdate,
  existingMonitorIds,
  findIncident,
  findUpdate,
  insertIncident,
  insertUpdate,
  linksOf,
  listIncidents,
  setLinks,
  updateIncident,
  updatesOf,
} from "./incidents.repository.ts";

export interface IncidentCreate {
  title: string;
  severity: IncidentSeverity;
  status?: IncidentStatus;
  started_at?: string;
  initial_update?: { body: string; public?: boolean };
  monitor_ids?: string[];
  status_page_ids?: string[];
}

export interface IncidentChange {
  title?: string;
  severity?: Exclude<IncidentSeverity, "maintenance">;
  status?: IncidentStatus;
  monitor_ids?: string[];
  status_page_ids?: string[];
}

type EventKind = "created" | "updated" | "resolved" | "deleted";

/** Alert severity → incident severity (DESIGN §6). */
const FROM_ALERT: Record<string, Exclude<IncidentSeverity, "maintenance">> = {
  critical: "major",
  warning: "minor",
  info: "minor",
};

export class IncidentService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly deliverer: Deliverer,
  ) {}

  async list(
    orgId: string,
    which: "active" | "resolved" | "all",
    limit: number,
    cursor: (string | number)[] | null,
  ) {
    const db = this.ctx.store.read;
    const rows = await listIncidents(db, orgId, {
      which,
      beforeId: cursor ? String(cursor[0]) : undefined,
      limit,
    });
    const page = toPage(
      rows,
      limit,
      `incidents:${which}`,
      (r) => [r.id],
      (r) => r,
    );
    const links = await linksOf(
      db,
      page.data.map((r) => r.id),
    );
    return {
      ...page,
      data: page.data.map((r) => toIncident(r, links.monitors.get(r.id) ?? [], links.pages.get(r.id) ?? [])),
    };
  }

  /** The incident with all its updates, newest first. */
  async get(orgId: string, id: string) {
    const db = this.ctx.store.read;
    const row = await findIncident(db, orgId, id);
    if (!row) throw errors.notFound("Incident");
    return this.view(db, row);
  }

  /** The incident with its links and all its updates, newest first. */
  private async view(db: Db, row: IncidentTable) {
    const links = await linksOf(db, [row.id]);
    const incident = toIncident(row, links.monitors.get(row.id) ?? [], links.pages.get(row.id) ?? []);
    const updates = await updatesOf(db, row.id);
    const emails = await emailsOf(db, [...new Set(updates.map((u) => u.user_id))]);
    return { ...incident, updates: updates.map((u) => toUpdate(u, emails.get(u.user_id) ?? null)) };
  }

  async create(orgId: string, principal: Principal, input: IncidentCreate, fromAlertId?: string) {
    // An initial update is an update: its body is required, as on POST updates.
    if (input.initial_update && !input.initial_update.body.trim()) {
      throw errors.field("initial_update.body", "must not be empty");
    }
    const now = Date.now();
    const id = newId("inc");
    await this.ctx.store.write(async (tx) => {
      await checkLinks(tx, orgId, input.monitor_ids, input.status_page_ids);
      const status: IncidentStatus =
        input.status ?? (input.severity === "maintenance" ? "maintenance" : "investigating");
      const row: IncidentTable = {
        id,
        org_id: orgId,
        title: requireName(input.title, "title"),
        status,
        severity: input.severity,
        started_at: input.started_at ? (parseRfc3339(input.started_at) as number) : now,
        resolved_at: status === "resolved" ? now : null,
        created_by: principal.actor,
        created_at: now,
        updated_at: now,
      };
      await insertIncident(tx, row);
      await setLinks(tx, id, input.monitor_ids ?? [], input.status_page_ids ?? []);
      if (input.initial_update) {
        await this.addUpdateRow(
          tx,
          id,
          status,
          input.initial_update.body,
          input.initial_update.public ?? true,
          principal,
          now,
        );
      }
      if (fromAlertId) await addTimeline(tx, fromAlertId, now, "incident_created", { incident_id: id });
      await this.announce(tx, row, "created", now);
    });
    return this.get(orgId, id);
  }

  /** An incident from an alert: its summary, mapped severity and monitor unless the body says otherwise. */
  async createFromAlert(
    orgId: string,
    principal: Principal,
    alertId: string,
    input: Partial<IncidentCreate>,
  ) {
    const alert = await findAlert(this.ctx.store.read, orgId, alertId);
    if (!alert) throw errors.notFound("Alert");
    return this.create(
      orgId,
      principal,
      {
        ...input,
        title: input.title ?? alert.summary,
        severity: input.severity ?? FROM_ALERT[alert.severity] ?? "minor",
        monitor_ids: input.monitor_ids ?? [alert.monitor_id],
      },
      alert.id,
    );
  }

  async update(orgId: string, principal: Principal, id: string, change: IncidentChange) {
    const now = Date.now();
    await this.ctx.store.write(async (tx) => {
      const row = await findIncident(tx, orgId, id);
      if (!row) throw errors.notFound("Incident");
      await checkLinks(tx, orgId, change.monitor_ids, change.status_page_ids);
      const next: IncidentTable = { ...row, updated_at: now };
      if (change.title !== undefined) next.title = requireName(change.title, "title");
      if (change.severity !== undefined) next.severity = change.severity;
      const statusChanged = change.status !== undefined && change.status !== row.status;
      if (statusChanged) {
        Object.assign(next, statusFields(change.status as IncidentStatus, now));
        // A status change by PATCH is also an update, with an empty body, shown publicly.
        await this.addUpdateRow(tx, id, next.status, "", true, principal, now);
      }
      await updateIncident(tx, id, next);
      await setLinks(tx, id, change.monitor_ids, change.status_page_ids);
      await this.announce(
        tx,
        next,
        statusChanged && next.status === "resolved" ? "resolved" : "updated",
        now,
      );
    });
    return this.get(orgId, id);
  }

  /** Deleting an incident takes an owner or admin (or an admin-scope service key). */
  async remove(orgId: string, principal: Principal, id: string) {
    if (!hasAdminPrivilege(principal))
      throw errors.forbiddenRole("Only an owner or admin can delete an incident.");
    await this.ctx.store.write(async (tx) => {
      const row = await findIncident(tx, orgId, id);
      if (!row) throw errors.notFound("Incident");
      await this.announce(tx, row, "deleted", Date.now());
      await deleteIncident(tx, id);
    });
  }

  /** A new update; its `status`, when given and different, changes the incident's. */
  async addUpdate(
    orgId: string,
    principal: Principal,
    id: string,
    input: { body: string; status?: IncidentStatus; public?: boolean },
  ) {
    const now = Date.now();
    const updateId = await this.ctx.store.write(async (tx) => {
      const row = await findIncident(tx, orgId, id);
      if (!row) throw errors.notFound("Incident");
      if (!input.body.trim()) throw errors.field("body", "must not be empty");
      const status = input.status ?? row.status;
      const next: IncidentTable = {
        ...row,
        updated_at: now,
        ...(status !== row.status ? statusFields(status, now) : {}),
      };
      const created = await this.addUpdateRow(
        tx,
        id,
        status,
        input.body,
        input.public ?? true,
        principal,
        now,
      );
      await updateIncident(tx, id, next);
      await this.announce(
        tx,
        next,
        status !== row.status && status === "resolved" ? "resolved" : "updated",
        now,
      );
      return created;
    });
    return this.updateView(orgId, id, updateId);
  }

  /** Edits keep the earlier version in `edit_history`; status pages show an "edited" marker. */
  async editUpdate(
    orgId: string,
    principal: Principal,
    id: string,
    updateId: string,
    patch: { body?: string; public?: boolean },
  ) {
    const now = Date.now();
    await this.ctx.store.write(async (tx) => {
      const row = await findIncident(tx, orgId, id);
      if (!row) throw errors.notFound("Incident");
      const update = await findUpdate(tx, id, updateId);
      if (!update) throw errors.notFound("Update");
      if (patch.body !== undefined && !patch.body.trim()) throw errors.field("body", "must not be empty");
      const history = JSON.parse(update.edit_history) as unknown[];
      history.push({
        body: update.body,
        public: update.public === 1,
        edited_at: new Date(now).toISOString(),
        edited_by: principal.actor,
      });
      await changeUpdate(tx, updateId, {
        body: patch.body ?? update.body,
        public: patch.public === undefined ? update.public : patch.public ? 1 : 0,
        edit_history: JSON.stringify(history),
        edited_at: now,
      });
      await updateIncident(tx, id, { updated_at: now });
      await this.announce(tx, { ...row, updated_at: now }, "updated", now);
    });
    return this.updateView(orgId, id, updateId);
  }

  /** Deleting an update takes an owner or admin and never changes the incident's status. */
  async deleteUpdate(orgId: string, principal: Principal, id: string, updateId: string) {
    if (!hasAdminPrivilege(principal))
      throw errors.forbiddenRole("Only an owner or admin can delete an update.");
    const now = Date.now();
    await this.ctx.store.write(async (tx) => {
      const row = await findIncident(tx, orgId, id);
      if (!row) throw errors.notFound("Incident");
      if (!(await findUpdate(tx, id, updateId))) throw errors.notFound("Update");
      await deleteUpdate(tx, updateId);
      await updateIncident(tx, id, { updated_at: now });
      await this.announce(tx, { ...row, updated_at: now }, "updated", now);
    });
  }

  private async updateView(orgId: string, id: string, updateId: string) {
    const incident = await this.get(orgId, id);
    const update = incident.updates.find((u) => u.id === updateId);
    if (!update) throw errors.notFound("Update");
    return update;
  }

  private async addUpdateRow(
    tx: Db,
    incidentId: string,
    status: IncidentStatus,
    body: string,
    isPublic: boolean,
    principal: Principal,
    now: number,
  ): Promise<string> {
    const id = newId("upd");
    await insertUpdate(tx, {
      id,
      incident_id: incidentId,
      status,
      body,
      public: isPublic ? 1 : 0,
      user_id: principal.actor,
      edit_history: "[]",
      edited_at: null,
      created_at: now,
    });
    return id;
  }

  /** The change's event; created, updated and resolved are also copied to the incident channels. */
  private async announce(tx: Db, row: IncidentTable, kind: EventKind, now: number): Promise<void> {
    const org = await findOrgById(tx, row.org_id);
    if (!org) return;
    const data = await this.view(tx, row);
    const event = await appendEvent(tx, {
      org,
      area: "incidents",
      resourceId: row.id,
      type: `run.service.incident.${kind}.v1`,
      data,
      time: now,
    });
    if (kind === "deleted") return;
    const settings = parseSettings(org.settings);
    const channels = await findChannels(tx, org.id, settings.notifications.incident_channel_ids);
    for (const channel of channels) {
      if (channel.enabled !== 1 || channel.type === "cloudevents") continue;
      await enqueueDelivery(tx, {
        orgId: org.id,
        channelId: channel.id,
        userId: null,
        alertId: null,
        eventId: event.id,
        now,
      });
      this.ctx.store.afterCommit(() => this.deliverer.kick());
    }
  }
}

function statusFields(status: IncidentStatus, now: number): Pick<IncidentTable, "status" | "resolved_at"> {
  return { status, resolved_at: status === "resolved" ? now : null };
}

/** Unknown monitor or status page ids are 400 naming the field and index. */
async function checkLinks(db: Db, orgId: string, monitorIds?: string[], pageIds?: string[]): Promise<void> {
  if (monitorIds) {
    const i = await firstUnknownId(monitorIds, (ids) => existingMonitorIds(db, orgId, ids));
    if (i !== -1) throw errors.field(`monitor_ids.${i}`, "does not name a monitor of this organization");
  }
  if (pageIds) {
    const i = await firstUnknownId(pageIds, (ids) => existingPageIds(db, orgId, ids));
    if (i !== -1)
      throw errors.field(`status_page_ids.${i}`, "does not name a status page of this organization");
  }
}
