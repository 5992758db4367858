/**
 * The connector's pure parts, where a rule is subtle: the SSE parser (line endings, chunk
 * boundaries), binary-mode encoding read back by the cloudevents SDK, the contiguous-commit
 * window, and configuration validation (also through the real CLI: one line per problem, exit 1).
 */
import { describe, expect, test } from "bun:test";
import { HTTP } from "cloudevents";
import { resolveConfig } from "../../connector/config.ts";
import { encodeBinary, encodeStructured, headerValue } from "../../connector/encode.ts";
import { type SseMessage, SseParser } from "../../connector/sse.ts";
import { CursorWindow } from "../../connector/window.ts";
import { svc } from "../support/harness.ts";

describe("SSE parser", () => {
  const stream =
    '\uFEFF: stream open\r\n\r\nid: c1\ndata: {"a":1}\n\n: heartbeat\r\rid: c2\r\ndata: line one\r\ndata:line two\r\nevent: x\r\n\r\n' +
    "data: no id change\n\nid\ndata: empty id\n\nretry: 1500\nunknown: field\ndata: last\n\n";
  const expected: SseMessage[] = [
    { id: "c1", event: undefined, data: '{"a":1}' },
    { id: "c2", event: "x", data: "line one\nline two" },
    { id: "c2", event: undefined, data: "no id change" },
    { id: "", event: undefined, data: "empty id" },
    { id: "", event: undefined, data: "last" },
  ];

  function parse(chunks: string[]) {
    const messages: SseMessage[] = [];
    const comments: string[] = [];
    const retries: number[] = [];
    const parser = new SseParser({
      onMessage: (m) => messages.push(m),
      onComment: (c) => comments.push(c),
      onRetry: (ms) => retries.push(ms),
    });
    for (const chunk of chunks) parser.feed(chunk);
    return { messages, comments, retries };
  }

  test("CRLF, CR and LF line ends; comments; multi-line data; id kept until changed", () => {
    const out = parse([stream]);
    expect(out.messages).toEqual(expected);
    expect(out.comments).toEqual(["stream open", "heartbeat"]);
    expect(out.retries).toEqual([1500]);
  });

  test("the same messages whatever the chunk boundaries (every split point, and byte by byte)", () => {
    for (let at = 0; at <= stream.length; at++) {
      expect(parse([stream.slice(0, at), stream.slice(at)]).messages).toEqual(expected);
    }
    expect(parse([...stream]).messages).toEqual(expected);
  });
});

