/**
 * CloudEvents 1.0 ingest format (DESIGN §7): turns one HTTP ingest request (structured, batch or
 * binary mode) into validated events, each with the normalized structured-mode JSON that is
 * stored and delivered. Pure: no I/O. Every problem is an AppError.
 */
import { AppError } from "../errors.ts";

export interface InboundEvent {
  id: string;
  source: string;
  type: string;
  subject: string | null;
  /** The structured-mode JSON (application/cloudevents+json) of the event, as it will be stored and delivered to consumers. */
  body: string;
  /** `data` when it is JSON (structured mode `data`, or binary mode with a JSON content type); undefined otherwise. */
  data: unknown;
}

export interface FormatLimits {
  batchMaxEvents: number;
  maxEventBytes: number;
}

const STRUCTURED = "application/cloudevents+json";
const BATCH = "application/cloudevents-batch+json";
const CE_PREFIX = "application/cloudevents";

// Compiled once: batch ingest validates every event with these.
const EXTENSION_NAME = /^[a-z0-9]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const NOT_IN_URI = /[\s\p{Cc}]/u;
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:[Zz]|[+-](\d\d):(\d\d))$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

// Fatal decoders reject invalid UTF-8 instead of substituting U+FFFD.
const utf8 = new TextDecoder("utf-8", { fatal: true });
/** For values kept as they are (header values, text data): a leading U+FEFF is content. */
const utf8Exact = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function parseIngest(headers: Headers, body: Uint8Array, limits: FormatLimits): InboundEvent[] {
  const contentType = headers.get("content-type")?.trim() ?? "";
  const mediaType = mediaTypeOf(contentType);
  if (mediaType === STRUCTURED) {
    const value = parseJsonBody(body);
    if (!isObject(value)) throw malformedBody("must be a JSON object");
    return [fromObject(value, undefined, limits, false)];
  }
  if (mediaType === BATCH) {
    const value = parseJsonBody(body);
    if (!Array.isArray(value)) throw malformedBody("must be a JSON array");
    if (value.length > limits.batchMaxEvents) {
      throw new AppError(
        "batch_too_large",
        `A batch may hold at most ${limits.batchMaxEvents} events; this one has ${value.length}.`,
        { max_events: limits.batchMaxEvents, events: value.length },
      );
    }
    const events: InboundEvent[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (!isObject(item)) {
        const problem = "must be a JSON object";
        throw new AppError("malformed_cloudevent", `Event ${i} ${problem}.`, {
          index: i,
          field: "event",
          problem,
        });
      }
      events[i] = fromObject(item, i, limits, false);
    }
    return events;
  }
  if (mediaType.startsWith(CE_PREFIX)) {
    throw new AppError(
      "unsupported_media_type",
      `Content type ${mediaType} is not supported; send ${STRUCTURED}, ${BATCH} or a binary-mode event.`,
      { content_type: mediaType, supported: [STRUCTURED, BATCH] },
    );
  }
  return [fromBinary(headers, body, contentType, mediaType, limits)];
}

