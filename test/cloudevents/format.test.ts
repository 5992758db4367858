import { describe, expect, test } from "bun:test";
import { CloudEvent, HTTP } from "cloudevents";
import { type FormatLimits, type InboundEvent, parseIngest } from "../../src/cloudevents/format.ts";
import { AppError } from "../../src/errors.ts";

const LIMITS: FormatLimits = { batchMaxEvents: 4, maxEventBytes: 1024 };
const STRUCTURED = "application/cloudevents+json";
const BATCH = "application/cloudevents-batch+json";
const encoder = new TextEncoder();

const BASE = { specversion: "1.0", id: "e1", source: "/src", type: "com.example.thing" };

function bytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? encoder.encode(body) : body;
}

function parse(
  headers: Record<string, string>,
  body: string | Uint8Array = "",
  limits = LIMITS,
): InboundEvent[] {
  return parseIngest(new Headers(headers), bytes(body), limits);
}

function structured(event: unknown, contentType = STRUCTURED): InboundEvent {
  const events = parse({ "content-type": contentType }, JSON.stringify(event));
  expect(events).toHaveLength(1);
  return events[0] as InboundEvent;
}

function binary(
  ce: Record<string, string>,
  body: string | Uint8Array = "",
  contentType?: string,
): InboundEvent {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ce)) headers[`ce-${name}`] = value;
  if (contentType !== undefined) headers["content-type"] = contentType;
  const events = parse(headers, body);
  expect(events).toHaveLength(1);
  return events[0] as InboundEvent;
}

function failure(fn: () => unknown): AppError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected an AppError");
}

/** The stored body, parsed. */
function bodyOf(event: InboundEvent): { json: Record<string, unknown> } {
  return { json: JSON.parse(event.body) as Record<string, unknown> };
}

/** Header values as HTTP carries them: UTF-8 bytes, one char per byte (as Bun.serve hands them over). */
function wireHeaders(headers: Record<string, unknown>): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    out.set(name, String.fromCharCode(...encoder.encode(String(value))));
  }
  return out;
}

describe("content type selects the mode", () => {
  test.each([
    ["application/cloudevents+json", "structured"],
    ["application/cloudevents+json; charset=UTF-8", "structured"],
    ["Application/CloudEvents+JSON", "structured"],
    ["  APPLICATION/CLOUDEVENTS+JSON ;charset=utf-8", "structured"],
    ["application/cloudevents-batch+json", "batch"],
    ["APPLICATION/CLOUDEVENTS-BATCH+JSON; charset=utf-8", "batch"],
  ])("%s is %s mode", (contentType, mode) => {
    const body = mode === "batch" ? [BASE] : BASE;
    const events = parse({ "content-type": contentType }, JSON.stringify(body));
    expect(events.map((e) => e.id)).toEqual(["e1"]);
  });

  test.each([
    "application/cloudevents+xml",
    "application/cloudevents-batch+avro",
    "application/cloudevents+protobuf; charset=utf-8",
    "APPLICATION/CLOUDEVENTS+XML",
    "application/cloudevents",
  ])("%s is 415 unsupported_media_type", (contentType) => {
    const error = failure(() => parse({ "content-type": contentType }, JSON.stringify(BASE)));
    expect(error.code).toBe("unsupported_media_type");
    expect(error.status).toBe(415);
  });

  test.each([
    ["no content type", undefined],
    ["application/json", "application/json"],
    ["text/plain", "text/plain"],
    ["application/octet-stream", "application/octet-stream"],
  ])("%s is binary mode", (_label, contentType) => {
    const event = binary({ specversion: "1.0", id: "b1", source: "/s", type: "t" }, "", contentType);
    expect(event.id).toBe("b1");
  });
});

