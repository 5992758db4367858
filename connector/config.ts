/**
 * The connector's configuration (DESIGN §8): flags, the svc environment (`SVC_URL`,
 * `SVC_API_KEY`, `SVC_INGEST_TOKEN`, `SVC_LOG_LEVEL`, `SVC_LOG_FORMAT`) and the Knative
 * SinkBinding contract (`K_SINK`, `K_CE_OVERRIDES`, `K_CA_CERTS`, `K_SINK_TIMEOUT`). A flag wins
 * over its variable. `resolveConfig` never throws: it returns every problem, one line each.
 */
import type { Level } from "../src/log.ts";
import { checkStateFile } from "./state.ts";

export interface ConnectorFlags {
  url?: string;
  apiKey?: string;
  sink?: string;
  filter?: string;
  ingestToken?: string;
  stateFile?: string;
  start?: string;
  structured?: boolean;
  concurrency?: string;
  healthListen?: string;
}

export interface ConnectorConfig {
  /** svc's base URL, without a trailing slash. */
  url: string;
  apiKey: string;
  sink: string;
  filter: string | undefined;
  ingestToken: string | undefined;
  stateFile: string | undefined;
  start: "now" | "earliest";
  structured: boolean;
  concurrency: number;
  healthListen: { hostname: string; port: number } | undefined;
  /** `K_CE_OVERRIDES` extensions, set on every event just before it is sent. */
  overrides: Record<string, string>;
  /** `K_CA_CERTS`: PEM certificates trusted for TLS to the sink. */
  caCerts: string | undefined;
  sinkTimeoutMs: number;
  log: { level: Level; format: "json" | "pretty" };
}

export type Resolved = { ok: true; config: ConnectorConfig } | { ok: false; problems: string[] };

export const DEFAULT_CONCURRENCY = 16;
export const DEFAULT_SINK_TIMEOUT_SECONDS = 30;
const MAX_CONCURRENCY = 1024;

/** The attributes a CloudEvent defines itself: `K_CE_OVERRIDES` may not replace them. */
export const CORE_ATTRIBUTES = new Set([
  "specversion",
  "id",
  "source",
  "type",
  "subject",
  "time",
  "datacontenttype",
  "dataschema",
  "data",
  "data_base64",
]);
const EXTENSION_NAME = /^[a-z0-9]+$/;

export function resolveConfig(
  flags: ConnectorFlags,
  env: Record<string, string | undefined> = process.env,
  isTty = Boolean(process.stdout.isTTY),
): Resolved {
  const problems: string[] = [];
  const pick = (flag: string | undefined, name: string) =>
    flag !== undefined && flag !== ""
      ? flag
      : env[name] !== undefined && env[name] !== ""
        ? env[name]
        : undefined;

  const url = httpUrl(pick(flags.url, "SVC_URL"), "--url (or SVC_URL)", problems);
  const apiKey = pick(flags.apiKey, "SVC_API_KEY");
  if (apiKey === undefined)
    problems.push("--api-key (or SVC_API_KEY) is required: an API key with scope events");
  else if (/\s/.test(apiKey)) problems.push("--api-key (or SVC_API_KEY) must not contain whitespace");
  const sink = httpUrl(pick(flags.sink, "K_SINK"), "--sink (or K_SINK)", problems);

  const filter = flags.filter?.trim() || undefined;
  if (flags.filter !== undefined && filter === undefined) problems.push("--filter must not be empty");
  if (filter !== undefined && filter.length > 1024) problems.push("--filter is longer than 1024 characters");
  if (filter?.split(",").some((glob) => glob.trim() === ""))
    problems.push("--filter must not contain an empty glob");

  const ingestToken = pick(flags.ingestToken, "SVC_INGEST_TOKEN");
  if (ingestToken !== undefined && !/^[A-Za-z0-9._~-]+$/.test(ingestToken)) {
    problems.push("--ingest-token (or SVC_INGEST_TOKEN) must be a bare token (letters, digits, . _ ~ -)");
  }

  const stateFile = flags.stateFile?.trim() || undefined;
  if (flags.stateFile !== undefined && stateFile === undefined)
    problems.push("--state-file must not be empty");
  if (stateFile !== undefined) {
    const problem = checkStateFile(stateFile);
    if (problem) problems.push(problem);
  }

  const start = flags.start ?? "now";
  if (start !== "now" && start !== "earliest")
    problems.push(`--start must be now or earliest, got '${start}'`);

  let concurrency = DEFAULT_CONCURRENCY;
  if (flags.concurrency !== undefined) {
    concurrency = Number(flags.concurrency);
    if (!/^\d+$/.test(flags.concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      problems.push(
        `--concurrency must be an integer from 1 to ${MAX_CONCURRENCY}, got '${flags.concurrency}'`,
      );
    }
  }

  let healthListen: ConnectorConfig["healthListen"];
  if (flags.healthListen !== undefined) {
    healthListen = hostPort(flags.healthListen);
    if (!healthListen) problems.push(`--health-listen must be host:port, got '${flags.healthListen}'`);
  }

  const overrides = parseOverrides(env.K_CE_OVERRIDES, problems);

  const caCerts = env.K_CA_CERTS?.trim() ? env.K_CA_CERTS : undefined;
  if (
    caCerts !== undefined &&
    !/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(caCerts)
  ) {
    problems.push("K_CA_CERTS must hold one or more PEM certificates (-----BEGIN CERTIFICATE----- …)");
  }

  let sinkTimeoutMs = DEFAULT_SINK_TIMEOUT_SECONDS * 1000;
  const timeout = env.K_SINK_TIMEOUT?.trim();
  if (timeout) {
    const seconds = Number(timeout);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600) {
      problems.push(`K_SINK_TIMEOUT must be a number of seconds above 0 and at most 3600, got '${timeout}'`);
    } else {
      sinkTimeoutMs = Math.round(seconds * 1000);
    }
  }

  const level = (env.SVC_LOG_LEVEL?.trim() || "info") as Level;
  if (!["debug", "info", "warn", "error"].includes(level)) {
    problems.push(`SVC_LOG_LEVEL must be debug, info, warn or error, got '${level}'`);
  }
  const format = env.SVC_LOG_FORMAT?.trim() || (isTty ? "pretty" : "json");
  if (format !== "json" && format !== "pretty") {
    problems.push(`SVC_LOG_FORMAT must be json or pretty, got '${format}'`);
  }

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: {
      url: (url as string).replace(/\/+$/, ""),
      apiKey: apiKey as string,
      sink: sink as string,
      filter,
      ingestToken,
      stateFile,
      start: start as "now" | "earliest",
      structured: flags.structured === true,
      concurrency,
      healthListen,
      overrides,
      caCerts,
      sinkTimeoutMs,
      log: { level, format: format as "json" | "pretty" },
    },
  };
}

