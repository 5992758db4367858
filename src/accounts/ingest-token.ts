/** Ingest tokens: the credential of the CloudEvents ingest endpoint, optionally bound to a channel. */
import { Type as T } from "@sinclair/typebox";
import { Timestamp } from "../http/schema.ts";
import { iso, isoOrNull } from "../time.ts";
import type { IngestTokenTable } from "./ingest-token.table.ts";

export const IngestToken = T.Object({
  id: T.String(),
  name: T.String(),
  prefix: T.String(),
  channel_id: T.Union([T.String(), T.Null()]),
  created_at: Timestamp(),
  revoked_at: T.Union([Timestamp(), T.Null()]),
});

export const IngestTokenWithSecret = T.Composite([
  IngestToken,
  T.Object({ token: T.String({ description: "Shown once." }) }),
]);

export function toIngestToken(row: IngestTokenTable) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    channel_id: row.channel_id,
    created_at: iso(row.created_at),
    revoked_at: isoOrNull(row.revoked_at),
  };
}
