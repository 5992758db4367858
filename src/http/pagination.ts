/**
 * Keyset pagination. A cursor is the base64url of `[sortValue, id]` of the last row returned,
 * bound to the list it came from, so a cursor from another list (or a mangled one) is 400.
 */
import { errors } from "../errors.ts";

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}

export function encodeCursor(list: string, position: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify([list, ...position])).toString("base64url");
}

export function decodeCursor(list: string, cursor: string | undefined): (string | number)[] | null {
  if (cursor === undefined) return null;
  try {
    const bytes = Buffer.from(cursor, "base64url");
    // The decoder skips characters outside the alphabet and stray trailing ones: only the exact
    // text we issued is this cursor.
    if (bytes.toString("base64url") !== cursor) throw errors.invalidCursor();
    const parsed: unknown = JSON.parse(bytes.toString("utf8"));
    if (!Array.isArray(parsed) || parsed[0] !== list || parsed.length < 2) throw errors.invalidCursor();
    const rest = parsed.slice(1);
    if (!rest.every((v) => typeof v === "string" || typeof v === "number")) throw errors.invalidCursor();
    return rest;
  } catch {
    throw errors.invalidCursor();
  }
}

/**
 * Builds a page from rows fetched with `limit + 1`: the extra row only tells whether more follow.
 */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  list: string,
  position: (row: R) => (string | number)[],
  map: (row: R) => T,
): Page<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(map),
    next_cursor: hasMore && last !== undefined ? encodeCursor(list, position(last)) : null,
    has_more: hasMore,
  };
}
