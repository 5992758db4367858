/** Organizations: creation with their owner, rename, plan and slug, settings, ownership transfer. */
import { AppError, errors } from "../errors.ts";
import { isEmail } from "../http/schema.ts";
import { firstUnknownId, newId } from "../ids.ts";
import { findChannels } from "../notifications/channels.repository.ts";
import { SCOPES } from "./access.ts";
import { insertApiKey } from "./api-keys.service.ts";
import type { AccountsContext } from "./context.ts";
import { insertIngestToken } from "./ingest-tokens.service.ts";
import type { OrgTable } from "./org.table.ts";
import { isSlug, type Plan, toOrganization } from "./org.ts";
import {
  countOrgs,
  findOrgById,
  findOrgBySlug,
  findOrgWithSeats,
  insertOrg,
  listOrgs,
  seatCounts,
  updateOrg,
  updateSettingsIfVersion,
} from "./orgs.repository.ts";
import { parseSettings, type Settings, type SettingsInput, withDefaults } from "./settings.ts";
import { newUserRow, normalizeEmail, toUser } from "./user.ts";
import { findOwner, findUser, insertUser, updateUser } from "./users.repository.ts";
import { type InviteService, withTeams } from "./users.service.ts";

export interface NewOrg {
  name: string;
  slug: string;
  ownerEmail: string;
  plan?: Plan;
}