describe("binary mode", () => {
  const base = {
    specversion: "1.0",
    id: "e-1",
    source: "/orgs/acme/alerts/alt_1",
    type: "run.service.alert.fired.v1",
  };

  function roundTrip(event: Record<string, unknown>, overrides: Record<string, string> = {}) {
    const request = encodeBinary({ event }, overrides);
    const body =
      request.body instanceof Uint8Array
        ? Buffer.from(request.body).toString("latin1")
        : (request.body ?? "");
    const parsed = HTTP.toEvent({ headers: request.headers, body }) as any;
    return { request, parsed };
  }

  test("JSON data becomes the body; attributes and extensions become ce-* headers", () => {
    const event = {
      ...base,
      time: "2024-05-01T10:00:00.5+02:00",
      subject: "alt_1",
      datacontenttype: "application/json",
      data: { id: "alt_1", summary: "Disk 95 % full" },
      channelid: "chn_1",
      attempt: 3,
      urgent: true,
    };
    const { request, parsed } = roundTrip(event, { cluster: "eu" });
    expect(request.headers).toEqual({
      "ce-specversion": "1.0",
      "ce-id": "e-1",
      "ce-source": "/orgs/acme/alerts/alt_1",
      "ce-type": "run.service.alert.fired.v1",
      "ce-time": "2024-05-01T10:00:00.5+02:00",
      "ce-subject": "alt_1",
      "ce-channelid": "chn_1",
      "ce-attempt": "3",
      "ce-urgent": "true",
      "ce-cluster": "eu",
      "content-type": "application/json",
    });
    expect(JSON.parse(request.body as string)).toEqual(event.data);
    expect(parsed.data).toEqual(event.data);
    expect(parsed.cluster).toBe("eu");
    expect(parsed.channelid).toBe("chn_1");
  });

  test("no datacontenttype: JSON data (a string too) is sent as JSON", () => {
    const { request, parsed } = roundTrip({ ...base, data: "just text" });
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.body).toBe('"just text"');
    expect(parsed.data).toBe("just text");
  });

  test("a text type keeps its string as is; data_base64 is sent as bytes; no data, no body", () => {
    const text = encodeBinary({ event: { ...base, datacontenttype: "text/plain", data: "héllo" } }, {});
    expect(text).toEqual({
      headers: expect.objectContaining({ "content-type": "text/plain" }),
      body: "héllo",
    });
    const bytes = encodeBinary(
      { event: { ...base, datacontenttype: "image/png", data_base64: "AAEC/w==" } },
      {},
    );
    expect(bytes.headers["content-type"]).toBe("image/png");
    expect([...(bytes.body as Uint8Array)]).toEqual([0, 1, 2, 255]);
    const untyped = encodeBinary({ event: { ...base, data_base64: "AAE=" } }, {});
    expect(untyped.headers["content-type"]).toBe("application/octet-stream");
    const none = encodeBinary({ event: base }, {});
    expect(none.body).toBeUndefined();
    expect(none.headers["content-type"]).toBeUndefined();
    expect(none.headers["ce-time"]).toBeUndefined();
  });

  test("header values are percent-encoded as the HTTP binding requires", () => {
    expect(headerValue("plain-ASCII_value/1")).toBe("plain-ASCII_value/1");
    expect(headerValue('a b"c%d')).toBe("a%20b%22c%25d");
    expect(headerValue("Grüße €")).toBe("Gr%C3%BC%C3%9Fe%20%E2%82%AC");
    expect(headerValue("tab\there")).toBe("tab%09here");
    expect(decodeURIComponent(headerValue("naïve 🚀 %"))).toBe("naïve 🚀 %");
  });

  test("structured mode sends the event as streamed unless overrides change it", () => {
    const raw = JSON.stringify({ ...base, data: { a: 1 } });
    expect(encodeStructured({ event: JSON.parse(raw), raw }, {}).body).toBe(raw);
    const changed = encodeStructured({ event: JSON.parse(raw), raw }, { cluster: "eu" });
    expect(JSON.parse(changed.body as string)).toEqual({ ...base, data: { a: 1 }, cluster: "eu" });
    expect(changed.headers["content-type"]).toBe("application/cloudevents+json; charset=utf-8");
  });
});

describe("commit window", () => {
  test("the cursor moves only over a contiguous run of finished entries", () => {
    const commits: string[] = [];
    const window = new CursorWindow(100, (cursor) => commits.push(cursor));
    const [a, b, c] = [window.add("c1"), window.add("c2"), window.add("c3")];
    window.complete(c as any);
    window.complete(b as any);
    expect(commits).toEqual([]);
    window.complete(a as any);
    expect(commits).toEqual(["c3"]);
    // A poll page: events without cursors, then the page's next_cursor as a finished marker.
    const e1 = window.add(undefined);
    const e2 = window.add(undefined);
    window.add("page-2", true);
    window.complete(e2);
    expect(commits).toEqual(["c3"]);
    window.complete(e1);
    expect(commits).toEqual(["c3", "page-2"]);
    expect(window.pending).toBe(0);
  });

  test("room() waits while the window is full", async () => {
    const window = new CursorWindow(2, () => {});
    const first = window.add("1");
    window.add("2");
    let roomy = false;
    const stop = new AbortController();
    const waiting = window.room(stop.signal).then(() => {
      roomy = true;
    });
    await Bun.sleep(5);
    expect(roomy).toBe(false);
    window.complete(first);
    await waiting;
    expect(roomy).toBe(true);
  });
});

