/**
 * A CloudEvent (as svc streams it: structured-mode JSON) to an HTTP request for the sink, in
 * binary mode (attributes as `ce-*` headers, data as the body) or structured mode, with the
 * `K_CE_OVERRIDES` extensions applied last.
 *
 * Written here rather than with the cloudevents SDK's `HTTP.binary`/`HTTP.structured`, which
 * rebuild the event through `new CloudEvent()` and so (SDK 10.0.0): invent a `time` (now) for an
 * event that has none, rewrite `time` to milliseconds in UTC, do not percent-encode header values
 * (the HTTP binding §3.1.3.2; a non-ASCII `subject` then breaks the request), label bytes
 * without a content type `application/json`, and send a JSON string value unquoted. The sink
 * side still parses these requests with the SDK's `HTTP.toEvent` in the tests.
 */

export interface StreamedEvent {
  /** The event as parsed from its structured JSON. */
  event: Record<string, unknown>;
  /** The structured JSON text as received, when there is one (sent as is when nothing changes). */
  raw?: string;
}

export interface SinkRequest {
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

const STRUCTURED_TYPE = "application/cloudevents+json; charset=utf-8";
const DATA_FIELDS = new Set(["data", "data_base64", "datacontenttype"]);
/** Printable ASCII except space, `"` and `%`: what a header value may carry unencoded. */
const SAFE_HEADER_VALUE = /^[\x21\x23\x24\x26-\x7e]*$/;

export function encodeBinary(item: StreamedEvent, overrides: Record<string, string>): SinkRequest {
  const event = item.event;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event)) {
    if (DATA_FIELDS.has(name) || value === undefined || value === null) continue;
    headers[`ce-${name}`] = headerValue(value);
  }
  for (const [name, value] of Object.entries(overrides)) headers[`ce-${name}`] = headerValue(value);

  const contentType = typeof event.datacontenttype === "string" ? event.datacontenttype : undefined;
  let body: string | Uint8Array | undefined;
  if (typeof event.data_base64 === "string") {
    body = new Uint8Array(Buffer.from(event.data_base64, "base64"));
    headers["content-type"] = contentType ?? "application/octet-stream";
  } else if (event.data !== undefined) {
    if (contentType === undefined || isJsonType(contentType)) {
      body = JSON.stringify(event.data);
      headers["content-type"] = contentType ?? "application/json";
    } else {
      body = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
      headers["content-type"] = contentType;
    }
  } else if (contentType !== undefined) {
    headers["content-type"] = contentType;
  }
  return { headers, body };
}

export function encodeStructured(item: StreamedEvent, overrides: Record<string, string>): SinkRequest {
  const unchanged = Object.keys(overrides).length === 0;
  const body =
    unchanged && item.raw !== undefined ? item.raw : JSON.stringify({ ...item.event, ...overrides });
  return { headers: { "content-type": STRUCTURED_TYPE }, body };
}

/** `application/json`, `text/json` and any `…+json` type, parameters ignored. */
export function isJsonType(contentType: string): boolean {
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return type === "application/json" || type === "text/json" || type.endsWith("+json");
}

/** Percent-encodes what the HTTP binding requires: space, `"`, `%` and anything outside printable ASCII. */
export function headerValue(value: unknown): string {
  const text =
    typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
  if (SAFE_HEADER_VALUE.test(text)) return text;
  let out = "";
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (code >= 0x21 && code <= 0x7e && code !== 0x22 && code !== 0x25) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, "utf8"))
      out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