export class OrgService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly invites: InviteService,
  ) {}

  /**
   * Creates an org with its owner (invited), an owner-bound key with every scope and an
   * org-wide ingest token, in one transaction. With `onlyIfEmpty` it fails when any org exists.
   */
  async create(input: NewOrg, options: { onlyIfEmpty?: boolean } = {}) {
    if (!isSlug(input.slug)) throw errors.field("slug", "must be 1-40 lowercase letters, digits or dashes");
    if (!input.name.trim()) throw errors.field("name", "must not be empty");
    const email = normalizeEmail(input.ownerEmail);
    if (!isEmail(email)) throw errors.field("owner_email", "must be an email address");
    return this.ctx.store.write(async (tx) => {
      if (options.onlyIfEmpty && (await countOrgs(tx)) > 0) {
        throw new AppError("conflict", "The database already has an organization.");
      }
      if (await findOrgBySlug(tx, input.slug))
        throw new AppError("conflict", `The slug '${input.slug}' is taken.`);
      const now = Date.now();
      const org: OrgTable = {
        id: newId("org"),
        name: input.name.trim(),
        slug: input.slug,
        plan: input.plan ?? "enterprise",
        settings: JSON.stringify(withDefaults({})),
        settings_version: 1,
        created_at: now,
        updated_at: now,
      };
      await insertOrg(tx, org);
      const owner = newUserRow({ orgId: org.id, email, name: "", role: "owner", now });
      await insertUser(tx, owner);
      await this.invites.issue(tx, org, owner, now);
      const apiKey = await insertApiKey(
        tx,
        org.id,
        { name: "initial admin key", scopes: [...SCOPES], user_id: owner.id },
        now,
      );
      const ingestToken = await insertIngestToken(tx, org, { name: "default" }, now);
      return {
        org: toOrganization(org, 1),
        owner: toUser(owner, []),
        api_key: apiKey,
        ingest_token: ingestToken,
      };
    });
  }

  async get(orgId: string) {
    const org = findOrgWithSeats(this.ctx.store, orgId);
    if (!org) throw errors.notFound("Organization");
    return toOrganization(org, org.seat_count);
  }

  async bySlug(slug: string) {
    const org = await findOrgBySlug(this.ctx.store.read, slug);
    if (!org) throw errors.notFound(`Organization '${slug}'`);
    return this.get(org.id);
  }

  async list() {
    const orgs = await listOrgs(this.ctx.store.read);
    const seats = await seatCounts(
      this.ctx.store.read,
      orgs.map((o) => o.id),
    );
    return orgs.map((o) => toOrganization(o, seats.get(o.id) ?? 0));
  }

  async update(orgId: string, changes: { name?: string; slug?: unknown; plan?: unknown }) {
    for (const field of ["slug", "plan"] as const) {
      if (changes[field] !== undefined) {
        throw new AppError("immutable_field", `'${field}' cannot be changed through the API.`, { field });
      }
    }
    if (changes.name !== undefined) {
      const name = changes.name.trim();
      if (!name) throw errors.field("name", "must not be empty");
      await this.ctx.store.write((tx) => updateOrg(tx, orgId, { name, updated_at: Date.now() }));
    }
    return this.get(orgId);
  }

  async setPlan(slug: string, plan: Plan) {
    const org = await this.requireSlug(slug);
    await this.ctx.store.write((tx) => updateOrg(tx, org.id, { plan, updated_at: Date.now() }));
    return this.get(org.id);
  }

  async setSlug(slug: string, newSlug: string) {
    if (!isSlug(newSlug)) throw errors.field("slug", "must be 1-40 lowercase letters, digits or dashes");
    const org = await this.requireSlug(slug);
    await this.ctx.store.write(async (tx) => {
      if (newSlug !== slug && (await findOrgBySlug(tx, newSlug))) {
        throw new AppError("conflict", `The slug '${newSlug}' is taken.`);
      }
      await updateOrg(tx, org.id, { slug: newSlug, updated_at: Date.now() });
    });
    return this.get(org.id);
  }

  async requireSlug(slug: string): Promise<OrgTable> {
    const org = await findOrgBySlug(this.ctx.store.read, slug);
    if (!org) throw errors.notFound(`Organization '${slug}'`);
    return org;
  }

  async settings(orgId: string): Promise<{ settings: Settings; version: number }> {
    const org = await findOrgById(this.ctx.store.read, orgId);
    if (!org) throw errors.notFound("Organization");
    return {
      settings: parseSettings(org.settings),
      version: org.settings_version,
    };
  }

  /**
   * Replaces the settings document. An `If-Match` header (`*` or absent: no condition) guards
   * lost updates: 412 at once when it names no current version, and again if the settings
   * change between that read and the write.
   */
  async putSettings(orgId: string, input: SettingsInput, ifMatch: string | null) {
    const expectedVersion = await this.expectedSettingsVersion(orgId, ifMatch);
    const settings = withDefaults(input);
    this.checkSettings(settings);
    await this.ctx.store.write(async (tx) => {
      for (const field of ["default_channel_ids", "incident_channel_ids"] as const) {
        const unknown = await firstUnknownId(settings.notifications[field], async (ids) =>
          (await findChannels(tx, orgId, ids)).map((c) => c.id),
        );
        if (unknown !== -1) {
          throw errors.field(
            `notifications.${field}.${unknown}`,
            "does not name a notification channel of this organization",
          );
        }
      }
      const changed = await updateSettingsIfVersion(
        tx,
        orgId,
        JSON.stringify(settings),
        expectedVersion,
        Date.now(),
      );
      if (!changed) {
        throw settingsChanged();
      }
    });
    return this.settings(orgId);
  }

  /** The settings version an `If-Match` header expects, or null for no condition. */
  private async expectedSettingsVersion(orgId: string, ifMatch: string | null): Promise<number | null> {
    if (ifMatch === null || ifMatch.trim() === "*") return null;
    const org = await findOrgById(this.ctx.store.read, orgId);
    const wanted = ifMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
    if (!org || !wanted.includes(settingsEtag(org.settings_version))) throw settingsChanged();
    return org.settings_version;
  }

  private checkSettings(settings: Settings): void {
    const { retention, sso, cloudevents } = settings;
    const maxEvents = this.ctx.config.retention.events_days;
    if (retention.events_days !== null && retention.events_days > maxEvents) {
      throw errors.field("retention.events_days", `may shorten retention only (at most ${maxEvents})`);
    }
    const maxAlerts = this.ctx.config.retention.alerts_days;
    if (retention.alerts_days !== null && maxAlerts > 0 && retention.alerts_days > maxAlerts) {
      throw errors.field("retention.alerts_days", `may shorten retention only (at most ${maxAlerts})`);
    }
    if (sso.oidc) checkIssuer("sso.oidc.issuer", sso.oidc.issuer);
    if (cloudevents.ingest.oidc)
      checkIssuer("cloudevents.ingest.oidc.issuer", cloudevents.ingest.oidc.issuer);
  }

  async transferOwnership(orgId: string, currentOwnerId: string | null, newOwnerId: string) {
    return this.ctx.store.write(async (tx) => {
      const owner = await findOwner(tx, orgId);
      if (!owner || (currentOwnerId !== null && owner.id !== currentOwnerId)) {
        throw new AppError("owner_required", "Only the organization's owner can do this.");
      }
      const next = await findUser(tx, orgId, newOwnerId);
      if (next?.status !== "active") {
        throw errors.field("user_id", "must name an active member of this organization");
      }
      if (next.id === owner.id) throw errors.field("user_id", "already owns the organization");
      await updateUser(tx, owner.id, { role: "admin" });
      await updateUser(tx, next.id, { role: "owner" });
      const [previous, current] = await withTeams(tx, [
        { ...owner, role: "admin" },
        { ...next, role: "owner" },
      ]);
      return { previous_owner: previous, new_owner: current };
    });
  }
}

/** The ETag of a settings document: its version, quoted. */
export function settingsEtag(version: number): string {
  return `"${version}"`;
}

function settingsChanged(): AppError {
  return new AppError("precondition_failed", "The settings changed since you read them; read them again.");
}

/** OIDC issuers must be https, except on loopback hosts (DESIGN §6). */
function checkIssuer(path: string, issuer: string): void {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw errors.field(path, "must be a URL");
  }
  const loopback =
    ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname) || url.hostname.startsWith("127.");
  if (url.protocol !== "https:" && !loopback)
    throw errors.field(path, "must use https (http only on loopback hosts)");
}
