/**
 * CloudEvents ingest over HTTP (DESIGN §4 errors, §7 CloudEvents) against a real `svc serve`:
 * the `cloudevents` SDK in binary, structured and emitter form; batch mode and its limits;
 * idempotency on source+id; every kind of bad input answered 4xx with the error envelope and
 * nothing stored; oversized, chunked, truncated and header-bloated requests; ingest tokens
 * (unknown, revoked, after a slug change); the per-org event rate. What was stored is read
 * back through the consumer poll endpoint, from a cursor taken just before each request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { CloudEvent, emitterFor, HTTP, httpTransport, Mode } from "cloudevents";
import { type Client, TestServer } from "../support/harness.ts";

const STRUCTURED = "application/cloudevents+json";
const BATCH = "application/cloudevents-batch+json";
const MAX_REQUEST_BYTES = 65_536;
const SLOW = 30_000;
const encoder = new TextEncoder();

let server: TestServer;
let api: Client;
let token: string;

beforeAll(async () => {
  server = await TestServer.start({
    init: true,
    env: {
      SVC_LIMITS_MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES),
      SVC_LIMITS_POLL_PER_MINUTE: "1000000",
    },
  });
  api = server.client();
  token = server.init?.ingest_token.token as string;
}, SLOW);
afterAll(async () => {
  await server?.dispose();
});

// ---------------------------------------------------------------------------------------------
// helpers

const run = Math.random().toString(36).slice(2, 8);
let counter = 0;
/** An id no other request of this file uses. */
function uid(prefix = "e"): string {
  counter += 1;
  return `${prefix}-${run}-${counter}`;
}

type Attrs = Record<string, unknown>;

/** A valid structured-mode event with a fresh id. */
function event(overrides: Attrs = {}): Attrs {
  return {
    specversion: "1.0",
    id: uid(),
    source: "/tests/ingest",
    type: "com.example.ingest.test",
    ...overrides,
  };
}

/** `event()` without the named attributes. */
function without(names: string[], overrides: Attrs = {}): Attrs {
  const ev = event(overrides);
  for (const name of names) delete ev[name];
  return ev;
}

/** The headers of a valid binary-mode event, with `ce-` attributes overridden or removed (null). */
function binaryHeaders(
  attrs: Record<string, string | null> = {},
  contentType: string | null = "application/json",
): Record<string, string> {
  const all: Record<string, string | null> = {
    specversion: "1.0",
    id: uid("b"),
    source: "/tests/ingest",
    type: "com.example.ingest.test",
    ...attrs,
  };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(all)) if (value !== null) headers[`ce-${name}`] = value;
  if (contentType !== null) headers["content-type"] = contentType;
  return headers;
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

function ingestUrl(target: TestServer, credential: string): string {
  return `${target.base}/api/v1/cloudevents/ingest/${encodeURIComponent(credential)}`;
}

async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** POSTs one ingest request as given (no headers added). */
async function send(
  body: string | Uint8Array | ReadableStream<Uint8Array> | null,
  headers: Record<string, string>,
  options: { target?: TestServer; credential?: string } = {},
): Promise<Answer> {
  const target = options.target ?? server;
  const init: RequestInit & { duplex?: "half" } = { method: "POST", headers, body };
  if (body instanceof ReadableStream) init.duplex = "half";
  return answer(await fetch(ingestUrl(target, options.credential ?? token), init));
}

function structured(ev: unknown, options?: { target?: TestServer; credential?: string }): Promise<Answer> {
  return send(JSON.stringify(ev), { "content-type": STRUCTURED }, options);
}

function batch(events: unknown[], options?: { target?: TestServer; credential?: string }): Promise<Answer> {
  return send(JSON.stringify(events), { "content-type": BATCH }, options);
}

function expectAccepted(res: Answer, n: number): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 202, body: { accepted: n } });
}

/** The error envelope of DESIGN §4, with this status and code. */
function expectError(res: Answer, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code } } });
  expect(Object.keys(res.body)).toEqual(["error"]);
  const error = res.body.error;
  expect(typeof error.message).toBe("string");
  expect(error.message.length).toBeGreaterThan(0);
  for (const key of Object.keys(error)) expect(["code", "message", "details"]).toContain(key);
  if ("details" in error) {
    expect(typeof error.details).toBe("object");
    expect(error.details).not.toBeNull();
    expect(Array.isArray(error.details)).toBe(false);
  }
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
}

/** A cursor at the end of the log: `since(cursor)` then returns what was stored after it. */
async function mark(client: Client = api): Promise<string> {
  const res = await client.get("/api/v1/cloudevents/poll?from=now&wait=0&limit=1");
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual([]);
  return res.body.next_cursor as string;
}

