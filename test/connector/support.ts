/**
 * Helpers for the connector tests: a real CloudEvents sink (a `Bun.serve` that parses every
 * request with the cloudevents SDK's `HTTP.toEvent` and answers as the test says), the real
 * connector process (`bun cli/main.ts connector …`) with its JSON log, and event set-up through
 * svc's HTTP API.
 */

import { connect, createServer, type Server as NetServer, type Socket } from "node:net";
import { join } from "node:path";
import type { Server } from "bun";
import { type CloudEventV1, HTTP } from "cloudevents";
import { type Client, ROOT, type TestServer } from "../support/harness.ts";

const CLI = join(ROOT, "cli/main.ts");

export interface Received {
  at: number;
  headers: Record<string, string>;
  body: string;
  /** As the SDK parsed it; null when it could not (see `error`). */
  event: CloudEventV1<unknown> | null;
  error: string | null;
  /** What the sink answered. */
  status: number;
}

/** Decides the sink's answer; undefined means 202 Accepted. */
export type Behaviour = (
  request: Received,
  attempt: number,
) => Response | undefined | Promise<Response | undefined>;

export class Sink {
  readonly received: Received[] = [];
  behaviour: Behaviour = () => undefined;
  private readonly attempts = new Map<string, number>();
  private waiters: (() => void)[] = [];

  private constructor(private readonly server: Server<undefined>) {}

  static start(tls?: { cert: string; key: string }): Sink {
    let sink: Sink | null = null;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      ...(tls ? { tls } : {}),
      fetch: async (request) => (sink as Sink).handle(request),
    });
    sink = new Sink(server);
    return sink;
  }

  get url(): string {
    return `${this.server.protocol}://127.0.0.1:${this.server.port}/events`;
  }

  private async handle(request: Request): Promise<Response> {
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = await request.text();
    let event: CloudEventV1<unknown> | null = null;
    let error: string | null = null;
    try {
      const parsed = HTTP.toEvent({ headers, body });
      event = (Array.isArray(parsed) ? parsed[0] : parsed) ?? null;
    } catch (caught) {
      error = (caught as Error).message;
    }
    const received: Received = { at: Date.now(), headers, body, event, error, status: 0 };
    const id = event?.id ?? "";
    const attempt = (this.attempts.get(id) ?? 0) + 1;
    this.attempts.set(id, attempt);
    const answer = (await this.behaviour(received, attempt)) ?? new Response(null, { status: 202 });
    received.status = answer.status;
    this.received.push(received);
    for (const wake of this.waiters.splice(0)) wake();
    return answer;
  }

  /** Ids the sink answered 2xx to, with how many times. */
  accepted(): Map<string, number> {
    const out = new Map<string, number>();
    for (const r of this.received) {
      if (r.status >= 200 && r.status < 300 && r.event) out.set(r.event.id, (out.get(r.event.id) ?? 0) + 1);
    }
    return out;
  }

  async until(check: () => boolean, timeoutMs = 10_000, what = "the sink"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what} (received ${this.received.length})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  stop(): void {
    this.server.stop(true);
  }
}

/** A running `svc connector` and its log, one parsed JSON object per line. */
export class ConnectorProcess {
  readonly logs: Record<string, any>[] = [];
  stderr = "";
  private waiters: (() => void)[] = [];

  private constructor(readonly proc: ReturnType<typeof Bun.spawn>) {
    void this.readLines(proc.stdout as ReadableStream<Uint8Array>);
    void new Response(proc.stderr as ReadableStream<Uint8Array>).text().then((text) => {
      this.stderr = text;
    });
  }

