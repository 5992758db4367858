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
  | "rpl";

const ulid = monotonicFactory();

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** Whether `value` looks like an id with the given prefix (used to answer 404 early). */
export function hasPrefix(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && value.length === prefix.length + 27;
}
