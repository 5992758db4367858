/**
 * Fuzzing CloudEvents ingest over HTTP against one real `svc serve` (DESIGN §4, §7): valid
 * events in structured, batch and binary mode are mutated at random (attributes deleted,
 * renamed or given odd values, bytes flipped, bodies truncated or wrapped in batches, content
 * types and `ce-` headers changed) and sent 32 at a time. Whatever arrives, the server never
 * answers 5xx, every 4xx carries the error envelope with the status its code implies, every
 * 202 counts the events sent, unmutated events are always accepted, nothing invalid reaches the
 * log, the server stays up and its memory stays bounded.
 *
 * Reproduce a run with FUZZ_SEED=<seed printed on failure>; FUZZ_CASES changes the count.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { type Client, TestServer } from "../support/harness.ts";

const CASES = Number(process.env.FUZZ_CASES ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CONCURRENCY = 32;
const MAX_REQUEST_BYTES = 65_536;
const STRUCTURED = "application/cloudevents+json";
const BATCH = "application/cloudevents-batch+json";
const RSS_LIMIT_MB = 300;
const RSS_GROWTH_MB = 150;
const encoder = new TextEncoder();

/** The status of each error code (DESIGN §4). */
const STATUS_OF: Record<string, number> = {
  validation_failed: 400,
  malformed_cloudevent: 400,
  unauthenticated: 401,
  batch_too_large: 413,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
};

let server: TestServer;
let api: Client;
let url: string;

beforeAll(async () => {
  server = await TestServer.start({
    init: true,
    env: {
      SVC_LIMITS_MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES),
      SVC_LIMITS_POLL_PER_MINUTE: "1000000",
    },
  });
  api = server.client();
  url = `${server.base}/api/v1/cloudevents/ingest/${server.init?.ingest_token.token}`;
}, 30_000);
afterAll(async () => {
  await server?.dispose();
});

// ---------------------------------------------------------------------------------------------
// a seeded PRNG: case i of seed s is always the same request

class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 1;
  }
  /** mulberry32 */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  /** Whole code points of `alphabet` (no lone surrogates). */
  string(alphabet: string, min: number, max: number): string {
    const chars = Array.from(alphabet);
    let out = "";
    const n = min + this.int(max - min + 1);
    for (let i = 0; i < n; i++) out += chars[this.int(chars.length)];
    return out;
  }
}

const LOWER = "abcdefghijklmnopqrstuvwxyz0123456789";
const PRINTABLE = `${LOWER}ABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:/?#[]@!$&'()*+,;= ~"{}<>\\|^\``;
const UNICODE = `${PRINTABLE}éüß✓€😀\u0000\u0001\u001f\u007f\u200b\ufeff`;

const ATTRIBUTES = [
  "specversion",
  "id",
  "source",
  "type",
  "datacontenttype",
  "dataschema",
  "subject",
  "time",
];
const ODD_NAMES = [
  "MyExt",
  "my_ext",
  "my-ext",
  "my.ext",
  "",
  " ",
  "0",
  "123",
  "data",
  "data_base64",
  "__proto__",
  "constructor",
  "toString",
  "é",
  "x".repeat(300),
  "specversion",
  "ID",
  "Type",
];
const CONTENT_TYPES = [
  STRUCTURED,
  BATCH,
  `${STRUCTURED}; charset=utf-8`,
  "APPLICATION/CLOUDEVENTS+JSON",
  " application/cloudevents-batch+json ;charset=UTF-8",
  "application/cloudevents+xml",
  "application/cloudevents",
  "application/cloudevents+jsonx",
  "application/cloudevents-batch+json+json",
  "application/json",
  "application/json; charset=latin1",
  "text/json",
  "application/vnd.example+json",
  "text/plain",
  "text/plain; charset=utf-8",
  "application/octet-stream",
  "multipart/form-data; boundary=x",
  "application/x-www-form-urlencoded",
  ";",
  ";;;",
  "",
  "*/*",
];

