/** Ingest tokens: the credential of the CloudEvents ingest endpoint, optionally bound to a channel. */
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import { checkBindableChannel } from "../notifications/channels.service.ts";
import type { AccountsContext } from "./context.ts";
import type { IngestCredentials } from "./ingest-credentials.ts";
import type { IngestTokenTable } from "./ingest-token.table.ts";
import { toIngestToken } from "./ingest-token.ts";
import {
  findIngestToken,
  insertIngestTokenRow,
  listIngestTokens,
  revokeIngestToken,
} from "./ingest-tokens.repository.ts";
import { findOrgById } from "./orgs.repository.ts";
import { newIngestToken } from "./secrets.ts";

/** Creates a token inside the caller's transaction; the clear token is returned once. */
export async function insertIngestToken(
  db: Db,
  org: { id: string; slug: string },
  input: { name: string; channel_id?: string | null },
  now = Date.now(),
) {
  if (input.channel_id) await checkBindableChannel(db, org.id, input.channel_id);
  const secret = newIngestToken(org.slug);
  const row: IngestTokenTable = {
    id: newId("tok"),
    org_id: org.id,
    name: input.name,
    prefix: secret.prefix,
    token_hash: secret.hash,
    channel_id: input.channel_id ?? null,
    revoked_at: null,
    created_at: now,
  };
  await insertIngestTokenRow(db, row);
  return { ...toIngestToken(row), token: secret.token };
}

export class IngestTokenService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly credentials: IngestCredentials,
  ) {}

  async list(orgId: string, limit: number, cursor: (string | number)[] | null) {
    const rows = await listIngestTokens(
      this.ctx.store.read,
      orgId,
      cursor ? String(cursor[0]) : undefined,
      limit,
    );
    return toPage(rows, limit, "ingest_tokens", (r) => [r.id], toIngestToken);
  }

  async create(orgId: string, input: { name: string; channel_id?: string | null }) {
    return this.ctx.store.write(async (tx) => {
      const org = await findOrgById(tx, orgId);
      if (!org) throw errors.notFound("Organization");
      return insertIngestToken(tx, org, input);
    });
  }

  async revoke(orgId: string, id: string): Promise<void> {
    await this.ctx.store.write(async (tx) => {
      if (!(await findIngestToken(tx, orgId, id))) throw errors.notFound("Ingest token");
      await revokeIngestToken(tx, id, Date.now());
      this.credentials.forgetAfterCommit();
    });
  }
}