describe("structured mode: valid events", () => {
  test("attributes come first in spec order, then extensions, then data", () => {
    const event = structured({
      data: { a: 1 },
      myext: "x",
      time: "2024-05-06T07:08:09.123Z",
      subject: "sub",
      dataschema: "https://example.com/schema",
      datacontenttype: "application/json",
      type: "t",
      source: "/s",
      id: "i",
      specversion: "1.0",
      flag: true,
      count: -5,
      "42": "digits are a valid name",
    });
    // Exact text: JSON.parse would reorder the digit-only key.
    expect(event.body).toBe(
      '{"specversion":"1.0","id":"i","source":"/s","type":"t","datacontenttype":"application/json",' +
        '"dataschema":"https://example.com/schema","subject":"sub","time":"2024-05-06T07:08:09.123Z",' +
        '"42":"digits are a valid name","myext":"x","flag":true,"count":-5,"data":{"a":1}}',
    );
    expect(event).toMatchObject({ id: "i", source: "/s", type: "t", subject: "sub", data: { a: 1 } });
  });

  test("a digit-only extension name still comes after the context attributes, data_base64 last", () => {
    const event = structured({ "7": 1, data_base64: "AA==", ...BASE, subject: "s", ext: "x" });
    expect(event.body).toBe(
      '{"specversion":"1.0","id":"e1","source":"/src","type":"com.example.thing","subject":"s",' +
        '"7":1,"ext":"x","data_base64":"AA=="}',
    );
  });

  test.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ["only required attributes", {}, {}],
    ["null attributes are absent", { subject: null, time: null, myext: null, data: null }, {}],
    [
      "string data",
      { data: "hello", datacontenttype: "text/plain" },
      { data: "hello", datacontenttype: "text/plain" },
    ],
    ["array data", { data: [1, "two"] }, { data: [1, "two"] }],
    ["data_base64", { data_base64: "AAEC" }, { data_base64: "AAEC" }],
    ["empty data_base64", { data_base64: "" }, { data_base64: "" }],
    ["padded data_base64", { data_base64: "YQ==" }, { data_base64: "YQ==" }],
    ["data null with data_base64", { data: null, data_base64: "YWI=" }, { data_base64: "YWI=" }],
    ["empty string extension", { myext: "" }, { myext: "" }],
    ["int32 bounds", { lo: -2147483648, hi: 2147483647 }, { lo: -2147483648, hi: 2147483647 }],
    ["lower-case t and z in time", { time: "2024-01-02t03:04:05z" }, { time: "2024-01-02t03:04:05z" }],
    ["time with offset", { time: "2024-02-29T23:59:59.5-05:30" }, { time: "2024-02-29T23:59:59.5-05:30" }],
    ["urn dataschema", { dataschema: "urn:example:schema" }, { dataschema: "urn:example:schema" }],
    ["absolute URI source", { source: "https://example.com/x?y=1" }, { source: "https://example.com/x?y=1" }],
    ["unicode subject", { subject: "café ☕" }, { subject: "café ☕" }],
  ])("%s", (_label, extra, expected) => {
    const event = structured({ ...BASE, ...extra });
    expect(bodyOf(event).json).toEqual({ ...BASE, ...expected });
  });

  test("InboundEvent.data is the structured data; subject null when absent", () => {
    expect(structured({ ...BASE, data: { dedup_key: "k" } })).toMatchObject({
      subject: null,
      data: { dedup_key: "k" },
    });
    expect(structured({ ...BASE, data: "text" }).data).toBe("text");
    expect(structured({ ...BASE, data_base64: "AAEC" }).data).toBeUndefined();
    expect(structured(BASE).data).toBeUndefined();
  });

  test("round trip of a cloudevents SDK structured message", () => {
    const ce = new CloudEvent({
      id: "sdk-1",
      source: "/sdk",
      type: "com.example.sdk",
      subject: "s€",
      datacontenttype: "application/json",
      data: { n: 1, s: "é" },
      myext: "v",
      flag: true,
    });
    const message = HTTP.structured(ce);
    const events = parse(message.headers as Record<string, string>, message.body as string);
    expect(events).toHaveLength(1);
    const event = events[0] as InboundEvent;
    expect(bodyOf(event).json).toEqual(JSON.parse(message.body as string));
    expect(event).toMatchObject({ id: "sdk-1", source: "/sdk", type: "com.example.sdk", subject: "s€" });
    expect(event.data).toEqual({ n: 1, s: "é" });
  });
});