function oddValue(rng: Rng): unknown {
  switch (rng.int(22)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 1e308, -0, Number.MAX_SAFE_INTEGER]);
    case 3:
      return "";
    case 4:
      return rng.pick([" ", "\t", "\n", "\u0000"]);
    case 5:
      return rng.pick(["%", "%ZZ", "%C3%28", "%FF", "%41%42", "%2525"]);
    case 6:
      return "\ud800";
    case 7:
      return "x".repeat(rng.int(20_000));
    case 8:
      return [];
    case 9:
      return {};
    case 10:
      return rng.pick(["1.0", "0.3", "1.0 ", "1"]);
    case 11:
      return rng.pick([
        "2024-02-30T00:00:00Z",
        "2024-13-01T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T23:59:60Z",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00+25:00",
        "2024-01-01t00:00:00.123456789z",
        "0000-01-01T00:00:00Z",
      ]);
    case 12: {
      const depth = 1 + rng.int(3000);
      return JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    }
    case 13:
      return rng.pick(["AAEC", "AAE", "====", "A===", "not base64", "QUJD\n", ""]);
    case 14:
      return rng.pick(["not a uri", "https://", "urn:x", "http://[::1", "/relative"]);
    case 15:
      return { nested: { deep: [1, "two", { three: null }] } };
    default:
      return rng.string(UNICODE, 0, 40);
  }
}

/** Sometimes starts a string with a character that decoders and HTTP like to eat. */
function edgy(rng: Rng, text: string): string {
  return rng.chance(0.15) ? `${rng.pick(["\ufeff", "\u200b", "\u00a0", " ", "\t", "\r\n"])}${text}` : text;
}

function validEvent(rng: Rng, i: number, k: number): Record<string, unknown> {
  const ev: Record<string, unknown> = {
    specversion: "1.0",
    // The case and position suffix keeps ids unique across the run.
    id: `${rng.string(PRINTABLE, 1, 20)}-${i}.${k}`,
    source: rng.pick(["/fuzz", "urn:fuzz:source", "https://example.com/a?b=c#d", "fuzz"]),
    type: `com.example.${rng.string(LOWER, 1, 12)}`,
  };
  if (rng.chance(0.4)) ev.subject = edgy(rng, rng.string(UNICODE.replace("\u0000", ""), 1, 30));
  if (rng.chance(0.4)) ev.time = new Date(rng.int(4e12)).toISOString();
  if (rng.chance(0.2)) ev.dataschema = "https://example.com/schema.json";
  const extensions = rng.int(4);
  for (let k = 0; k < extensions; k++) {
    // `ext` keeps a random name clear of the context attributes and `data`.
    ev[`ext${rng.string(LOWER, 1, 12)}`] = rng.pick([
      rng.string(PRINTABLE, 0, 20),
      rng.int(1000),
      rng.chance(0.5),
    ]);
  }
  switch (rng.int(4)) {
    case 0:
      ev.datacontenttype = "application/json";
      ev.data = { summary: rng.string(UNICODE, 0, 30), n: rng.int(100), list: [1, 2, 3] };
      break;
    case 1:
      ev.datacontenttype = "text/plain";
      ev.data = edgy(rng, rng.string(UNICODE, 1, 40));
      break;
    case 2:
      ev.datacontenttype = "application/octet-stream";
      ev.data_base64 = Buffer.from(Array.from({ length: 1 + rng.int(40) }, () => rng.int(256))).toString(
        "base64",
      );
      break;
    default:
      break;
  }
  return ev;
}

/** One of the object-level mutations, applied in place. */
function mutateObject(rng: Rng, ev: Record<string, unknown>): void {
  const keys = Object.keys(ev);
  switch (rng.int(6)) {
    case 0:
      delete ev[rng.pick(keys)];
      break;
    case 1:
      ev[rng.pick(keys)] = oddValue(rng);
      break;
    case 2: {
      const key = rng.pick(keys);
      const value = ev[key];
      delete ev[key];
      ev[rng.chance(0.5) ? rng.pick(ODD_NAMES) : `${key}${rng.pick(["_", "-", "X", ".", " "])}`] = value;
      break;
    }
    case 3:
      ev[rng.chance(0.5) ? rng.pick(ODD_NAMES) : rng.pick(ATTRIBUTES)] = oddValue(rng);
      break;
    case 4:
      ev.data = oddValue(rng);
      ev.data_base64 = rng.pick(["AAEC", "", null]);
      break;
    default:
      ev[rng.string(LOWER, 1, 8)] = oddValue(rng);
      break;
  }
}

interface FuzzRequest {
  headers: Record<string, string>;
  body: Uint8Array;
  mutated: boolean;
  /** For an unmutated request: the structured-mode events the log must then hold. */
  expected: Record<string, unknown>[];
  /** A short description for failure reports. */
  what: string;
}

