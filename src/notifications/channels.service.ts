/** Notification channels: CRUD, type-specific config, and the webhook signing secret. */
import { randomBytes } from "node:crypto";
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { AccountsContext } from "../accounts/context.ts";
import { findOrgById } from "../accounts/orgs.repository.ts";
import { parseSettings } from "../accounts/settings.ts";
import type { Db } from "../db/store.ts";
import { AppError, errors, requireName } from "../errors.ts";
import { policiesTargeting } from "../escalation/policies.repository.ts";
import { toPage } from "../http/pagination.ts";
import { check } from "../http/route.ts";
import { newId } from "../ids.ts";
import type { ChannelType, NotificationChannelTable } from "./channel.table.ts";
import { CHANNEL_TYPES, configSchema, toChannel, toDelivery } from "./channel.ts";
import {
  deleteChannel,
  findChannel,
  insertChannel,
  listChannels,
  liveCredentialsBoundTo,
  updateChannel,
} from "./channels.repository.ts";
import { listDeliveries } from "./deliveries.repository.ts";

const checkers = Object.fromEntries(
  CHANNEL_TYPES.map((type) => [type, TypeCompiler.Compile(configSchema(type) as TSchema)]),
) as Record<ChannelType, ReturnType<typeof TypeCompiler.Compile>>;

/** The stored config (defaults applied, the webhook secret taken out) and the secret. */
function splitConfig(type: ChannelType, raw: Record<string, unknown>) {
  const config = check(
    checkers[type],
    Value.Default(configSchema(type) as TSchema, structuredClone(raw)),
    "config",
  ) as Record<string, unknown>;
  if (type !== "webhook") return { config, secret: null, generated: false };
  const { secret, ...rest } = config as { secret?: string };
  return {
    config: rest,
    secret: secret ?? randomBytes(32).toString("base64url"),
    generated: secret === undefined,
  };
}

/** A key or token may be bound only to a cloudevents channel of its own org (400 otherwise). */
export async function checkBindableChannel(db: Db, orgId: string, channelId: string): Promise<void> {
  const channel = await findChannel(db, orgId, channelId);
  if (channel?.type !== "cloudevents") {
    throw errors.field("channel_id", "does not name a cloudevents channel of this organization");
  }
}

export interface ChannelCreate {
  name: string;
  type: ChannelType;
  config: Record<string, unknown>;
  trusted?: boolean;
  enabled?: boolean;
}

export class ChannelService {
  constructor(private readonly ctx: AccountsContext) {}

  async list(orgId: string, limit: number, cursor: (string | number)[] | null) {
    const rows = await listChannels(
      this.ctx.store.read,
      orgId,
      cursor ? String(cursor[0]) : undefined,
      limit,
    );
    return toPage(rows, limit, "channels", (r) => [r.id], toChannel);
  }

  /** A channel's deliveries, newest first: sent, pending (with their last error) and dead. */
  async deliveries(
    orgId: string,
    id: string,
    filter: { status?: "pending" | "sent" | "dead"; limit: number; cursor: (string | number)[] | null },
  ) {
    const db = this.ctx.store.read;
    if (!(await findChannel(db, orgId, id))) throw errors.notFound("Notification channel");
    const rows = await listDeliveries(db, id, {
      status: filter.status,
      beforeId: filter.cursor ? String(filter.cursor[0]) : undefined,
      limit: filter.limit,
    });
    return toPage(rows, filter.limit, `deliveries:${id}`, (r) => [r.id], toDelivery);
  }

  async get(orgId: string, id: string) {
    const row = await findChannel(this.ctx.store.read, orgId, id);
    if (!row) throw errors.notFound("Notification channel");
    return toChannel(row);
  }

  async create(orgId: string, input: ChannelCreate) {
    const { config, secret, generated } = splitConfig(input.type, input.config);
    const now = Date.now();
    const row: NotificationChannelTable = {
      id: newId("chn"),
      org_id: orgId,
      name: requireName(input.name),
      type: input.type,
      config: JSON.stringify(config),
      secret,
      trusted: input.trusted ? 1 : 0,
      enabled: input.enabled === false ? 0 : 1,
      created_at: now,
      updated_at: now,
    };
    await this.ctx.store.write((tx) => insertChannel(tx, row));
    return generated ? { ...toChannel(row), secret: secret as string } : toChannel(row);
  }

  /** `config`, when given, replaces the whole config; a webhook keeps its secret unless a new one is given. */
  async update(
    orgId: string,
    id: string,
    patch: { name?: string; config?: Record<string, unknown>; trusted?: boolean; enabled?: boolean },
  ) {
    await this.ctx.store.write(async (tx) => {
      const row = await findChannel(tx, orgId, id);
      if (!row) throw errors.notFound("Notification channel");
      const changes: Partial<NotificationChannelTable> = { updated_at: Date.now() };
      if (patch.name !== undefined) changes.name = requireName(patch.name);
      if (patch.trusted !== undefined) changes.trusted = patch.trusted ? 1 : 0;
      if (patch.enabled !== undefined) changes.enabled = patch.enabled ? 1 : 0;
      if (patch.config !== undefined) {
        const given = "secret" in patch.config;
        const { config, secret } = splitConfig(row.type, patch.config);
        changes.config = JSON.stringify(config);
        if (given) changes.secret = secret;
      }
      await updateChannel(tx, id, changes);
    });
    return this.get(orgId, id);
  }

  /** A channel still named by a policy, the settings or a live ingest token is 409. */
  async remove(orgId: string, id: string) {
    await this.ctx.store.write(async (tx) => {
      const row = await findChannel(tx, orgId, id);
      if (!row) throw errors.notFound("Notification channel");
      const policyIds = await policiesTargeting(tx, "channel", id);
      const tokenIds = await liveCredentialsBoundTo(tx, "ingest_tokens", id);
      const keyIds = await liveCredentialsBoundTo(tx, "api_keys", id);
      const org = await findOrgById(tx, orgId);
      const notifications = org ? parseSettings(org.settings).notifications : null;
      const inSettings = [
        ...(notifications?.default_channel_ids ?? []),
        ...(notifications?.incident_channel_ids ?? []),
      ].includes(id);
      if (policyIds.length > 0 || inSettings || tokenIds.length > 0 || keyIds.length > 0) {
        throw new AppError(
          "conflict",
          "This channel is still in use; take it out of policies and settings and revoke its ingest tokens and API keys first.",
          { policy_ids: policyIds, in_settings: inSettings, ingest_token_ids: tokenIds, api_key_ids: keyIds },
        );
      }
      await deleteChannel(tx, id);
    });
  }
}