describe("structured mode: invalid events", () => {
  test.each<[string, Record<string, unknown>, string, string]>([
    ["missing specversion", { specversion: undefined }, "specversion", "is required"],
    ["null specversion", { specversion: null }, "specversion", "is required"],
    ["specversion 0.3", { specversion: "0.3" }, "specversion", 'must be "1.0"'],
    ["specversion number", { specversion: 1.0 }, "specversion", 'must be "1.0"'],
    ["missing id", { id: undefined }, "id", "is required"],
    ["empty id", { id: "" }, "id", "must be a non-empty string"],
    ["numeric id", { id: 7 }, "id", "must be a non-empty string"],
    ["missing source", { source: undefined }, "source", "is required"],
    ["empty source", { source: "" }, "source", "must be a non-empty string"],
    ["source with a space", { source: "/a b" }, "source", "must be a URI-reference"],
    ["source with a control character", { source: "/a\u0001" }, "source", "must be a URI-reference"],
    ["missing type", { type: undefined }, "type", "is required"],
    ["empty type", { type: "" }, "type", "must be a non-empty string"],
    ["empty subject", { subject: "" }, "subject", "must be a non-empty string"],
    ["numeric subject", { subject: 1 }, "subject", "must be a non-empty string"],
    ["empty datacontenttype", { datacontenttype: "" }, "datacontenttype", "must be a non-empty string"],
    ["relative dataschema", { dataschema: "/schema" }, "dataschema", "must be an absolute URI"],
    ["empty dataschema", { dataschema: "" }, "dataschema", "must be a non-empty string"],
    ["time without zone", { time: "2024-01-02T03:04:05" }, "time", "RFC 3339"],
    ["time with a space", { time: "2024-01-02 03:04:05Z" }, "time", "RFC 3339"],
    ["date only", { time: "2024-01-02" }, "time", "RFC 3339"],
    ["month 13", { time: "2024-13-02T03:04:05Z" }, "time", "RFC 3339"],
    ["February 30", { time: "2024-02-30T03:04:05Z" }, "time", "RFC 3339"],
    ["February 29 of a common year", { time: "2023-02-29T03:04:05Z" }, "time", "RFC 3339"],
    ["hour 24", { time: "2024-01-02T24:00:00Z" }, "time", "RFC 3339"],
    ["offset +25:00", { time: "2024-01-02T03:04:05+25:00" }, "time", "RFC 3339"],
    ["time not a timestamp", { time: "yesterday" }, "time", "RFC 3339"],
    ["numeric time", { time: 1700000000 }, "time", "must be a non-empty string"],
    ["upper-case extension name", { Foo: "x" }, "Foo", "is not a valid extension attribute name"],
    ["extension name with a dash", { "a-b": "x" }, "a-b", "is not a valid extension attribute name"],
    ["extension name with an underscore", { a_b: "x" }, "a_b", "is not a valid extension attribute name"],
    ["empty extension name", { "": "x" }, "", "is not a valid extension attribute name"],
    ["object extension value", { myext: { a: 1 } }, "myext", "must be a string, an integer or a boolean"],
    ["array extension value", { myext: [1] }, "myext", "must be a string, an integer or a boolean"],
    ["fractional extension value", { myext: 1.5 }, "myext", "must be a string, an integer or a boolean"],
    ["extension beyond int32", { myext: 2147483648 }, "myext", "must be a string, an integer or a boolean"],
    ["data and data_base64", { data: { a: 1 }, data_base64: "AAEC" }, "data", "data_base64"],
    ["invalid base64 character", { data_base64: "AA*C" }, "data_base64", "must be a base64 string"],
    ["base64 of bad length", { data_base64: "AAE" }, "data_base64", "must be a base64 string"],
    ["base64 with inner padding", { data_base64: "AA=C" }, "data_base64", "must be a base64 string"],
    ["base64 not a string", { data_base64: 12 }, "data_base64", "must be a base64 string"],
  ])("%s", (_label, override, field, problem) => {
    const error = failure(() => structured({ ...BASE, ...override }));
    expect(error.code).toBe("malformed_cloudevent");
    expect(error.status).toBe(400);
    expect(error.details).toEqual({ field, problem: expect.stringContaining(problem) });
    expect(error.message).toContain(field);
  });

  test.each<[string, string | Uint8Array, string]>([
    ["invalid UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), "is not valid UTF-8"],
    ["truncated UTF-8 sequence", new Uint8Array([0x22, 0xe2, 0x82, 0x22]), "is not valid UTF-8"],
    ["invalid JSON", "{not json", "is not valid JSON"],
    ["empty body", "", "is not valid JSON"],
    ["a JSON array", JSON.stringify([BASE]), "must be a JSON object"],
    ["a JSON string", '"event"', "must be a JSON object"],
    ["JSON null", "null", "must be a JSON object"],
  ])("a body that is %s is malformed", (_label, body, problem) => {
    const error = failure(() => parse({ "content-type": STRUCTURED }, body));
    expect(error.code).toBe("malformed_cloudevent");
    expect(error.details).toEqual({ field: "body", problem });
    expect(error.message).toBe(`The request body ${problem}.`);
  });

  test("the message names the field", () => {
    expect(failure(() => structured({ ...BASE, specversion: "0.3" })).message).toBe(
      'specversion must be "1.0".',
    );
  });
});

describe("batch mode", () => {
  const batch = (events: unknown, limits = LIMITS, contentType = BATCH) =>
    parse({ "content-type": contentType }, JSON.stringify(events), limits);

  test("an empty batch is valid and holds no events", () => {
    expect(batch([])).toEqual([]);
  });

  test("events keep their order and are normalized one by one", () => {
    const events = batch([
      { ...BASE, id: "a", data: { n: 1 } },
      { ...BASE, id: "b", subject: "s", ext: 1 },
      { ...BASE, id: "c", data_base64: "AQID" },
    ]);
    expect(events.map((e) => e.id)).toEqual(["a", "b", "c"]);
    expect(events.map((e) => e.subject)).toEqual([null, "s", null]);
    expect(events.map((e) => e.data)).toEqual([{ n: 1 }, undefined, undefined]);
    expect(events.map((e) => JSON.parse(e.body))).toEqual([
      { ...BASE, id: "a", data: { n: 1 } },
      { ...BASE, id: "b", subject: "s", ext: 1 },
      { ...BASE, id: "c", data_base64: "AQID" },
    ]);
  });

  test("batchMaxEvents events are accepted; one more is 413 batch_too_large", () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ...BASE, id: `e${i}` }));
    expect(batch(many(LIMITS.batchMaxEvents))).toHaveLength(LIMITS.batchMaxEvents);
    const error = failure(() => batch(many(LIMITS.batchMaxEvents + 1)));
    expect(error.code).toBe("batch_too_large");
    expect(error.status).toBe(413);
    expect(error.details).toEqual({ max_events: 4, events: 5 });
  });

  test.each<[string, unknown[], number, string, string]>([
    ["a non-object item", [BASE, BASE, "nope"], 2, "event", "must be a JSON object"],
    ["a null item", [null], 0, "event", "must be a JSON object"],
    ["an array item", [BASE, [BASE]], 1, "event", "must be a JSON object"],
    [
      "wrong specversion",
      [BASE, BASE, BASE, { ...BASE, specversion: "0.3" }],
      3,
      "specversion",
      'must be "1.0"',
    ],
    ["a missing id", [BASE, { ...BASE, id: undefined }], 1, "id", "is required"],
    ["a bad extension name", [{ ...BASE, Foo: 1 }], 0, "Foo", "is not a valid extension attribute name"],
    ["data and data_base64", [BASE, { ...BASE, data: 1, data_base64: "AA==" }], 1, "data", "data_base64"],
  ])("one event with %s fails the whole batch, naming its index", (_label, events, index, field, problem) => {
    const error = failure(() => batch(events));
    expect(error.code).toBe("malformed_cloudevent");
    expect(error.status).toBe(400);
    expect(error.details).toEqual({ index, field, problem: expect.stringContaining(problem) });
    expect(error.message).toStartWith(`Event ${index}`);
  });

  test("the message names index and field", () => {
    const error = failure(() => batch([BASE, BASE, BASE, { ...BASE, specversion: "0.3" }]));
    expect(error.message).toBe('Event 3: specversion must be "1.0".');
    expect(failure(() => batch([BASE, 5])).message).toBe("Event 1 must be a JSON object.");
  });

  test.each<[string, string]>([
    ["an object", JSON.stringify(BASE)],
    ["invalid JSON", "[{"],
  ])("a batch body that is %s is malformed", (_label, body) => {
    const error = failure(() => parse({ "content-type": BATCH }, body));
    expect(error.code).toBe("malformed_cloudevent");
    expect(error.details).toMatchObject({ field: "body" });
  });

  test("invalid UTF-8 in a batch body is malformed", () => {
    const error = failure(() => parse({ "content-type": BATCH }, new Uint8Array([0x5b, 0xc3, 0x28, 0x5d])));
    expect(error.details).toEqual({ field: "body", problem: "is not valid UTF-8" });
  });

  test("upper-case batch content type with parameters", () => {
    expect(batch([BASE], LIMITS, "Application/CloudEvents-Batch+JSON; charset=UTF-8")).toHaveLength(1);
  });
});