/** The media type without parameters, lower-cased: "" when there is none. */
function mediaTypeOf(contentType: string): string {
  const semicolon = contentType.indexOf(";");
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

function isJsonMediaType(mediaType: string): boolean {
  return mediaType === "application/json" || mediaType === "text/json" || mediaType.endsWith("+json");
}

function parseJsonBody(body: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw malformedBody("is not valid UTF-8");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw malformedBody("is not valid JSON");
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Validates one event object and serializes it once, attributes in a fixed order.
 * `trustedData` skips re-checking a `data_base64` this module encoded itself.
 */
function fromObject(
  ev: Record<string, unknown>,
  index: number | undefined,
  limits: FormatLimits,
  trustedData: boolean,
): InboundEvent {
  const specversion = ev.specversion;
  if (specversion !== "1.0") {
    throw malformed("specversion", specversion == null ? "is required" : 'must be "1.0"', index);
  }
  const id = requiredString(ev.id, "id", index);
  const source = requiredString(ev.source, "source", index);
  if (NOT_IN_URI.test(source)) {
    throw malformed("source", "must be a URI-reference (no whitespace or control characters)", index);
  }
  const type = requiredString(ev.type, "type", index);
  const datacontenttype = optionalString(ev.datacontenttype, "datacontenttype", index);
  const dataschema = optionalString(ev.dataschema, "dataschema", index);
  if (dataschema !== undefined && !URL.canParse(dataschema)) {
    throw malformed("dataschema", "must be an absolute URI", index);
  }
  const subject = optionalString(ev.subject, "subject", index);
  const time = optionalString(ev.time, "time", index);
  if (time !== undefined && !isRfc3339(time)) throw malformed("time", "must be an RFC 3339 timestamp", index);

  const data = ev.data === null ? undefined : ev.data;
  let base64 = ev.data_base64;
  if (base64 === null) base64 = undefined;
  if (base64 !== undefined) {
    if (data !== undefined) throw malformed("data", "must not be present together with data_base64", index);
    if (typeof base64 !== "string" || (!trustedData && !isBase64(base64))) {
      throw malformed("data_base64", "must be a base64 string", index);
    }
  }

  const out: Record<string, unknown> = { specversion: "1.0", id, source, type };
  if (datacontenttype !== undefined) out.datacontenttype = datacontenttype;
  if (dataschema !== undefined) out.dataschema = dataschema;
  if (subject !== undefined) out.subject = subject;
  if (time !== undefined) out.time = time;
  let digitName = false;
  for (const name in ev) {
    if (isReserved(name)) continue;
    if (!EXTENSION_NAME.test(name)) {
      throw malformed(name, "is not a valid extension attribute name (lower-case letters and digits)", index);
    }
    const value = ev[name];
    if (value === null) continue;
    if (
      typeof value === "string" ||
      typeof value === "boolean" ||
      (typeof value === "number" && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX)
    ) {
      out[name] = value;
      if (name.charCodeAt(0) <= 0x39) digitName = true;
    } else throw malformed(name, "must be a string, an integer or a boolean", index);
  }
  if (base64 !== undefined) out.data_base64 = base64;
  else if (data !== undefined) out.data = data;

  const body = digitName ? stringifyInOrder(out) : JSON.stringify(out);
  checkSize(body, index, limits.maxEventBytes);
  return { id, source, type, subject: subject ?? null, body, data };
}

/** The context attributes and the data members: never extensions. */
function isReserved(name: string): boolean {
  switch (name) {
    case "specversion":
    case "id":
    case "source":
    case "type":
    case "datacontenttype":
    case "dataschema":
    case "subject":
    case "time":
    case "data":
    case "data_base64":
      return true;
    default:
      return false;
  }
}

const CONTEXT_ATTRIBUTES = [
  "specversion",
  "id",
  "source",
  "type",
  "datacontenttype",
  "dataschema",
  "subject",
  "time",
];

/**
 * JSON.stringify for an event with a digit-only extension name, which an object enumerates
 * before every other key: keeps context attributes first and data last anyway.
 */
function stringifyInOrder(event: Record<string, unknown>): string {
  const members: string[] = [];
  for (const name of CONTEXT_ATTRIBUTES) {
    if (name in event) members.push(`"${name}":${JSON.stringify(event[name])}`);
  }
  for (const name in event) {
    if (!isReserved(name)) members.push(`"${name}":${JSON.stringify(event[name])}`);
  }
  if ("data_base64" in event) members.push(`"data_base64":${JSON.stringify(event.data_base64)}`);
  else if ("data" in event) members.push(`"data":${JSON.stringify(event.data)}`);
  return `{${members.join(",")}}`;
}

function requiredString(value: unknown, field: string, index: number | undefined): string {
  if (typeof value === "string" && value !== "") return value;
  throw malformed(field, value == null ? "is required" : "must be a non-empty string", index);
}

function optionalString(value: unknown, field: string, index: number | undefined): string | undefined {
  if (value == null) return undefined;
  if (typeof value === "string" && value !== "") return value;
  throw malformed(field, "must be a non-empty string", index);
}

function isRfc3339(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  // Date.parse rolls 2023-02-30 over to March and accepts 24:00, so check the fields too.
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && !leap ? 28 : (DAYS_IN_MONTH[month - 1] ?? 0))) return false;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) return false;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return false;
  return !Number.isNaN(Date.parse(value));
}

function isBase64(value: string): boolean {
  return value.length % 4 === 0 && BASE64.test(value);
}