function httpUrl(value: string | undefined, name: string, problems: string[]): string | undefined {
  if (value === undefined) {
    problems.push(`${name} is required`);
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    problems.push(`${name} must be an http(s) URL, got '${value}'`);
    return undefined;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    problems.push(`${name} must be an http(s) URL, got '${value}'`);
    return undefined;
  }
  if (parsed.username || parsed.password) {
    problems.push(`${name} must not carry credentials in the URL`);
    return undefined;
  }
  return value;
}

function hostPort(value: string): { hostname: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(value);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port > 65535) return undefined;
  return { hostname: (match[1] as string).replace(/^\[|\]$/g, ""), port };
}

/**
 * `K_CE_OVERRIDES`: `{"extensions": {"name": "value"}}`. Empty (unset, "", `{}`) means none. Only
 * extensions may be set: a core attribute (`type`, `source`, …) is a problem, as is a name that
 * is not a valid extension name or a value that is not a string.
 */
function parseOverrides(raw: string | undefined, problems: string[]): Record<string, string> {
  if (raw === undefined || raw.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('K_CE_OVERRIDES is not valid JSON (expected {"extensions":{"name":"value"}})');
    return {};
  }
  if (!isObject(parsed)) {
    problems.push('K_CE_OVERRIDES must be a JSON object: {"extensions":{"name":"value"}}');
    return {};
  }
  const out: Record<string, string> = {};
  for (const key of Object.keys(parsed)) {
    if (key !== "extensions")
      problems.push(`K_CE_OVERRIDES: unknown key '${key}' (only "extensions" is allowed)`);
  }
  const extensions = parsed.extensions;
  if (extensions === undefined || extensions === null) return out;
  if (!isObject(extensions)) {
    problems.push("K_CE_OVERRIDES: extensions must be an object of name → string");
    return out;
  }
  for (const [name, value] of Object.entries(extensions)) {
    if (CORE_ATTRIBUTES.has(name)) {
      problems.push(`K_CE_OVERRIDES: '${name}' is a core attribute and cannot be overridden`);
    } else if (!EXTENSION_NAME.test(name)) {
      problems.push(`K_CE_OVERRIDES: '${name}' is not a valid extension name (lower-case a-z and 0-9 only)`);
    } else if (typeof value !== "string") {
      problems.push(`K_CE_OVERRIDES: extension '${name}' must be a string`);
    } else {
      out[name] = value;
    }
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