/** Every event of the org's log after `cursor`, oldest first, as structured-mode JSON. */
async function since(cursor: string, client: Client = api): Promise<any[]> {
  const out: any[] = [];
  let next = cursor;
  for (;;) {
    const res = await client.get(
      `/api/v1/cloudevents/poll?cursor=${encodeURIComponent(next)}&wait=0&limit=1000`,
    );
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    next = res.body.next_cursor;
    if (!res.body.has_more) return out;
  }
}

async function expectNothingStored(cursor: string, client: Client = api): Promise<void> {
  expect(await since(cursor, client)).toEqual([]);
}

async function expectHealthy(target: TestServer = server): Promise<void> {
  expect(target.proc.exitCode).toBeNull();
  const res = await fetch(`${target.base}/healthz`);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/**
 * Writes `data` on a raw TCP connection, optionally half-closes it, and collects whatever the
 * server answers until it closes the connection (or `timeoutMs` passes).
 */
function rawHttp(
  target: TestServer,
  data: (string | Uint8Array)[],
  options: { end: boolean; timeoutMs?: number; pauseMs?: number },
): Promise<{ response: string; timedOut: boolean }> {
  const url = new URL(target.base);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ response: Buffer.concat(chunks).toString("latin1"), timedOut });
    };
    const timer = setTimeout(() => finish(true), options.timeoutMs ?? 5000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("close", () => finish(false));
    socket.on("error", () => finish(false));
    socket.on("connect", async () => {
      for (const piece of data) {
        // Once the server has answered (an early 413), writing on would only earn a reset that
        // discards the answer: a real client stops sending too.
        if (chunks.length > 0 || done) return;
        socket.write(piece);
        if (options.pauseMs) await Bun.sleep(options.pauseMs);
      }
      if (options.end) socket.end();
    });
  });
}

function ingestPath(credential = token): string {
  return `/api/v1/cloudevents/ingest/${credential}`;
}

/** A structured event whose JSON is exactly `bytes` long (padding in `data`). */
function structuredOfSize(bytes: number, id = uid("size")): string {
  const empty = JSON.stringify(event({ id, data: "" }));
  return JSON.stringify(event({ id, data: "x".repeat(bytes - encoder.encode(empty).length) }));
}

// ---------------------------------------------------------------------------------------------

describe("the cloudevents SDK", () => {
  test("HTTP.binary: JSON data, text data, octet-stream data and no data", async () => {
    const events: CloudEvent<any>[] = [
      new CloudEvent({
        id: uid("sdk-bin"),
        source: "/sdk/binary",
        type: "com.example.sdk.json",
        datacontenttype: "application/json",
        time: "2024-01-02T03:04:05.678Z",
        subject: "the-subject",
        dataschema: "https://example.com/schema.json",
        myext: "ext-value",
        data: { a: 1, nested: { list: [1, "two", null, true] }, text: "héllo" },
      }),
      new CloudEvent({
        id: uid("sdk-bin"),
        source: "/sdk/binary",
        type: "com.example.sdk.text",
        datacontenttype: "text/plain",
        data: "héllo wörld ✓",
      }),
      new CloudEvent({
        id: uid("sdk-bin"),
        source: "/sdk/binary",
        type: "com.example.sdk.octets",
        datacontenttype: "application/octet-stream",
        data: new Uint8Array([0, 1, 2, 0xc3, 0x28, 0xff, 0xfe, 10]),
      }),
      new CloudEvent({ id: uid("sdk-bin"), source: "/sdk/binary", type: "com.example.sdk.empty" }),
    ];
    const cursor = await mark();
    for (const ev of events) {
      const message = HTTP.binary(ev);
      expect(message.headers["content-type"]).toBeDefined();
      expect(message.headers["ce-id"]).toBe(ev.id);
      expectAccepted(await send(message.body as string | Uint8Array, message.headers as any), 1);
    }
    const stored = await since(cursor);
    expect(stored).toEqual(events.map((ev) => JSON.parse(HTTP.structured(ev).body as string)));
    expect(stored[0].data).toEqual({ a: 1, nested: { list: [1, "two", null, true] }, text: "héllo" });
    expect(stored[1].data).toBe("héllo wörld ✓");
    expect(stored[2].data).toBeUndefined();
    expect(stored[2].data_base64).toBe(Buffer.from([0, 1, 2, 0xc3, 0x28, 0xff, 0xfe, 10]).toString("base64"));
    expect("data" in stored[3] || "data_base64" in stored[3] || "datacontenttype" in stored[3]).toBe(false);
  });

  test("HTTP.structured: the stored event is the structured JSON that was sent", async () => {
    const events: CloudEvent<any>[] = [
      new CloudEvent({
        id: uid("sdk-str"),
        source: "/sdk/structured",
        type: "com.example.sdk.json",
        datacontenttype: "application/json",
        subject: "s",
        ext1: "one",
        flag: true,
        count: 42,
        data: { ok: true, n: [1, 2, 3] },
      }),
      new CloudEvent({
        id: uid("sdk-str"),
        source: "/sdk/structured",
        type: "com.example.sdk.text",
        datacontenttype: "text/plain",
        data: "plain text",
      }),
      new CloudEvent({
        id: uid("sdk-str"),
        source: "/sdk/structured",
        type: "com.example.sdk.octets",
        datacontenttype: "application/octet-stream",
        data: new Uint8Array([255, 0, 128, 64]),
      }),
    ];
    const cursor = await mark();
    for (const ev of events) {
      const message = HTTP.structured(ev);
      expect(message.headers["content-type"]).toStartWith(STRUCTURED);
      expectAccepted(await send(message.body as string, message.headers as any), 1);
    }
    const stored = await since(cursor);
    expect(stored).toEqual(events.map((ev) => JSON.parse(HTTP.structured(ev).body as string)));
    expect(stored[0]).toMatchObject({ ext1: "one", flag: true, count: 42 });
    expect(stored[2].data_base64).toBe(Buffer.from([255, 0, 128, 64]).toString("base64"));
    expect(stored[2].data).toBeUndefined();
  });

  test("emitterFor(httpTransport(url)) in binary and in structured mode", async () => {
    const url = ingestUrl(server, token);
    const binaryEmitter = emitterFor(httpTransport(url));
    const structuredEmitter = emitterFor(httpTransport(url), { mode: Mode.STRUCTURED });
    const events: CloudEvent<any>[] = [
      new CloudEvent({
        id: uid("emit"),
        source: "/sdk/emitter",
        type: "com.example.emit.binary",
        datacontenttype: "application/json",
        data: { via: "binary" },
      }),
      new CloudEvent({
        id: uid("emit"),
        source: "/sdk/emitter",
        type: "com.example.emit.structured",
        datacontenttype: "application/json",
        data: { via: "structured" },
      }),
      new CloudEvent({
        id: uid("emit"),
        source: "/sdk/emitter",
        type: "com.example.emit.text",
        datacontenttype: "text/plain",
        data: "via binary text",
      }),
    ];
    const cursor = await mark();
    const answers = [
      await binaryEmitter(events[0] as CloudEvent<any>),
      await structuredEmitter(events[1] as CloudEvent<any>),
      await binaryEmitter(events[2] as CloudEvent<any>),
    ] as { body: string }[];
    // httpTransport resolves with the response body and headers (no status): only a 202 carries this.
    for (const a of answers) expect(JSON.parse(a.body)).toEqual({ accepted: 1 });
    const stored = await since(cursor);
    expect(stored).toEqual(events.map((ev) => JSON.parse(HTTP.structured(ev).body as string)));
  });
});