function checkSize(body: string, index: number | undefined, maxBytes: number): void {
  // UTF-8 takes at least one byte per UTF-16 unit and at most three: only measure in between.
  if (body.length * 3 <= maxBytes) return;
  const bytes = body.length > maxBytes ? body.length : Buffer.byteLength(body, "utf8");
  if (bytes <= maxBytes) return;
  const what = index === undefined ? "The event" : `Event ${index}`;
  throw new AppError(
    "payload_too_large",
    `${what} is larger than the limit of ${maxBytes} bytes.`,
    index === undefined ? { max_bytes: maxBytes } : { index, max_bytes: maxBytes },
  );
}

/** Binary mode: attributes from `ce-*` headers, the body as data with the request's Content-Type. */
function fromBinary(
  headers: Headers,
  body: Uint8Array,
  contentType: string,
  mediaType: string,
  limits: FormatLimits,
): InboundEvent {
  // Null prototype: header names are caller-controlled keys.
  const ev: Record<string, unknown> = Object.create(null);
  // Required attributes first so a missing one is reported before any extension problem.
  for (const name of ["specversion", "id", "source", "type"]) {
    const value = headers.get(`ce-${name}`);
    if (value === null) throw malformed(name, `is required (header ce-${name})`, undefined);
    ev[name] = percentDecode(value, name);
  }
  for (const [header, value] of headers) {
    if (!header.startsWith("ce-")) continue;
    const name = header.slice(3);
    if (name in ev) continue;
    if (name === "data" || name === "data_base64") {
      throw malformed(name, "is not a valid extension attribute name (it names the event data)", undefined);
    }
    if (name === "datacontenttype") {
      throw malformed(name, "must be sent as the Content-Type header in binary mode", undefined);
    }
    if (!EXTENSION_NAME.test(name)) {
      throw malformed(
        name,
        "is not a valid extension attribute name (lower-case letters and digits)",
        undefined,
      );
    }
    ev[name] = percentDecode(value, name);
  }

  // An empty body is an event without data; its Content-Type then describes nothing.
  const isJson = body.length > 0 && isJsonMediaType(mediaType);
  if (body.length > 0) {
    if (contentType !== "") ev.datacontenttype = contentType;
    if (isJson) {
      let text: string;
      try {
        text = utf8.decode(body);
      } catch {
        throw malformed("data", "is not valid UTF-8", undefined);
      }
      try {
        ev.data = JSON.parse(text);
      } catch {
        throw malformed("data", `is not valid JSON (Content-Type ${mediaType})`, undefined);
      }
    } else {
      const text = mediaType.startsWith("text/") ? decodeUtf8OrNull(body) : null;
      if (text !== null) ev.data = text;
      else ev.data_base64 = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("base64");
    }
  }
  const event = fromObject(ev, undefined, limits, true);
  if (!isJson) event.data = undefined;
  return event;
}

function decodeUtf8OrNull(bytes: Uint8Array): string | null {
  try {
    return utf8Exact.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Decodes %XX escapes once (HTTP binding §3.1.3.2). Header values arrive as byte strings (one
 * char per byte), so raw and escaped bytes are decoded together as UTF-8.
 */
function percentDecode(value: string, field: string): string {
  let plain = true;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25 || c > 0x7f) {
      plain = false;
      break;
    }
  }
  if (plain) return value;
  const bytes = new Uint8Array(value.length);
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25) {
      const hi = hexValue(value.charCodeAt(i + 1));
      const lo = hexValue(value.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) throw malformed(field, "has invalid percent-encoding", undefined);
      bytes[n++] = (hi << 4) | lo;
      i += 2;
    } else if (c > 0xff) {
      // Not a byte string (Headers never holds one): no bytes to decode.
      throw malformed(field, "is not valid UTF-8 after percent-decoding", undefined);
    } else bytes[n++] = c;
  }
  const text = decodeUtf8OrNull(bytes.subarray(0, n));
  if (text === null) throw malformed(field, "is not valid UTF-8 after percent-decoding", undefined);
  return text;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1; // includes NaN past the end of the string
}

function malformed(field: string, problem: string, index: number | undefined): AppError {
  // Field names can be arbitrary JSON keys: keep the message bounded.
  const name = field.length > 64 ? `${field.slice(0, 64)}…` : field;
  return index === undefined
    ? new AppError("malformed_cloudevent", `${name} ${problem}.`, { field: name, problem })
    : new AppError("malformed_cloudevent", `Event ${index}: ${name} ${problem}.`, {
        index,
        field: name,
        problem,
      });
}

/** The request body as a whole is unusable. */
function malformedBody(problem: string): AppError {
  return new AppError("malformed_cloudevent", `The request body ${problem}.`, { field: "body", problem });
}
