/** `filter`: a comma-separated list of globs on the event type (`*` any run, `?` one character). */
import { errors } from "../errors.ts";

export type TypeFilter = (type: string) => boolean;

const MAX_FILTER_LENGTH = 1024;

export function parseTypeFilter(filter: string | undefined): TypeFilter {
  if (filter === undefined || filter.trim() === "") return () => true;
  if (filter.length > MAX_FILTER_LENGTH)
    throw errors.field("filter", `must be at most ${MAX_FILTER_LENGTH} characters`);
  const globs = filter.split(",").map((g) => g.trim());
  if (globs.some((g) => g === "")) throw errors.field("filter", "must not contain an empty glob");
  const pattern = new RegExp(`^(?:${globs.map(globToRegExp).join("|")})$`);
  return (type) => pattern.test(type);
}

/** A glob as a regular expression source: everything but `*` and `?` matches itself. */
export function globToRegExp(glob: string): string {
  let source = "";
  for (const char of glob) {
    if (char === "*") source += ".*";
    else if (char === "?") source += ".";
    else source += char.replace(/[.+^${}()|[\]\\/-]/g, "\\$&");
  }
  return source;
}