describe("attribute and data encodings", () => {
  test("binary mode: ce- headers are percent-decoded exactly once", async () => {
    const id = uid("pct");
    const cursor = await mark();
    const res = await send(
      JSON.stringify({ k: "v" }),
      binaryHeaders({ id, subject: "caf%C3%A9%2520%E2%9C%93", myext: "a%2Cb" }),
    );
    expectAccepted(res, 1);
    const stored = await since(cursor);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ id, subject: "café%20✓", myext: "a,b", data: { k: "v" } });
  });

  test("binary mode: a leading U+FEFF in a ce- header value is kept", async () => {
    // %EF%BB%BF is U+FEFF (ZERO WIDTH NO-BREAK SPACE): a character like any other in an attribute.
    const id = uid("bom");
    const cursor = await mark();
    expectAccepted(await send("", binaryHeaders({ id, subject: "%EF%BB%BFabc" }, null)), 1);
    const stored = await since(cursor);
    expect(stored.map((e) => e.subject)).toEqual(["\ufeffabc"]);
  });

  test("binary mode: a subject that is only U+FEFF is not empty", async () => {
    const cursor = await mark();
    const res = await send("", binaryHeaders({ subject: "%EF%BB%BF" }, null));
    expectAccepted(res, 1);
    expect((await since(cursor)).map((e) => e.subject)).toEqual(["\ufeff"]);
  });

  test("binary mode: ids X and U+FEFF X are two events, not one", async () => {
    const id = uid("bom-id");
    const cursor = await mark();
    expectAccepted(await send("", binaryHeaders({ id }, null)), 1);
    expectAccepted(await send("", binaryHeaders({ id: `%EF%BB%BF${id}` }, null)), 1);
    expect((await since(cursor)).map((e) => e.id)).toEqual([id, `\ufeff${id}`]);
  });

  test("binary mode: a text/plain body starting with U+FEFF is kept as is", async () => {
    const cursor = await mark();
    expectAccepted(await send("\ufeffhello", binaryHeaders({}, "text/plain; charset=utf-8")), 1);
    expect((await since(cursor)).map((e) => e.data)).toEqual(["\ufeffhello"]);
  });

  test("Content-Type is case-insensitive and may carry parameters", async () => {
    const cursor = await mark();
    const one = event();
    const two = event();
    const three = event();
    expectAccepted(
      await send(JSON.stringify(one), { "content-type": "Application/CloudEvents+JSON; charset=UTF-8" }),
      1,
    );
    expectAccepted(
      await send(JSON.stringify([two, three]), {
        "content-type": "APPLICATION/CLOUDEVENTS-BATCH+JSON ; charset=utf-8",
      }),
      2,
    );
    expect((await since(cursor)).map((e) => e.id)).toEqual([one.id, two.id, three.id]);
  });
});

