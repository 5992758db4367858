/** Status pages as the API shows them. */
import { Type as T } from "@sinclair/typebox";
import { SLUG_PATTERN } from "../accounts/org.ts";
import { Timestamp } from "../http/schema.ts";
import { iso } from "../time.ts";
import type { StatusPageTable } from "./status-page.table.ts";

export const StatusPage = T.Object({
  id: T.String(),
  slug: T.String(),
  title: T.String(),
  description: T.String(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const Slug = T.String({
  pattern: SLUG_PATTERN,
  description: "1-40 lowercase letters, digits or dashes.",
});

export function toStatusPage(row: StatusPageTable) {
  return {
    id: row.id,
    slug: row.slug,
    title: row.title,
    description: row.description,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