  static start(args: string[], env: Record<string, string> = {}): ConnectorProcess {
    const proc = Bun.spawn([process.execPath, CLI, "connector", ...args], {
      cwd: ROOT,
      env: { ...process.env, SVC_LOG_FORMAT: "json", SVC_LOG_LEVEL: "info", ...env },
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    return new ConnectorProcess(proc);
  }

  private async readLines(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of stream) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          this.logs.push(JSON.parse(line));
        } catch {
          this.logs.push({ msg: line, unparsed: true });
        }
        newline = buffered.indexOf("\n");
      }
      for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /** The first log line that matches, waiting for it up to `timeoutMs`. */
  async waitForLog(
    match: (line: Record<string, any>) => boolean,
    timeoutMs = 10_000,
    what = "a log line",
  ): Promise<Record<string, any>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.logs.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0 || this.proc.exitCode !== null) {
        throw new Error(
          `timed out waiting for ${what}; log:\n${this.logs.map((l) => JSON.stringify(l)).join("\n")}\n${this.stderr}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  waitForMsg(msg: string, timeoutMs = 10_000): Promise<Record<string, any>> {
    return this.waitForLog((l) => l.msg === msg, timeoutMs, `'${msg}'`);
  }

  count(msg: string): number {
    return this.logs.filter((l) => l.msg === msg).length;
  }

  /** The health listener's base URL (from the start line). */
  async healthBase(): Promise<string> {
    const start = await this.waitForMsg("connector starting");
    return `http://${start.health_listen}`;
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): Promise<number> {
    if (this.proc.exitCode === null) this.proc.kill(signal);
    return this.proc.exited;
  }

  dump(): string {
    return this.logs.map((l) => JSON.stringify(l)).join("\n");
  }
}

/** Creates an API key through the API; returns its secret. */
export async function eventsKey(client: Client, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post("/api/v1/api-keys", {
    name: `connector ${Math.random().toString(36).slice(2, 8)}`,
    scopes: ["events"],
    service: true,
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.body.secret as string;
}

let counter = 0;

/** Ingests `n` structured events of `type` in batches; returns their ids in order. */
export async function fire(
  server: Pick<TestServer, "base" | "init">,
  n: number,
  type = "com.example.test",
  extra: (i: number) => Record<string, unknown> = () => ({}),
): Promise<string[]> {
  const token = server.init?.ingest_token.token as string;
  const ids: string[] = [];
  for (let i = 0; i < n; i += 256) {
    const batch = Array.from({ length: Math.min(256, n - i) }, (_, j) => {
      counter += 1;
      const id = `t-${process.pid}-${Date.now().toString(36)}-${counter}`;
      ids.push(id);
      return {
        specversion: "1.0",
        id,
        source: "/tests/connector",
        type,
        data: { n: i + j },
        ...extra(i + j),
      };
    });
    const res = await fetch(`${server.base}/api/v1/cloudevents/ingest/${token}`, {
      method: "POST",
      headers: { "content-type": "application/cloudevents-batch+json" },
      body: JSON.stringify(batch),
    });
    if (res.status !== 202) throw new Error(`ingest: ${res.status} ${await res.text()}`);
  }
  return ids;
}

/** Arguments for a connector against `server` and `sink`. */
export function connectorArgs(server: TestServer, key: string, sink: Sink, extra: string[] = []): string[] {
  return [
    "--url",
    server.base,
    "--api-key",
    key,
    "--sink",
    sink.url,
    "--health-listen",
    "127.0.0.1:0",
    ...extra,
  ];
}

export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/**
 * A TCP proxy in front of svc whose open connections can go silent: after `silence()` they stay
 * open but pass none of svc's bytes (a dead path that sends no reset, as a stuck middlebox or a
 * lost route does); connections opened afterwards pass everything.
 */
export class SilencingProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();

  private constructor(private readonly server: NetServer) {}

  static async start(target: string): Promise<SilencingProxy> {
    const { hostname, port } = new URL(target);
    let proxy: SilencingProxy | null = null;
    const server = createServer((client) => {
      const upstream = connect(Number(port), hostname);
      const pair = { client, upstream };
      (proxy as SilencingProxy).pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        (proxy as SilencingProxy).pairs.delete(pair);
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    proxy = new SilencingProxy(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get base(): string {
    const address = this.server.address() as { port: number };
    return `http://127.0.0.1:${address.port}`;
  }

  /** Every connection open now stops passing svc's bytes to the client. */
  silence(): void {
    for (const { client, upstream } of this.pairs) {
      upstream.unpipe(client);
      upstream.pause();
    }
  }

  stop(): void {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.server.close();
  }
}