describe("binary mode", () => {
  const REQUIRED = { specversion: "1.0", id: "b1", source: "/bin", type: "com.example.bin" };

  test("JSON body becomes data, Content-Type the datacontenttype", () => {
    const event = binary({ ...REQUIRED, subject: "s", myext: "v" }, '{"a": [1, 2]}', "application/json");
    expect(event).toMatchObject({ id: "b1", source: "/bin", type: "com.example.bin", subject: "s" });
    expect(event.data).toEqual({ a: [1, 2] });
    expect(event.body).toBe(
      '{"specversion":"1.0","id":"b1","source":"/bin","type":"com.example.bin",' +
        '"datacontenttype":"application/json","subject":"s","myext":"v","data":{"a":[1,2]}}',
    );
  });

  test.each([
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "text/json",
    "application/vnd.example+json",
    "application/problem+JSON; charset=utf-8",
  ])("%s is a JSON content type", (contentType) => {
    const event = binary(REQUIRED, '{"x":true}', contentType);
    expect(event.data).toEqual({ x: true });
    expect(bodyOf(event).json).toMatchObject({ datacontenttype: contentType, data: { x: true } });
  });

  test("text body becomes string data", () => {
    const event = binary(REQUIRED, "héllo wörld", "text/plain; charset=utf-8");
    expect(bodyOf(event).json).toEqual({
      ...REQUIRED,
      datacontenttype: "text/plain; charset=utf-8",
      data: "héllo wörld",
    });
    expect(event.data).toBeUndefined();
  });

  test("text body that is not UTF-8 becomes data_base64", () => {
    const event = binary(REQUIRED, new Uint8Array([0x68, 0xe9]), "text/plain; charset=latin1");
    expect(bodyOf(event).json).toMatchObject({ data_base64: "aOk=" });
    expect(bodyOf(event).json.data).toBeUndefined();
  });

  test.each<[string, string | undefined]>([
    ["octet-stream", "application/octet-stream"],
    ["an image", "image/png"],
    ["no content type", undefined],
  ])("%s body becomes data_base64", (_label, contentType) => {
    const event = binary(REQUIRED, new Uint8Array([0, 1, 2, 255]), contentType);
    const expected: Record<string, unknown> = { ...REQUIRED, data_base64: "AAEC/w==" };
    if (contentType !== undefined) expected.datacontenttype = contentType;
    expect(bodyOf(event).json).toEqual(expected);
    expect(event.data).toBeUndefined();
  });

  test("an empty body means no data (and no datacontenttype)", () => {
    const event = binary(REQUIRED, "", "application/json");
    expect(bodyOf(event).json).toEqual(REQUIRED);
    expect(event.data).toBeUndefined();
  });

  test("header values are percent-decoded once", () => {
    const event = binary({
      ...REQUIRED,
      source: "/a%2Fb",
      subject: "caf%C3%A9%20%E2%82%AC",
      myext: "100%2541",
    });
    expect(event.source).toBe("/a/b");
    expect(event.subject).toBe("café €");
    expect(bodyOf(event).json.myext).toBe("100%41");
  });

  test("raw UTF-8 bytes in header values are decoded", () => {
    const headers = wireHeaders({ "ce-specversion": "1.0", "ce-id": "x", "ce-source": "/s", "ce-type": "t" });
    headers.set("ce-subject", String.fromCharCode(...encoder.encode("s€")));
    const [event] = parseIngest(headers, new Uint8Array(), LIMITS);
    expect(event?.subject).toBe("s€");
  });

  test("header names are case-insensitive and attribute names lower-cased", () => {
    const events = parse({
      "CE-SpecVersion": "1.0",
      "Ce-Id": "x",
      "CE-SOURCE": "/s",
      "ce-Type": "t",
      "CE-MyExt": "v",
    });
    expect(bodyOf(events[0] as InboundEvent).json).toEqual({
      specversion: "1.0",
      id: "x",
      source: "/s",
      type: "t",
      myext: "v",
    });
  });

  test.each<[string, Record<string, string>, string | Uint8Array, string | undefined, string, string]>([
    ["missing ce-specversion", { specversion: "" }, "", undefined, "specversion", "is required"],
    ["missing ce-id", { id: "" }, "", undefined, "id", "is required"],
    ["missing ce-source", { source: "" }, "", undefined, "source", "is required"],
    ["missing ce-type", { type: "" }, "", undefined, "type", "is required"],
    ["wrong specversion", { specversion: "0.3" }, "", undefined, "specversion", 'must be "1.0"'],
    ["bad time", { time: "2024-01-02T03:04:05" }, "", undefined, "time", "RFC 3339"],
    ["ce-data", { data: "x" }, "", undefined, "data", "is not a valid extension attribute name"],
    ["ce-data_base64", { data_base64: "AA==" }, "", undefined, "data_base64", "is not a valid extension"],
    [
      "extension with a dash",
      { "a-b": "x" },
      "",
      undefined,
      "a-b",
      "is not a valid extension attribute name",
    ],
    ["ce-datacontenttype", { datacontenttype: "a/b" }, "", undefined, "datacontenttype", "Content-Type"],
    ["%zz", { subject: "a%zzb" }, "", undefined, "subject", "has invalid percent-encoding"],
    ["a trailing %", { myext: "100%" }, "", undefined, "myext", "has invalid percent-encoding"],
    ["a short escape", { myext: "%4" }, "", undefined, "myext", "has invalid percent-encoding"],
    ["%e2%82 (truncated UTF-8)", { subject: "%e2%82" }, "", undefined, "subject", "is not valid UTF-8"],
    ["%ff", { id: "%ff" }, "", undefined, "id", "is not valid UTF-8"],
    ["%C0%AF (overlong)", { source: "/%C0%AF" }, "", undefined, "source", "is not valid UTF-8"],
    ["invalid JSON data", {}, "{nope", "application/json", "data", "is not valid JSON"],
    ["non-UTF-8 JSON data", {}, new Uint8Array([0x22, 0xff, 0x22]), "application/json", "data", "UTF-8"],
  ])("%s is malformed", (_label, override, body, contentType, field, problem) => {
    const ce: Record<string, string> = { ...REQUIRED };
    for (const [name, value] of Object.entries(override)) {
      if (value === "" && name in REQUIRED) delete ce[name];
      else ce[name] = value;
    }
    const error = failure(() => binary(ce, body, contentType));
    expect(error.code).toBe("malformed_cloudevent");
    expect(error.status).toBe(400);
    expect(error.details).toEqual({ field, problem: expect.stringContaining(problem) });
  });

  test("a header that is present but empty is not the same as missing", () => {
    const error = failure(() => binary({ ...REQUIRED, id: "" }));
    expect(error.details).toEqual({ field: "id", problem: "must be a non-empty string" });
    expect(failure(() => binary({ ...REQUIRED, subject: "" })).details).toMatchObject({ field: "subject" });
  });

  test("percent-decoded invalid UTF-8 in raw header bytes is rejected", () => {
    const headers = wireHeaders({ "ce-specversion": "1.0", "ce-id": "x", "ce-source": "/s", "ce-type": "t" });
    headers.set("ce-subject", "s\u00e2\u0082"); // the first two bytes of "€"
    const error = failure(() => parseIngest(headers, new Uint8Array(), LIMITS));
    expect(error.details).toEqual({ field: "subject", problem: "is not valid UTF-8 after percent-decoding" });
  });

  test.each<[string, CloudEvent<unknown>]>([
    [
      "JSON data",
      new CloudEvent({
        id: "sdk-b1",
        source: "/sdk",
        type: "com.example",
        subject: "plain",
        datacontenttype: "application/json",
        data: { a: 1, b: ["x"] },
        myext: "v",
      }),
    ],
    [
      "text data",
      new CloudEvent({ id: "sdk-b2", source: "/sdk", type: "t", datacontenttype: "text/plain", data: "hi" }),
    ],
    [
      "binary data",
      new CloudEvent({
        id: "sdk-b3",
        source: "/sdk",
        type: "t",
        datacontenttype: "application/octet-stream",
        data: new Uint8Array([1, 2, 3]),
      }),
    ],
    ["no data", new CloudEvent({ id: "sdk-b4", source: "urn:sdk", type: "t" })],
    [
      "a non-ASCII subject",
      new CloudEvent({ id: "sdk-b5", source: "/sdk", type: "t", subject: "s€", data: { x: 1 } }),
    ],
  ])("round trip of a cloudevents SDK binary message with %s", (_label, ce) => {
    const message = HTTP.binary(ce);
    const body = message.body === undefined ? new Uint8Array() : bytes(message.body as string | Uint8Array);
    const events = parseIngest(wireHeaders(message.headers), body, LIMITS);
    expect(events).toHaveLength(1);
    const event = events[0] as InboundEvent;
    const expected = JSON.parse(HTTP.structured(ce).body as string);
    // The SDK sends a JSON Content-Type with its empty body; an event without data has no content type.
    if (message.body === undefined) delete expected.datacontenttype;
    // In binary mode the Content-Type (with its parameters) is the datacontenttype.
    else expected.datacontenttype = message.headers["content-type"];
    expect(bodyOf(event).json).toEqual(expected);
    expect(event).toMatchObject({ id: ce.id, source: ce.source, type: ce.type, subject: ce.subject ?? null });
  });
});