describe("configuration", () => {
  const env = { SVC_URL: "http://127.0.0.1:8080", SVC_API_KEY: "svc_x", K_SINK: "http://sink.local/" };

  test("env is enough; flags win over env; defaults", () => {
    const resolved = resolveConfig({}, env, false);
    expect(resolved).toMatchObject({
      ok: true,
      config: {
        url: "http://127.0.0.1:8080",
        apiKey: "svc_x",
        sink: "http://sink.local/",
        start: "now",
        structured: false,
        concurrency: 16,
        sinkTimeoutMs: 30_000,
        overrides: {},
        log: { level: "info", format: "json" },
      },
    });
    const flagged = resolveConfig({ url: "https://svc.example/", sink: "https://other/" }, env, false);
    expect(flagged).toMatchObject({
      ok: true,
      config: { url: "https://svc.example", sink: "https://other/" },
    });
  });

  test("K_CE_OVERRIDES: empty is fine, extensions are taken, core attributes are refused", () => {
    for (const empty of ["", "{}", '{"extensions":{}}', '{"extensions":null}']) {
      expect(resolveConfig({}, { ...env, K_CE_OVERRIDES: empty }, false)).toMatchObject({
        ok: true,
        config: { overrides: {} },
      });
    }
    expect(
      resolveConfig({}, { ...env, K_CE_OVERRIDES: '{"extensions":{"cluster":"eu","team":"sre"}}' }, false),
    ).toMatchObject({ ok: true, config: { overrides: { cluster: "eu", team: "sre" } } });
    for (const core of [
      "type",
      "source",
      "id",
      "specversion",
      "time",
      "subject",
      "datacontenttype",
      "data",
    ]) {
      expect(
        resolveConfig({}, { ...env, K_CE_OVERRIDES: JSON.stringify({ extensions: { [core]: "x" } }) }, false),
      ).toEqual({
        ok: false,
        problems: [`K_CE_OVERRIDES: '${core}' is a core attribute and cannot be overridden`],
      });
    }
  });

  test("the CLI prints one line per problem on stderr and exits 1", async () => {
    const result = await svc(
      ["connector", "--concurrency", "0", "--start", "yesterday", "--filter", "a.*,,b"],
      {
        SVC_URL: "",
        SVC_API_KEY: "",
        K_SINK: "not a url",
        K_CE_OVERRIDES: '{"extensions":{"source":"/x"}}',
        K_SINK_TIMEOUT: "-1",
        K_CA_CERTS: "not pem",
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toEqual([
      "error: --url (or SVC_URL) is required",
      "error: --api-key (or SVC_API_KEY) is required: an API key with scope events",
      "error: --sink (or K_SINK) must be an http(s) URL, got 'not a url'",
      "error: --filter must not contain an empty glob",
      "error: --start must be now or earliest, got 'yesterday'",
      "error: --concurrency must be an integer from 1 to 1024, got '0'",
      "error: K_CE_OVERRIDES: 'source' is a core attribute and cannot be overridden",
      "error: K_CA_CERTS must hold one or more PEM certificates (-----BEGIN CERTIFICATE----- …)",
      "error: K_SINK_TIMEOUT must be a number of seconds above 0 and at most 3600, got '-1'",
    ]);
  });

  test("a state file that is not the connector's is refused at start", async () => {
    const path = `/tmp/svc-connector-bad-state-${process.pid}.json`;
    await Bun.write(path, "not json");
    const resolved = resolveConfig({ stateFile: path }, env, false);
    expect(resolved).toEqual({
      ok: false,
      problems: [`--state-file: ${path} is not a connector state file (not JSON)`],
    });
    const missingDir = resolveConfig({ stateFile: "/nonexistent-dir/state.json" }, env, false);
    expect(missingDir).toEqual({
      ok: false,
      problems: ["--state-file: directory /nonexistent-dir does not exist"],
    });
  });
});
