/**
 * Structured logs: one JSON object per line (or a short readable line on a TTY). Callers pass
 * fields, never preformatted secrets; `redactPath` strips tokens that travel in URLs.
 */
import { writeSync } from "node:fs";

export type Level = "debug" | "info" | "warn" | "error";
const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  /** Whether a line at `level` would be written (to skip building fields that would be dropped). */
  enabled(level: Level): boolean;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Lines to stdout, gathered and written once per turn of the event loop: under load one write
 * per request line costs a third of the request rate. Pending lines are flushed on exit.
 */
function bufferedStdout(): (line: string) => void {
  let pending: string[] = [];
  const take = () => {
    const chunk = pending.join("");
    pending = [];
    return chunk;
  };
  const flush = () => {
    if (pending.length > 0) process.stdout.write(take());
  };
  process.on("exit", () => {
    if (pending.length === 0) return;
    try {
      writeSync(1, take());
    } catch {
      // stdout is gone or full at exit: nothing more can be done.
    }
  });
  return (line) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push(line);
  };
}

export function createLogger(
  level: Level,
  format: "json" | "pretty",
  write: (line: string) => void = bufferedStdout(),
): Logger {
  const emit = (at: Level, msg: string, fields?: Record<string, unknown>) => {
    if (rank[at] < rank[level]) return;
    const time = new Date().toISOString();
    if (format === "json") {
      write(`${JSON.stringify({ time, level: at, msg, ...fields })}\n`);
    } else {
      const extra = fields
        ? Object.entries(fields)
            .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
            .join(" ")
        : "";
      write(`${time} ${at.toUpperCase().padEnd(5)} ${msg}${extra ? ` ${extra}` : ""}\n`);
    }
  };
  return {
    enabled: (at) => rank[at] >= rank[level],
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
  };
}

/** Path segments that follow these segments are credentials (tokens, integration keys). */
const SECRET_AFTER = new Set(["ingest", "ping", "alertmanager", "feeds"]);
const SECRET_QUERY = /^(token|key|secret|api_key|access_token)$/i;

export function redactPath(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf("?");
  const path = q === -1 ? pathAndQuery : pathAndQuery.slice(0, q);
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    if (SECRET_AFTER.has(segments[i - 1] ?? "") && segments[i]) segments[i] = "[redacted]";
  }
  let out = segments.join("/");
  if (q !== -1) {
    const params = new URLSearchParams(pathAndQuery.slice(q + 1));
    for (const key of [...params.keys()]) if (SECRET_QUERY.test(key)) params.set(key, "[redacted]");
    out += `?${params.toString()}`;
  }
  return out;
}
