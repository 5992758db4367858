/** The Organization as the API shows it. */
import { Type as T } from "@sinclair/typebox";
import { Timestamp } from "../http/schema.ts";
import { iso } from "../time.ts";
import type { OrgTable } from "./org.table.ts";

export const PLANS = ["free", "pro", "enterprise"] as const;
export type Plan = (typeof PLANS)[number];

export const Organization = T.Object({
  id: T.String(),
  name: T.String(),
  slug: T.String(),
  plan: T.Union(PLANS.map((p) => T.Literal(p))),
  seat_count: T.Integer({ description: "Users who are not suspended." }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const SLUG_PATTERN = "^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$";

export function isSlug(value: string): boolean {
  return new RegExp(SLUG_PATTERN).test(value);
}

export function toOrganization(row: OrgTable, seatCount: number) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    plan: row.plan,
    seat_count: seatCount,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
