/**
 * Shared helpers for the CloudEvents consumer tests: ingest through the real ingest endpoint,
 * poll through the real HTTP API, and read Server-Sent Events with a real `curl -N`.
 */
import { expect } from "bun:test";
import type { Client, Response2, TestServer } from "../support/harness.ts";

export const BATCH = "application/cloudevents-batch+json";
export const STRUCTURED = "application/cloudevents+json";

let counter = 0;

/** A structured CloudEvent with a fresh id. */
export function ce(type: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  return {
    specversion: "1.0",
    id: `ev-${Date.now().toString(36)}-${counter}`,
    source: "/tests/consumers",
    type,
    ...extra,
  };
}

/** Ingests events in batch mode (one request); returns the events sent. */
export async function ingest(
  server: TestServer,
  events: Record<string, unknown>[],
  token = server.init?.ingest_token.token as string,
): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${server.base}/api/v1/cloudevents/ingest/${token}`, {
    method: "POST",
    headers: { "content-type": BATCH },
    body: JSON.stringify(events),
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`ingest: ${res.status} ${text}`);
  expect(JSON.parse(text)).toEqual({ accepted: events.length });
  return events;
}

/** Ingests `n` events of `type` (in batches of at most 256). */
export async function ingestMany(
  server: TestServer,
  type: string,
  n: number,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i += 256) {
    const batch = Array.from({ length: Math.min(256, n - i) }, () => ce(type, extra));
    all.push(...(await ingest(server, batch)));
  }
  return all;
}

export interface PollPage {
  data: Record<string, any>[];
  next_cursor: string;
  has_more: boolean;
}

export function pollPath(query: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const qs = params.toString();
  return `/api/v1/cloudevents/poll${qs ? `?${qs}` : ""}`;
}

/** One poll that must succeed (wait defaults to 0 so tests never hang). */
export async function poll(
  client: Client,
  query: Record<string, string | number | undefined> = {},
): Promise<PollPage> {
  const res = await client.get(pollPath({ wait: 0, ...query }));
  if (res.status !== 200) throw new Error(`poll: ${res.status} ${res.text}`);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  expect(typeof res.body.next_cursor).toBe("string");
  expect(typeof res.body.has_more).toBe("boolean");
  expect(Array.isArray(res.body.data)).toBe(true);
  return res.body as PollPage;
}

/** A cursor at the newest event: what follows it is what a test caused. */
export async function mark(client: Client): Promise<string> {
  const page = await poll(client, { from: "now" });
  expect(page.data).toEqual([]);
  return page.next_cursor;
}

/** Polls from `cursor` (following next_cursor) until `n` events arrived or the deadline passed. */
export async function collect(
  client: Client,
  cursor: string,
  n: number,
  query: Record<string, string | number | undefined> = {},
  timeoutMs = 10_000,
): Promise<{ events: Record<string, any>[]; cursor: string }> {
  const deadline = Date.now() + timeoutMs;
  const events: Record<string, any>[] = [];
  let at = cursor;
  while (events.length < n && Date.now() < deadline) {
    const page = await poll(client, { ...query, cursor: at, wait: 1 });
    events.push(...page.data);
    at = page.next_cursor;
  }
  return { events, cursor: at };
}

export function expectError(res: Response2, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(typeof res.body.error.message).toBe("string");
}

/** Creates an API key through the API; returns its secret. */
export async function createKey(client: Client, body: Record<string, unknown>): Promise<string> {
  const res = await client.post("/api/v1/api-keys", body);
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.body.secret as string;
}

export interface SseEvent {
  id: string | null;
  /** Every `data:` line of the frame. */
  dataLines: string[];
  data: Record<string, any>;
  raw: string;
}

/**
 * Parses a growing text/event-stream: frames end at a blank line; comment lines (`: …`)
 * are kept with the time they arrived.
 */
export class SseParser {
  readonly events: SseEvent[] = [];
  readonly comments: { text: string; at: number }[] = [];
  private buffer = "";
  private waiters: (() => void)[] = [];

  feed(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end < 0) break;
      const raw = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.frame(raw);
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  private frame(raw: string): void {
    const lines = raw.split("\n");
    let id: string | null = null;
    const dataLines: string[] = [];
    for (const line of lines) {
      if (line.startsWith(":")) this.comments.push({ text: line, at: Date.now() });
      else if (line.startsWith("id: ")) id = line.slice(4);
      else if (line.startsWith("data: ")) dataLines.push(line.slice(6));
      else if (line !== "") throw new Error(`unexpected SSE line: ${JSON.stringify(line)}`);
    }
    if (dataLines.length > 0) {
      this.events.push({ id, dataLines, data: JSON.parse(dataLines.join("\n")), raw });
    }
  }

  /** Resolves once `check()` holds; throws after `timeoutMs`. */
  async until(check: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  waitForEvents(n: number, timeoutMs = 10_000): Promise<void> {
    return this.until(() => this.events.length >= n, timeoutMs, `${n} events (have ${this.events.length})`);
  }
}

/** `curl -sN` on the stream endpoint: a real SSE client outside this process. */
export class CurlStream {
  readonly parser = new SseParser();
  readonly exited: Promise<number>;
  private readonly proc: ReturnType<typeof Bun.spawn>;
  stdout = "";

  constructor(url: string, credential: string, headers: Record<string, string> = {}) {
    const args = ["curl", "-sN", "-H", `Authorization: Bearer ${credential}`];
    for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
    args.push(url);
    this.proc = Bun.spawn(args, { stdout: "pipe", stderr: "ignore", stdin: "ignore" });
    this.exited = this.proc.exited;
    void this.pump();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    const reader = (this.proc.stdout as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const text = decoder.decode(value, { stream: true });
      this.stdout += text;
      this.parser.feed(text);
    }
  }

  get events(): SseEvent[] {
    return this.parser.events;
  }

  /** Resolves once the server sent its opening comment: the stream is registered. */
  opened(timeoutMs = 10_000): Promise<void> {
    return this.parser.until(
      () => this.parser.comments.some((c) => c.text === ": stream open"),
      timeoutMs,
      "the stream to open",
    );
  }

  waitForEvents(n: number, timeoutMs = 10_000): Promise<void> {
    return this.parser.waitForEvents(n, timeoutMs);
  }

  get running(): boolean {
    return this.proc.exitCode === null;
  }

  async close(): Promise<void> {
    if (this.proc.exitCode === null) this.proc.kill();
    await this.exited;
  }
}

export function streamUrl(server: TestServer, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  const qs = params.toString();
  return `${server.base}/api/v1/cloudevents/stream${qs ? `?${qs}` : ""}`;
}

/** Waits until `check` holds, polling every 50 ms. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "it") {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Log lines of a server's captured JSON log with this `msg`. */
export function logLines(server: TestServer, msg: string): Record<string, any>[] {
  return server.output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, any>;
      } catch {
        return {};
      }
    })
    .filter((l) => l.msg === msg);
}