describe("batch mode", () => {
  test("an empty batch is accepted and stores nothing", async () => {
    const cursor = await mark();
    expectAccepted(await batch([]), 0);
    await expectNothingStored(cursor);
  });

  test("256 events are accepted and stored in order", async () => {
    const events = Array.from({ length: 256 }, (_, i) => event({ data: { i } }));
    const cursor = await mark();
    expectAccepted(await batch(events), 256);
    const stored = await since(cursor);
    expect(stored.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(stored.map((e) => e.data.i)).toEqual(events.map((_, i) => i));
  });

  test("257 events: 413 batch_too_large, nothing stored", async () => {
    const cursor = await mark();
    const res = await batch(Array.from({ length: 257 }, () => event()));
    expectError(res, 413, "batch_too_large");
    await expectNothingStored(cursor);
  });

  test("one bad event at index 5: 400 naming the index, nothing of the batch stored", async () => {
    const events = Array.from({ length: 10 }, () => event());
    delete events[5]?.type;
    const cursor = await mark();
    const res = await batch(events);
    expectError(res, 400, "malformed_cloudevent");
    expect(res.body.error.details.index).toBe(5);
    await expectNothingStored(cursor);
  });

  test("a bad event as the last of 256: nothing of the batch stored", async () => {
    const events: Attrs[] = Array.from({ length: 256 }, () => event());
    events[255] = event({ specversion: "0.3" });
    const cursor = await mark();
    const res = await batch(events);
    expectError(res, 400, "malformed_cloudevent");
    expect(res.body.error.details.index).toBe(255);
    await expectNothingStored(cursor);
  });
});

describe("idempotency on source + id", () => {
  test("the same event sent twice is accepted twice and stored once", async () => {
    const ev = event({ data: { n: 1 } });
    const cursor = await mark();
    expectAccepted(await structured(ev), 1);
    expectAccepted(await structured(ev), 1);
    const stored = await since(cursor);
    expect(stored).toEqual([ev]);
  });

  test("duplicates within one batch are counted and stored once", async () => {
    const a = event({ data: "a" });
    const b = event({ data: "b" });
    const cursor = await mark();
    expectAccepted(await batch([a, b, a, a, b]), 5);
    expect(await since(cursor)).toEqual([a, b]);
  });

  test("a batch repeating an event already stored stores only the new ones", async () => {
    const old = event();
    expectAccepted(await structured(old), 1);
    const fresh = event();
    const cursor = await mark();
    expectAccepted(await batch([old, fresh]), 2);
    expect((await since(cursor)).map((e) => e.id)).toEqual([fresh.id]);
  });

  test("binary then structured with the same source and id: stored once", async () => {
    const id = uid("mixed");
    const cursor = await mark();
    expectAccepted(await send("{}", binaryHeaders({ id, source: "/tests/mixed" })), 1);
    expectAccepted(await structured(event({ id, source: "/tests/mixed", data: {} })), 1);
    const stored = await since(cursor);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ id, source: "/tests/mixed" });
  });

  test("the same id from two sources is two events", async () => {
    const id = uid("two-sources");
    const cursor = await mark();
    expectAccepted(await batch([event({ id, source: "/a" }), event({ id, source: "/b" })]), 2);
    expect((await since(cursor)).map((e) => [e.source, e.id])).toEqual([
      ["/a", id],
      ["/b", id],
    ]);
  });
});