function binaryRequest(ev: Record<string, unknown>): { headers: Record<string, string>; body: Uint8Array } {
  const headers: Record<string, string> = {};
  let body = new Uint8Array(0);
  for (const [name, value] of Object.entries(ev)) {
    if (name === "data" || name === "data_base64" || name === "datacontenttype") continue;
    if (value === undefined || value === null) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    // HTTP binding §3.1.3.2: space, double quote, percent and anything outside printable ASCII
    // are percent-encoded.
    headers[`ce-${name}`] = text.replace(/[^\x21\x23\x24\x26-\x7e]/gu, (c) =>
      Array.from(encoder.encode(c), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join(
        "",
      ),
    );
  }
  if (ev.data !== undefined) {
    const isText = typeof ev.data === "string" && ev.datacontenttype === "text/plain";
    body = encoder.encode(isText ? (ev.data as string) : JSON.stringify(ev.data));
    headers["content-type"] = isText ? "text/plain" : "application/json";
  } else if (typeof ev.data_base64 === "string") {
    body = new Uint8Array(Buffer.from(ev.data_base64, "base64"));
    headers["content-type"] = "application/octet-stream";
  }
  return { headers, body };
}

/** Header values a fetch client can send: latin-1 without control characters. */
function headerValue(rng: Rng): string {
  switch (rng.int(6)) {
    case 0:
      return rng.pick(["%", "%ZZ", "%C3%28", "%FF", "%e2%9c%93", "%2525", "%0", "%%%"]);
    case 1:
      return rng.string("\u00e9\u00ff\u00c3\u00a9\u0080abc", 1, 10);
    case 2:
      return "";
    case 3:
      return "x".repeat(rng.int(4000));
    default:
      return rng.string(PRINTABLE, 0, 30);
  }
}

function mutateRequest(rng: Rng, req: { headers: Record<string, string>; body: Uint8Array }): string {
  switch (rng.int(11)) {
    case 0: {
      const body = new Uint8Array(req.body);
      const flips = 1 + rng.int(5);
      for (let k = 0; k < flips && body.length > 0; k++) {
        const at = rng.int(body.length);
        body[at] = (body[at] ?? 0) ^ (1 + rng.int(255));
      }
      req.body = body;
      return "flip";
    }
    case 1:
      req.body = req.body.subarray(0, rng.int(req.body.length + 1));
      return "truncate";
    case 2:
      req.headers["content-type"] = rng.pick(CONTENT_TYPES);
      return "content-type";
    case 3:
      delete req.headers["content-type"];
      return "no content-type";
    case 4: {
      const names = Object.keys(req.headers).filter((h) => h.startsWith("ce-"));
      if (names.length > 0 && rng.chance(0.5)) delete req.headers[rng.pick(names)];
      else
        req.headers[`ce-${rng.chance(0.5) ? rng.pick(ATTRIBUTES) : rng.string(`${LOWER}_.-`, 0, 12)}`] =
          headerValue(rng);
      return "ce-header";
    }
    case 5: {
      const names = Object.keys(req.headers).filter((h) => h.startsWith("ce-"));
      if (names.length > 0) req.headers[rng.pick(names)] = headerValue(rng);
      return "ce-value";
    }
    case 6: {
      const at = rng.int(req.body.length + 1);
      const junk = Array.from({ length: 1 + rng.int(8) }, () => rng.int(256));
      req.body = new Uint8Array([...req.body.subarray(0, at), ...junk, ...req.body.subarray(at)]);
      return "insert";
    }
    case 7:
      req.body = new Uint8Array([...encoder.encode("["), ...req.body, ...encoder.encode("]")]);
      req.headers["content-type"] = rng.chance(0.7) ? BATCH : STRUCTURED;
      return "wrap";
    case 8:
      req.body = new Uint8Array([
        ...req.body,
        ...encoder.encode(rng.pick([",", "}", "]", " ", "\u0000"])),
        ...req.body,
      ]);
      return "double";
    case 9:
      if (rng.chance(0.1)) {
        req.body = new Uint8Array(MAX_REQUEST_BYTES + 1 + rng.int(1000)).fill(0x20);
        return "oversize";
      }
      req.body = encoder.encode(JSON.stringify(oddValue(rng)));
      return "replace";
    default:
      req.headers["content-type"] = rng.pick(CONTENT_TYPES);
      req.body = req.body.subarray(0, rng.int(req.body.length + 1));
      return "content-type+truncate";
  }
}

/** Case `i` of this run. */
function fuzzCase(i: number): FuzzRequest {
  const rng = new Rng(SEED ^ Math.imul(i + 1, 0x9e3779b1));
  const control = rng.chance(0.1); // unmutated: must be accepted
  const mode = rng.pick(["structured", "batch", "binary"] as const);
  const events = Array.from({ length: mode === "batch" ? rng.int(9) : 1 }, (_, k) => validEvent(rng, i, k));
  const steps: string[] = [mode];
  if (!control && events.length > 0 && rng.chance(0.6)) {
    const victim = events[rng.int(events.length)] as Record<string, unknown>;
    const n = 1 + rng.int(3);
    for (let k = 0; k < n; k++) mutateObject(rng, victim);
    steps.push(`object×${n}`);
  }
  let req: { headers: Record<string, string>; body: Uint8Array };
  if (mode === "binary") req = binaryRequest(events[0] as Record<string, unknown>);
  else {
    req = {
      headers: { "content-type": mode === "batch" ? BATCH : STRUCTURED },
      body: encoder.encode(JSON.stringify(mode === "batch" ? events : events[0])),
    };
  }
  if (!control && (steps.length === 1 || rng.chance(0.5))) {
    const n = 1 + rng.int(3);
    for (let k = 0; k < n; k++) steps.push(mutateRequest(rng, req));
  }
  const expected = events.map((ev) => {
    if (mode !== "binary") return ev;
    // Binary mode carries every extension value as a string (HTTP binding §3.1.3.1).
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(ev)) {
      out[name] = typeof value === "number" || typeof value === "boolean" ? String(value) : value;
    }
    return out;
  });
  return { ...req, mutated: !control, expected, what: steps.join(",") };
}

