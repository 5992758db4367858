/**
 * The connector's HTTP client for svc (it never reads svc's database): the Knative source
 * config, long-poll and the SSE stream, and ingest for reply events. Every failure becomes an
 * `SvcError` with the HTTP status (0 for a network error), svc's error code and `Retry-After`.
 */
import { VERSION } from "../src/version.ts";
import { backoffMs, retryAfterMs } from "./backoff.ts";

export const USER_AGENT = `svc-connector/${VERSION}`;

export interface SourceConfig {
  mode: "auto" | "stream" | "poll";
  poll_interval_seconds: number;
  stream_heartbeat_seconds: number;
  refresh_after_seconds: number;
}

export interface PollPage {
  data: Record<string, unknown>[];
  next_cursor: string;
  has_more: boolean;
}

export interface Position {
  cursor: string | undefined;
  /** Without a cursor: start at the newest event (`now`) or the oldest retained one. */
  from: "now" | "earliest";
}

export class SvcError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterMs: number | undefined = undefined,
  ) {
    super(message);
  }

  get network(): boolean {
    return this.status === 0;
  }

  /** The credential is wrong or lacks the scope (or the plan gate): retrying soon will not help. */
  get auth(): boolean {
    return this.status === 401 || this.status === 402 || this.status === 403;
  }

  /**
   * The wait before retry `attempt` (1 = the first): svc's `Retry-After` (at least 100 ms), else
   * backoff from 500 ms up to 30 s, or up to 60 s while svc refuses the credential.
   */
  retryDelayMs(attempt: number): number {
    if (this.retryAfterMs !== undefined) return Math.max(this.retryAfterMs, 100);
    return backoffMs(attempt, 500, this.auth ? 60_000 : 30_000);
  }
}

const POLL_WAIT_SECONDS = 30;
const REQUEST_TIMEOUT_MS = 15_000;

export class SvcClient {
  constructor(
    private readonly base: string,
    private readonly apiKey: string,
    private readonly filter: string | undefined,
  ) {}

  async sourceConfig(signal?: AbortSignal): Promise<SourceConfig> {
    const res = await this.get("/api/v1/knative/source-config", {}, REQUEST_TIMEOUT_MS, signal);
    const body = (await res.json()) as SourceConfig;
    if (!["auto", "stream", "poll"].includes(body.mode)) {
      throw new SvcError(200, "bad_source_config", `unknown source mode '${String(body.mode)}'`);
    }
    return body;
  }

  /** One long-poll: returns as soon as svc has events, or empty after `wait` seconds. */
  async poll(
    position: Position,
    options: { wait?: number; limit: number; signal?: AbortSignal },
  ): Promise<PollPage> {
    const wait = options.wait ?? POLL_WAIT_SECONDS;
    const res = await this.get(
      "/api/v1/cloudevents/poll",
      { ...this.positionQuery(position), wait: String(wait), limit: String(options.limit) },
      wait * 1000 + REQUEST_TIMEOUT_MS,
      options.signal,
    );
    const text = await res.text();
    try {
      return JSON.parse(text) as PollPage;
    } catch {
      throw new SvcError(res.status, "bad_response", "poll answered with a body that is not JSON");
    }
  }

  /** Opens the SSE stream; the caller reads `response.body`. `Last-Event-ID` carries the cursor. */
  async stream(position: Position, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (position.cursor !== undefined) headers["last-event-id"] = position.cursor;
    return this.get("/api/v1/cloudevents/stream", this.positionQuery(position), undefined, signal, headers);
  }

  /** Posts one structured-mode event to ingest with the connector's ingest token. */
  async ingest(token: string, event: Record<string, unknown>): Promise<void> {
    const url = `${this.base}/api/v1/cloudevents/ingest/${encodeURIComponent(token)}`;
    const res = await this.send(url, {
      method: "POST",
      headers: { "content-type": "application/cloudevents+json; charset=utf-8", "user-agent": USER_AGENT },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.body?.cancel();
  }

  private positionQuery(position: Position): Record<string, string> {
    const query: Record<string, string> = {};
    if (this.filter !== undefined) query.filter = this.filter;
    if (position.cursor !== undefined) query.cursor = position.cursor;
    else if (position.from === "now") query.from = "now";
    return query;
  }

  private async get(
    path: string,
    query: Record<string, string>,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    const search = new URLSearchParams(query).toString();
    const url = `${this.base}${path}${search ? `?${search}` : ""}`;
    return this.send(url, {
      headers: { authorization: `Bearer ${this.apiKey}`, "user-agent": USER_AGENT, ...extraHeaders },
      signal: timeoutMs === undefined ? signal : withTimeout(timeoutMs, signal),
    });
  }

  private async send(url: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: "manual" });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new SvcError(
        0,
        error instanceof Error && error.name === "TimeoutError" ? "timeout" : "network",
        message,
      );
    }
    if (res.status >= 200 && res.status < 300) return res;
    let code = `http_${res.status}`;
    let message = `svc answered ${res.status}`;
    try {
      const body = (await res.json()) as { error?: { code?: string; message?: string } };
      if (body.error?.code) code = body.error.code;
      if (body.error?.message) message = body.error.message;
    } catch {
      // Not svc's error envelope (a proxy in between): the status says enough.
    }
    throw new SvcError(res.status, code, message, retryAfterMs(res.headers.get("retry-after")));
  }
}

function withTimeout(ms: number, signal: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}