describe("bad input: 4xx with the error envelope, nothing stored", () => {
  interface BadCase {
    name: string;
    headers: Record<string, string>;
    body: string | Uint8Array;
    status: number;
    code: string;
    details?: Record<string, unknown>;
  }
  const s = (ev: unknown) => ({ headers: { "content-type": STRUCTURED }, body: JSON.stringify(ev) });
  const b = (events: unknown[]) => ({ headers: { "content-type": BATCH }, body: JSON.stringify(events) });
  const malformed = { status: 400, code: "malformed_cloudevent" };
  const invalidUtf8 = (prefix: string, suffix: string) =>
    new Uint8Array([...encoder.encode(prefix), 0xc3, 0x28, 0xff, ...encoder.encode(suffix)]);
  const valid = () => JSON.stringify(event());

  const cases: BadCase[] = [
    // missing or empty required attributes
    ...["specversion", "id", "source", "type"].map((name) => ({
      name: `structured without ${name}`,
      ...s(without([name])),
      ...malformed,
      details: { field: name },
    })),
    ...["specversion", "id", "source", "type"].map((name) => ({
      name: `binary without ce-${name}`,
      headers: binaryHeaders({ [name]: null }),
      body: "{}",
      ...malformed,
      details: { field: name },
    })),
    ...["id", "source", "type"].map((name) => ({
      name: `structured with an empty ${name}`,
      ...s(event({ [name]: "" })),
      ...malformed,
      details: { field: name },
    })),
    { name: "structured with a numeric id", ...s(event({ id: 7 })), ...malformed, details: { field: "id" } },
    { name: "binary with an empty ce-id", headers: binaryHeaders({ id: "" }), body: "{}", ...malformed },
    // specversion
    ...["0.3", "1", "1.0.0", "1.0 ", "2.0"].map((v) => ({
      name: `structured specversion ${JSON.stringify(v)}`,
      ...s(event({ specversion: v })),
      ...malformed,
      details: { field: "specversion" },
    })),
    {
      name: "structured specversion as the number 1.0",
      ...s(event({ specversion: 1.0 })),
      ...malformed,
      details: { field: "specversion" },
    },
    {
      name: "binary ce-specversion 0.3",
      headers: binaryHeaders({ specversion: "0.3" }),
      body: "{}",
      ...malformed,
      details: { field: "specversion" },
    },
    // extension names and values
    ...["MyExt", "my_ext", "my-ext", "my.ext", "ünï", "sp ace", "", "__proto__"].map((name) => ({
      name: `structured extension named ${JSON.stringify(name)}`,
      ...s(event({ [name]: "v" })),
      ...malformed,
      details: { field: name },
    })),
    ...["my_ext", "my.ext", "data", "data_base64", "datacontenttype"].map((name) => ({
      name: `binary header ce-${name}`,
      headers: { ...binaryHeaders(), [`ce-${name}`]: "v" },
      body: "{}",
      ...malformed,
      details: { field: name },
    })),
    ...[{ a: 1 }, [1], 1.5, 2 ** 31, -(2 ** 31) - 1].map((value) => ({
      name: `structured extension value ${JSON.stringify(value)}`,
      ...s(event({ myext: value })),
      ...malformed,
      details: { field: "myext" },
    })),
    // data
    {
      name: "structured with both data and data_base64",
      ...s(event({ data: { a: 1 }, data_base64: "AAEC" })),
      ...malformed,
    },
    {
      name: "structured data_base64 that is not base64",
      ...s(event({ data_base64: "not base64!" })),
      ...malformed,
      details: { field: "data_base64" },
    },
    // other attributes
    ...["yesterday", "2024-02-30T00:00:00Z", "2024-01-01 00:00:00Z", "2024-01-01T25:00:00Z"].map((time) => ({
      name: `structured time ${JSON.stringify(time)}`,
      ...s(event({ time })),
      ...malformed,
      details: { field: "time" },
    })),
    {
      name: "binary ce-time that is not RFC 3339",
      headers: binaryHeaders({ time: "now" }),
      body: "{}",
      ...malformed,
    },
    {
      name: "structured dataschema that is not a URI",
      ...s(event({ dataschema: "not a uri" })),
      ...malformed,
      details: { field: "dataschema" },
    },
    {
      name: "structured source with whitespace",
      ...s(event({ source: "/a b" })),
      ...malformed,
      details: { field: "source" },
    },
    // percent-encoding in binary mode
    ...["%ZZ", "100%", "%4", "%4g", "%C3%28", "%FF", "%E2%9C"].map((value) => ({
      name: `binary ce-subject ${JSON.stringify(value)}`,
      headers: binaryHeaders({ subject: value }),
      body: "{}",
      ...malformed,
      details: { field: "subject" },
    })),
    {
      name: "binary ce-id with invalid percent-encoding",
      headers: binaryHeaders({ id: `${uid()}%` }),
      body: "{}",
      ...malformed,
      details: { field: "id" },
    },
    {
      name: "binary extension with invalid percent-encoding",
      headers: binaryHeaders({ myext: "%%" }),
      body: "{}",
      ...malformed,
      details: { field: "myext" },
    },
    // bodies that are not UTF-8 or not JSON
    {
      name: "structured body that is not UTF-8",
      headers: { "content-type": STRUCTURED },
      body: invalidUtf8(valid().slice(0, -1).concat(',"data":"'), '"}'),
      ...malformed,
    },
    {
      name: "batch body that is not UTF-8",
      headers: { "content-type": BATCH },
      body: invalidUtf8(`[${valid()},"`, '"]'),
      ...malformed,
    },
    {
      name: "binary JSON data that is not UTF-8",
      headers: binaryHeaders(),
      body: invalidUtf8('{"a":"', '"}'),
      ...malformed,
      details: { field: "data" },
    },
    ...["[]", `[${valid()}]`, "42", '"text"', "null", "true"].map((body) => ({
      name: `structured body ${body.length > 20 ? "[event]" : body} (not an object)`,
      headers: { "content-type": STRUCTURED },
      body,
      ...malformed,
    })),
    ...["{}", valid(), "null", '"x"', "7"].map((body) => ({
      name: `batch body ${body.length > 20 ? "event" : body} (not an array)`,
      headers: { "content-type": BATCH },
      body,
      ...malformed,
    })),
    { name: "batch with a number", ...b([event(), 7]), ...malformed, details: { index: 1 } },
    { name: "batch with null", ...b([event(), event(), null]), ...malformed, details: { index: 2 } },
    { name: "batch with a nested array", ...b([event(), [event()]]), ...malformed, details: { index: 1 } },
    { name: "batch with a string", ...b(["event", event()]), ...malformed, details: { index: 0 } },
    {
      name: "truncated structured JSON",
      headers: { "content-type": STRUCTURED },
      body: valid().slice(0, -3),
      ...malformed,
    },
    {
      name: "truncated batch JSON",
      headers: { "content-type": BATCH },
      body: JSON.stringify([event(), event()]).slice(0, -2),
      ...malformed,
    },
    {
      name: "truncated binary JSON data",
      headers: binaryHeaders(),
      body: '{"a": [1, 2',
      ...malformed,
      details: { field: "data" },
    },
    { name: "empty structured body", headers: { "content-type": STRUCTURED }, body: "", ...malformed },
    { name: "empty batch body", headers: { "content-type": BATCH }, body: "", ...malformed },
    // content types
    ...[
      "application/cloudevents+xml",
      "application/cloudevents+protobuf; charset=utf-8",
      "APPLICATION/CLOUDEVENTS+AVRO",
      "application/cloudevents-batch+xml",
      "application/cloudevents",
    ].map((contentType) => ({
      name: `Content-Type ${contentType}`,
      headers: { "content-type": contentType },
      body: valid(),
      status: 415,
      code: "unsupported_media_type",
    })),
    {
      name: "a structured event sent as application/json (binary mode without ce- headers)",
      headers: { "content-type": "application/json" },
      body: valid(),
      ...malformed,
      details: { field: "specversion" },
    },
    {
      name: "a structured event without Content-Type",
      headers: {},
      body: encoder.encode(valid()),
      ...malformed,
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const cursor = await mark();
      const res = await send(c.body, c.headers);
      expectError(res, c.status, c.code);
      if (c.details) expect(res.body.error.details).toMatchObject(c.details);
      await expectNothingStored(cursor);
    });
  }

  test("a body at exactly max_request_bytes is accepted, one byte more is 413", async () => {
    const fits = structuredOfSize(MAX_REQUEST_BYTES);
    expect(encoder.encode(fits).length).toBe(MAX_REQUEST_BYTES);
    const cursor = await mark();
    expectAccepted(await send(fits, { "content-type": STRUCTURED }), 1);
    expect(await since(cursor)).toHaveLength(1);
    const tooBig = structuredOfSize(MAX_REQUEST_BYTES + 1);
    const after = await mark();
    expectError(await send(tooBig, { "content-type": STRUCTURED }), 413, "payload_too_large");
    await expectNothingStored(after);
  });

  test("an oversized body with Content-Length: 413 payload_too_large", async () => {
    const cursor = await mark();
    const body = structuredOfSize(4 * MAX_REQUEST_BYTES);
    expectError(await send(body, { "content-type": STRUCTURED }), 413, "payload_too_large");
    const bin = new Uint8Array(MAX_REQUEST_BYTES + 1000).fill(0x41);
    expectError(await send(bin, binaryHeaders({}, "application/octet-stream")), 413, "payload_too_large");
    await expectNothingStored(cursor);
    await expectHealthy();
  });

  test("an oversized chunked body (ReadableStream, no Content-Length): 413", async () => {
    const body = encoder.encode(structuredOfSize(3 * MAX_REQUEST_BYTES));
    const chunk = 8192;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += chunk) controller.enqueue(body.subarray(i, i + chunk));
        controller.close();
      },
    });
    const cursor = await mark();
    expectError(await send(stream, { "content-type": STRUCTURED }), 413, "payload_too_large");
    await expectNothingStored(cursor);
    await expectHealthy();
  });

  test("an oversized chunked body on a raw connection: 413 with the envelope", async () => {
    const body = encoder.encode(structuredOfSize(2 * MAX_REQUEST_BYTES));
    const pieces: (string | Uint8Array)[] = [
      `POST ${ingestPath()} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
    ];
    for (let i = 0; i < body.length; i += 4096) {
      const part = body.subarray(i, i + 4096);
      pieces.push(`${part.length.toString(16)}\r\n`, part, "\r\n");
    }
    pieces.push("0\r\n\r\n");
    const cursor = await mark();
    const { response } = await rawHttp(server, pieces, { end: false, pauseMs: 1 });
    expect(response).toStartWith("HTTP/1.1 413");
    const json = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
    expect(json.error.code).toBe("payload_too_large");
    await expectNothingStored(cursor);
    await expectHealthy();
  });

  test("a chunked body within the limit is accepted", async () => {
    const ev = event({ data: { chunked: true } });
    const body = encoder.encode(JSON.stringify(ev));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += 7) controller.enqueue(body.subarray(i, i + 7));
        controller.close();
      },
    });
    const cursor = await mark();
    expectAccepted(await send(stream, { "content-type": STRUCTURED }), 1);
    expect(await since(cursor)).toEqual([ev]);
  });

  test("a Content-Length that promises more than is sent: no crash, nothing stored", async () => {
    // The bytes sent are a complete, valid event: storing it would mean a cut-off request was taken.
    const complete = JSON.stringify(event());
    const structuredHead = `POST ${ingestPath()} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: ${complete.length + 100}\r\n\r\n`;
    const binaryBody = '{"k":"v"}';
    const binaryHead = [
      `POST ${ingestPath()} HTTP/1.1`,
      "Host: localhost",
      ...Object.entries(binaryHeaders()).map(([k, v]) => `${k}: ${v}`),
      `Content-Length: ${binaryBody.length + 5000}`,
      "",
      "",
    ].join("\r\n");
    const cursor = await mark();
    const answers = await Promise.all([
      rawHttp(server, [structuredHead, complete], { end: true }),
      rawHttp(server, [binaryHead, binaryBody], { end: true }),
      rawHttp(server, [structuredHead, complete.slice(0, 10)], { end: true }),
    ]);
    for (const { response } of answers) {
      // Either no answer at all, or a 4xx: never a 2xx for a request that did not arrive whole.
      if (response !== "") expect(response).toMatch(/^HTTP\/1\.1 4\d\d /);
    }
    await expectHealthy();
    await expectNothingStored(cursor);
    // And the server still ingests normally.
    const ev = event();
    expectAccepted(await structured(ev), 1);
    expect(await since(cursor)).toEqual([ev]);
  });

  test("a 64 KiB ce- header: a 4xx, and the server stays up", async () => {
    const cursor = await mark();
    const res = await send("{}", { ...binaryHeaders(), "ce-foo": "x".repeat(64 * 1024) });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    await expectHealthy();
    await expectNothingStored(cursor);
  });

  test("many ce- headers: a 4xx or accepted, never a 5xx, and the server stays up", async () => {
    const headers = binaryHeaders();
    for (let i = 0; i < 500; i++) headers[`ce-ext${i}`] = `value${i}`;
    const cursor = await mark();
    const res = await send("{}", headers);
    expect(res.status).toBeLessThan(500);
    if (res.status === 202) expect(await since(cursor)).toHaveLength(1);
    else {
      expect(res.status).toBeGreaterThanOrEqual(400);
      await expectNothingStored(cursor);
    }
    await expectHealthy();
  });
});

describe("ingest tokens", () => {
  test("an unknown token: 401 unauthenticated, nothing stored", async () => {
    const cursor = await mark();
    for (const credential of ["nope", `${token}x`, token.slice(0, -1), token.toUpperCase()]) {
      expectError(await structured(event(), { credential }), 401, "unauthenticated");
      expectError(await send("{}", binaryHeaders(), { credential }), 401, "unauthenticated");
    }
    await expectNothingStored(cursor);
  });

  test("an unknown token longer than any issued one: 401 unauthenticated as well", async () => {
    // DESIGN §4: a missing, unknown, expired or revoked credential is 401 with the same message.
    const cursor = await mark();
    const res = await structured(event(), { credential: "x".repeat(300) });
    expectError(res, 401, "unauthenticated");
    await expectNothingStored(cursor);
  });

  test("a token created over the API works until it is revoked, then 401", async () => {
    const created = await api.post("/api/v1/org/ingest-tokens", { name: "revoke me" });
    expect(created.status).toBe(201);
    const { id, token: fresh } = created.body as { id: string; token: string };
    expect(typeof fresh).toBe("string");

    const first = event();
    const cursor = await mark();
    expectAccepted(await structured(first, { credential: fresh }), 1);

    const revoked = await api.delete(`/api/v1/org/ingest-tokens/${id}`);
    expect(revoked.status).toBe(204);

    const refused = await structured(event(), { credential: fresh });
    expectError(refused, 401, "unauthenticated");
    expectError(await batch([event(), event()], { credential: fresh }), 401, "unauthenticated");
    expect(refused.body.error.message).toBe(
      (await structured(event(), { credential: "never-issued" })).body.error.message,
    );
    // The org-wide token is untouched.
    const other = event();
    expectAccepted(await structured(other), 1);
    expect((await since(cursor)).map((e) => e.id)).toEqual([first.id, other.id]);
  });

  test("svc admin org set-slug keeps existing ingest tokens working", async () => {
    const created = await api.post("/api/v1/org/ingest-tokens", { name: "before the rename" });
    expect(created.status).toBe(201);
    const newSlug = `renamed-${run}`;
    const org = await server.admin(["org", "set-slug", "--org", server.orgSlug, "--slug", newSlug]);
    expect(org.slug).toBe(newSlug);
    const a = event();
    const b = event();
    const cursor = await mark();
    expectAccepted(await structured(a), 1);
    expectAccepted(await structured(b, { credential: created.body.token }), 1);
    expect((await since(cursor)).map((e) => e.id)).toEqual([a.id, b.id]);
    // A token made after the rename works as well.
    const after = await api.post("/api/v1/org/ingest-tokens", { name: "after the rename" });
    expect(after.status).toBe(201);
    expectAccepted(await structured(event(), { credential: after.body.token }), 1);
  });
});

describe("per-org event rate", () => {
  const PER_SECOND = 10;
  let limited: TestServer;
  let limitedApi: Client;
  let limitedToken: string;

  beforeAll(async () => {
    limited = await TestServer.start({
      init: true,
      env: {
        SVC_LIMITS_INGEST_EVENTS_PER_SECOND: String(PER_SECOND),
        SVC_LIMITS_POLL_PER_MINUTE: "1000000",
      },
    });
    limitedApi = limited.client();
    limitedToken = limited.init?.ingest_token.token as string;
  }, SLOW);
  afterAll(async () => {
    await limited?.dispose();
  });

  const opts = () => ({ target: limited, credential: limitedToken });

  function expectRateLimited(res: Answer): number {
    expectError(res, 429, "rate_limited");
    const retryAfter = res.headers.get("retry-after") ?? "";
    expect(retryAfter).toMatch(/^\d+$/);
    const seconds = Number(retryAfter);
    expect(seconds).toBeGreaterThanOrEqual(1);
    return seconds;
  }

  test(
    "a burst of single events past the limit: 429 rate_limited with Retry-After",
    async () => {
      const events = Array.from({ length: PER_SECOND * 3 }, () => event());
      const cursor = await mark(limitedApi);
      const answers = await Promise.all(events.map((ev) => structured(ev, opts())));
      const accepted = events.filter((_, i) => answers[i]?.status === 202).map((e) => e.id);
      const refused = answers.filter((a) => a.status !== 202);
      for (const a of answers) if (a.status === 202) expectAccepted(a, 1);
      for (const a of refused) expectRateLimited(a);
      expect(accepted.length).toBeGreaterThanOrEqual(PER_SECOND);
      expect(accepted.length).toBeLessThan(PER_SECOND * 2);
      expect(refused.length).toBeGreaterThan(0);
      // Exactly the accepted events are stored: nothing from a refused request.
      expect((await since(cursor, limitedApi)).map((e) => e.id).sort()).toEqual([...accepted].sort());
    },
    SLOW,
  );

  test(
    "a batch refused by the rate is stored not at all, and accepted after Retry-After",
    async () => {
      await Bun.sleep(1100); // the bucket is full again
      const first = Array.from({ length: PER_SECOND }, () => event());
      const second = Array.from({ length: 5 }, () => event());
      const cursor = await mark(limitedApi);
      expectAccepted(await batch(first, opts()), PER_SECOND);
      const refused = await batch(second, opts());
      const seconds = expectRateLimited(refused);
      expect(seconds).toBeLessThanOrEqual(2);
      expect((await since(cursor, limitedApi)).map((e) => e.id)).toEqual(first.map((e) => e.id));

      await Bun.sleep(seconds * 1000);
      expectAccepted(await batch(second, opts()), 5);
      expect((await since(cursor, limitedApi)).map((e) => e.id)).toEqual(
        [...first, ...second].map((e) => e.id),
      );
    },
    SLOW,
  );

  test(
    "the limit is per org: another org is not affected",
    async () => {
      const other = await limited.admin([
        "org",
        "create",
        "--name",
        "Other",
        "--slug",
        `other-${run}`,
        "--owner-email",
        "owner@other.test",
      ]);
      await Bun.sleep(1100);
      // Drain this org's bucket…
      expectAccepted(
        await batch(
          Array.from({ length: PER_SECOND }, () => event()),
          opts(),
        ),
        PER_SECOND,
      );
      expectRateLimited(await structured(event(), opts()));
      // …the other org still has its own.
      const otherOpts = { target: limited, credential: other.ingest_token.token as string };
      expectAccepted(
        await batch(
          Array.from({ length: PER_SECOND }, () => event()),
          otherOpts,
        ),
        PER_SECOND,
      );
    },
    SLOW,
  );
});
