/**
 * Configuration: defaults < file (TOML or JSON) < environment (`SVC_*`) < flags. This module is
 * the only reader of `process.env`; everything else receives the frozen Config it returns.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Static, Type as T, type TObject, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parse as parseToml } from "smol-toml";

const Limits = T.Object(
  {
    poll_per_minute: T.Integer({ minimum: 1, default: 60 }),
    streams_per_org: T.Integer({ minimum: 1, default: 10 }),
    replies_per_minute: T.Integer({ minimum: 1, default: 60 }),
    ingest_events_per_second: T.Integer({ minimum: 0, default: 0 }),
    batch_max_events: T.Integer({ minimum: 1, default: 256 }),
    max_event_bytes: T.Integer({ minimum: 1024, default: 1024 * 1024 }),
    max_request_bytes: T.Integer({ minimum: 1024, default: 16 * 1024 * 1024 }),
  },
  { additionalProperties: false, default: {} },
);

const Retention = T.Object(
  {
    events_days: T.Integer({ minimum: 1, default: 30 }),
    replies_days: T.Integer({ minimum: 1, default: 365 }),
    alerts_days: T.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false, default: {} },
);

const Smtp = T.Object(
  {
    host: T.Optional(T.String({ minLength: 1 })),
    port: T.Integer({ minimum: 1, maximum: 65535, default: 587 }),
    secure: T.Boolean({ default: false }),
    user: T.Optional(T.String()),
    pass: T.Optional(T.String()),
    from: T.String({ minLength: 3, default: "svc <svc@localhost>" }),
  },
  { additionalProperties: false, default: {} },
);

const Log = T.Object(
  {
    level: T.Union([T.Literal("debug"), T.Literal("info"), T.Literal("warn"), T.Literal("error")], {
      default: "info",
    }),
    format: T.Optional(T.Union([T.Literal("json"), T.Literal("pretty")])),
  },
  { additionalProperties: false, default: {} },
);

export const ConfigSchema = T.Object(
  {
    data_dir: T.String({ minLength: 1, default: "./data" }),
    listen: T.String({ pattern: "^[^\\s]+:\\d{1,5}$", default: "127.0.0.1:8080" }),
    base_url: T.Optional(T.String({ pattern: "^https?://" })),
    edition: T.Union([T.Literal("oss"), T.Literal("cloud")], { default: "oss" }),
    durability: T.Union([T.Literal("full"), T.Literal("process")], { default: "full" }),
    limits: Limits,
    retention: Retention,
    smtp: Smtp,
    log: Log,
  },
  { additionalProperties: false },
);

type ConfigShape = Static<typeof ConfigSchema>;

export interface Config extends Omit<ConfigShape, "base_url" | "log"> {
  /** Always set: derived from `listen` when not configured. */
  base_url: string;
  /** True when `base_url` was not configured but derived from `listen`. */
  base_url_derived: boolean;
  log: { level: ConfigShape["log"]["level"]; format: "json" | "pretty" };
  /** Host and port split from `listen`. */
  host: string;
  port: number;
}

/** The top-level keys that have flags of their own (`--data-dir`, `--listen`, …). */
export interface ConfigFlags {
  config?: string;
  dataDir?: string;
  listen?: string;
  baseUrl?: string;
  edition?: string;
}

export class ConfigError extends Error {}

export function loadConfig(
  flags: ConfigFlags = {},
  env: Record<string, string | undefined> = process.env,
  isTty = Boolean(process.stdout.isTTY),
): Config {
  const merged: Record<string, unknown> = {};
  const file = flags.config ?? env.SVC_CONFIG;
  if (file) deepMerge(merged, readConfigFile(file));
  deepMerge(merged, fromEnv(env));
  const flagValues: Record<string, unknown> = {
    data_dir: flags.dataDir,
    listen: flags.listen,
    base_url: flags.baseUrl,
    edition: flags.edition,
  };
  for (const [key, value] of Object.entries(flagValues)) if (value !== undefined) merged[key] = value;

  const withDefaults = Value.Default(ConfigSchema, merged) as ConfigShape;
  const problems = [...Value.Errors(ConfigSchema, withDefaults)].map(
    (e) => `${e.path.slice(1).replaceAll("/", ".") || "config"}: ${e.message}`,
  );
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);

  const [host, port] = splitListen(withDefaults.listen);
  const config: Config = {
    ...withDefaults,
    data_dir: resolve(withDefaults.data_dir),
    base_url: (withDefaults.base_url ?? `http://${withDefaults.listen}`).replace(/\/+$/, ""),
    base_url_derived: withDefaults.base_url === undefined,
    log: { level: withDefaults.log.level, format: withDefaults.log.format ?? (isTty ? "pretty" : "json") },
    host,
    port,
  };
  return deepFreeze(config);
}

function readConfigFile(path: string): Record<string, unknown> {
  if (!existsSync(path)) throw new ConfigError(`config file not found: ${path}`);
  const text = readFileSync(path, "utf8");
  try {
    return (path.endsWith(".json") ? JSON.parse(text) : parseToml(text)) as Record<string, unknown>;
  } catch (error) {
    // smol-toml appends a multi-line code frame; the CLI reports errors in one line.
    const problem = error as Error & { line?: unknown; column?: unknown };
    const where = typeof problem.line === "number" ? ` (line ${problem.line}, column ${problem.column})` : "";
    throw new ConfigError(
      `config file ${path} cannot be parsed: ${problem.message.split("\n")[0]?.trim()}${where}`,
    );
  }
}

/** Maps `SVC_LIMITS_POLL_PER_MINUTE` to `limits.poll_per_minute` by walking the schema's keys. */
function fromEnv(env: Record<string, string | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, schema] of leafKeys(ConfigSchema)) {
    const name = `SVC_${path.join("_").toUpperCase()}`;
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    let value: unknown = raw;
    if (schema.type === "integer" || schema.type === "number") {
      value = Number(raw);
      if (!Number.isFinite(value)) throw new ConfigError(`${name} must be a number, got '${raw}'`);
    } else if (schema.type === "boolean") {
      if (!["true", "false", "1", "0"].includes(raw)) throw new ConfigError(`${name} must be true or false`);
      value = raw === "true" || raw === "1";
    }
    let node = out;
    for (const key of path.slice(0, -1)) {
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
    }
    node[path[path.length - 1] as string] = value;
  }
  return out;
}

function leafKeys(schema: TObject, prefix: string[] = []): [string[], TSchema][] {
  return Object.entries(schema.properties).flatMap(([key, child]) =>
    child.type === "object" ? leafKeys(child as TObject, [...prefix, key]) : [[[...prefix, key], child]],
  ) as [string[], TSchema][];
}

function splitListen(listen: string): [string, number] {
  const at = listen.lastIndexOf(":");
  const port = Number(listen.slice(at + 1));
  if (port > 65535) throw new ConfigError(`listen: port ${port} is out of range`);
  return [listen.slice(0, at).replace(/^\[|\]$/g, ""), port];
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(value) && isPlainObject(existing)) deepMerge(existing, value);
    else target[key] = isPlainObject(value) ? { ...value } : value;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function deepFreeze<T>(value: T): T {
  if (isPlainObject(value)) for (const child of Object.values(value)) deepFreeze(child);
  return Object.freeze(value);
}