describe("event size", () => {
  const small: FormatLimits = { batchMaxEvents: 10, maxEventBytes: 200 };

  test("an event of exactly maxEventBytes is accepted; one byte more is 413", () => {
    const base = JSON.stringify({ ...BASE, data: "" }).length;
    const fits = { ...BASE, data: "x".repeat(small.maxEventBytes - base) };
    const [event] = parse({ "content-type": STRUCTURED }, JSON.stringify(fits), small);
    expect(Buffer.byteLength(event?.body ?? "")).toBe(small.maxEventBytes);
    const over = { ...BASE, data: "x".repeat(small.maxEventBytes - base + 1) };
    const error = failure(() => parse({ "content-type": STRUCTURED }, JSON.stringify(over), small));
    expect(error.code).toBe("payload_too_large");
    expect(error.status).toBe(413);
    expect(error.details).toEqual({ max_bytes: 200 });
  });

  test("size counts UTF-8 bytes, not characters", () => {
    const base = JSON.stringify({ ...BASE, data: "" }).length;
    // Each "€" is one UTF-16 unit but three UTF-8 bytes.
    const euros = { ...BASE, data: "€".repeat(Math.ceil((small.maxEventBytes - base) / 3) + 1) };
    expect(JSON.stringify(euros).length).toBeLessThan(small.maxEventBytes);
    const error = failure(() => parse({ "content-type": STRUCTURED }, JSON.stringify(euros), small));
    expect(error.code).toBe("payload_too_large");
  });

  test("the normalized body is measured, not the request body", () => {
    const padded = JSON.stringify({ ...BASE, data: "x" }).replaceAll(",", `,${" ".repeat(100)}`);
    expect(padded.length).toBeGreaterThan(small.maxEventBytes);
    expect(parse({ "content-type": STRUCTURED }, padded, small)).toHaveLength(1);
  });

  test("an oversized event in a batch names its index", () => {
    const events = [BASE, BASE, { ...BASE, data: "x".repeat(500) }];
    const error = failure(() => parse({ "content-type": BATCH }, JSON.stringify(events), small));
    expect(error.code).toBe("payload_too_large");
    expect(error.details).toEqual({ index: 2, max_bytes: 200 });
    expect(error.message).toContain("Event 2");
  });

  test("an oversized binary event is 413", () => {
    const headers = { "ce-specversion": "1.0", "ce-id": "x", "ce-source": "/s", "ce-type": "t" };
    const error = failure(() => parse(headers, new Uint8Array(300), small));
    expect(error.code).toBe("payload_too_large");
  });
});