// ---------------------------------------------------------------------------------------------

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1]);
  return kb / 1024;
}

/** JSON with every character outside printable ASCII escaped, so that a difference shows. */
function visible(value: unknown): string {
  return JSON.stringify(value).replace(
    /[^\x20-\x7e]/gu,
    (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`,
  );
}

function headerBytes(headers: Record<string, string>): number {
  let n = 0;
  for (const [name, value] of Object.entries(headers)) n += name.length + value.length + 4;
  return n;
}

/** What the server should count in a 202, mirroring how DESIGN §7 picks the mode. */
function expectedCount(req: FuzzRequest): number | null {
  const mediaType = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (mediaType !== BATCH) return 1;
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(req.body));
    return Array.isArray(value) ? value.length : null;
  } catch {
    return null;
  }
}

const RFC3339 = /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:\d\d)$/;

/** The problems of one stored event against the CloudEvents 1.0 rules of DESIGN §7. */
function problemsOf(ev: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (ev.specversion !== "1.0") problems.push("specversion");
  for (const name of ["id", "source", "type"]) {
    if (typeof ev[name] !== "string" || ev[name] === "") problems.push(name);
  }
  if ("data" in ev && "data_base64" in ev) problems.push("data and data_base64");
  if ("data_base64" in ev && !/^[A-Za-z0-9+/]*={0,2}$/.test(String(ev.data_base64))) problems.push("base64");
  if ("time" in ev && !RFC3339.test(String(ev.time))) problems.push("time");
  for (const [name, value] of Object.entries(ev)) {
    if (ATTRIBUTES.includes(name) || name === "data" || name === "data_base64") continue;
    if (!/^[a-z0-9]+$/.test(name)) problems.push(`extension name ${name}`);
    const ok =
      typeof value === "string" ||
      typeof value === "boolean" ||
      (typeof value === "number" && Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31);
    if (!ok) problems.push(`extension value ${name}`);
  }
  return problems;
}

async function allEvents(client: Client): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const res = await client.get(`/api/v1/cloudevents/poll?wait=0&limit=1000${query}`);
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
    if (!res.body.has_more) return out;
  }
}

test(`${CASES} mutated events: no 5xx, only enveloped 4xx, nothing invalid stored, bounded memory`, async () => {
  const pid = server.proc.pid;
  // Warm up (JIT, statement caches) before the baseline.
  for (let i = 0; i < 50; i++) await fetch(`${server.base}/healthz`).then((r) => r.arrayBuffer());
  const rssBefore = rssMb(pid);

  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let clientErrors = 0;
  const controls: { i: number; what: string; ev: Record<string, unknown> }[] = [];
  let acceptedEvents = 0;
  let next = 0;
  let sent = 0;

  const fail = (i: number, req: FuzzRequest, why: string) => {
    if (failures.length < 20) failures.push(`case ${i} [${req.what}] (FUZZ_SEED=${SEED}): ${why}`);
  };

  async function one(i: number): Promise<void> {
    const req = fuzzCase(i);
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers: req.headers, body: req.body });
    } catch (error) {
      // fetch refuses some header values before sending; an oversized body may also be cut off
      // by the server's early 413. Anything else is the server's fault.
      if (error instanceof TypeError && !String(error).includes("ECONNRESET")) {
        clientErrors += 1;
        return;
      }
      if (req.body.length > MAX_REQUEST_BYTES) return;
      fail(i, req, `network error ${error}`);
      return;
    }
    sent += 1;
    const text = await response.text();
    const status = response.status;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    let body: any = null;
    try {
      body = JSON.parse(text);
    } catch {
      // checked below
    }
    if (status >= 500) return fail(i, req, `${status} ${text.slice(0, 300)}`);
    if (!req.mutated && status !== 202)
      return fail(i, req, `valid event refused: ${status} ${text.slice(0, 300)}`);
    if (status === 202) {
      const expected = expectedCount(req);
      if (typeof body?.accepted !== "number" || Object.keys(body).length !== 1) {
        return fail(i, req, `202 body ${text.slice(0, 200)}`);
      }
      if (expected !== null && body.accepted !== expected) {
        return fail(i, req, `accepted ${body.accepted}, sent ${expected}`);
      }
      acceptedEvents += body.accepted;
      if (!req.mutated) for (const ev of req.expected) controls.push({ i, what: req.what, ev });
      return;
    }
    if (status < 400) return fail(i, req, `unexpected status ${status}`);
    if (status === 431) {
      // Bun's own answer to headers past its limit (before any route runs): a bare 431.
      if (headerBytes(req.headers) > 8 * 1024) return;
      return fail(i, req, `431 for ${headerBytes(req.headers)} bytes of headers`);
    }
    const error = body?.error;
    const envelope =
      body !== null &&
      typeof body === "object" &&
      Object.keys(body).length === 1 &&
      typeof error?.code === "string" &&
      /^[a-z]+(?:_[a-z]+)*$/.test(error.code) &&
      typeof error.message === "string" &&
      error.message.length > 0 &&
      Object.keys(error).every((k) => ["code", "message", "details"].includes(k)) &&
      (error.details === undefined ||
        (typeof error.details === "object" && error.details !== null && !Array.isArray(error.details)));
    if (!envelope) return fail(i, req, `not the error envelope: ${status} ${text.slice(0, 300)}`);
    if (STATUS_OF[error.code] !== status) return fail(i, req, `${status} with code ${error.code}`);
    if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) {
      return fail(i, req, `4xx content type ${response.headers.get("content-type")}`);
    }
  }

  const workers = Array.from({ length: CONCURRENCY }, async () => {
    while (sent + clientErrors < CASES * 2 && sent < CASES) {
      const i = next;
      next += 1;
      await one(i);
    }
  });
  await Promise.all(workers);

  const health = await fetch(`${server.base}/healthz`);
  expect(health.status).toBe(200);
  expect(server.proc.exitCode).toBeNull();
  const rssAfter = rssMb(pid);

  const summary = {
    seed: SEED,
    sent,
    clientErrors,
    statuses: Object.fromEntries(statuses),
    rssBefore,
    rssAfter,
  };
  expect({ failures, seed: SEED }).toEqual({ failures: [], seed: SEED });
  expect(sent).toBeGreaterThanOrEqual(CASES);
  // Both sides were exercised.
  expect(statuses.get(202) ?? 0).toBeGreaterThan(CASES / 20);
  expect(statuses.get(400) ?? 0).toBeGreaterThan(CASES / 10);

  // Nothing invalid reached the log, nothing twice, and no more than was acknowledged.
  const stored = await allEvents(api);
  const invalid = stored
    .map((ev) => ({ ev: JSON.stringify(ev).slice(0, 300), problems: problemsOf(ev) }))
    .filter((x) => x.problems.length > 0);
  expect(invalid.slice(0, 5)).toEqual([]);
  const keys = new Set(stored.map((ev) => JSON.stringify([ev.source, ev.id])));
  expect(keys.size).toBe(stored.length);
  expect(stored.length).toBeLessThanOrEqual(acceptedEvents);
  expect(stored.length).toBeGreaterThan(0);
  // Every unmutated event that was accepted is stored exactly as it was sent.
  const byKey = new Map(stored.map((ev) => [JSON.stringify([ev.source, ev.id]), ev]));
  const altered = controls
    .filter(({ ev }) => !Bun.deepEquals(byKey.get(JSON.stringify([ev.source, ev.id])), ev))
    .map(({ i, what, ev }) => ({
      case: `${i} [${what}] (FUZZ_SEED=${SEED})`,
      sent: visible(ev),
      stored: visible(byKey.get(JSON.stringify([ev.source, ev.id])) ?? null),
    }));
  expect(altered.slice(0, 3)).toEqual([]);
  expect(controls.length).toBeGreaterThan(CASES / 20);

  expect(summary.rssAfter).toBeLessThan(RSS_LIMIT_MB);
  expect(summary.rssAfter - summary.rssBefore).toBeLessThan(RSS_GROWTH_MB);
  console.log(`fuzz: ${JSON.stringify({ ...summary, stored: stored.length, acceptedEvents })}`);
}, 120_000);
