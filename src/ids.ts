/**
 * Opaque, prefixed, time-sortable identifiers (`usr_01J…`). The body is a ULID, so ids sort by
 * creation time and keyset pagination over `id` follows creation order.
 */
import { monotonicFactory } from "ulid";

export type IdPrefix =
  | "org"
  | "usr"
  | "key"
  | "tok"
  | "team"
  | "eml"
  | "alt"
  | "inc"
  | "upd"
  | "sch"
  | "ovr"
  | "pol"
  | "chn"
  | "mon"
  | "spg"
  | "rpl"
  | "evt"
  | "stp"
  | "dlv"
  | "csm";

const ulid = monotonicFactory();

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/**
 * The index of the first of `ids` that `existing` does not return, or -1. `existing` is asked
 * once, with each id once (a repository's "which of these ids exist in the org").
 */
export async function firstUnknownId(
  ids: string[],
  existing: (unique: string[]) => Promise<string[]>,
): Promise<number> {
  const found = new Set(await existing([...new Set(ids)]));
  return ids.findIndex((id) => !found.has(id));
}
