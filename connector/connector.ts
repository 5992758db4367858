/**
 * `svc connector` (DESIGN §8): reads a svc server's CloudEvents (SSE stream or long-poll, as the
 * org's source config says), delivers each to the sink, forwards the sink's replies to ingest,
 * and saves the cursor only over a contiguous run of events the sink accepted.
 *
 * Two positions are kept. The read position is where the next stream or poll starts: it moves
 * as events are read, so a reconnect or a change of mode neither re-reads nor skips. The
 * committed cursor (CursorWindow) is what the state file holds: it moves only past events that
 * were delivered (or skipped for good), so a crash re-delivers, never loses.
 */
import type { Logger } from "../src/log.ts";
import { backoffMs, sleep } from "./backoff.ts";
import type { ConnectorConfig } from "./config.ts";
import type { StreamedEvent } from "./encode.ts";
import { startHealthServer } from "./health.ts";
import { Metrics } from "./metrics.ts";
import { ReplyForwarder } from "./replies.ts";
import { SinkClient } from "./sink.ts";
import { type SseMessage, SseParser } from "./sse.ts";
import { StateFile } from "./state.ts";
import { type PollPage, type Position, type SourceConfig, SvcClient, SvcError } from "./svc.ts";
import { CursorWindow, Slots } from "./window.ts";

const PAGE_LIMIT = 1000;
const ERROR_BASE_MS = 500;
const ERROR_CAP_MS = 30_000;
/** The first fallback polls for 5 to 10 s (or `Retry-After`), doubling up to the cap. */
const FALLBACK_BASE_MS = 10_000;
const FALLBACK_CAP_MS = 300_000;
const SOURCE_RETRY_MS = 30_000;

export class Connector {
  readonly metrics: Metrics;
  private readonly stopper = new AbortController();
  private readonly svc: SvcClient;
  private readonly sink: SinkClient;
  private readonly replies: ReplyForwarder;
  private readonly window: CursorWindow;
  private readonly slots: Slots;
  private readonly state: StateFile | null;
  private readonly inFlight = new Set<Promise<void>>();
  private position: Position;
  private source: SourceConfig | null = null;
  private session: AbortController | null = null;
  private mode: "stream" | "poll" | "none" = "none";
  private fallbackUntil = 0;
  private fallbacks = 0;
  private consecutiveErrors = 0;
  private svcAuthFailing = false;
  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  private exitCode = 0;

  constructor(
    private readonly config: ConnectorConfig,
    private readonly log: Logger,
  ) {
    this.metrics = new Metrics(() => ({
      ready: this.readiness().ready,
      paused: this.sink.isPaused,
      mode: this.mode,
      inFlight: this.slots.inUse,
      pending: this.window.pending,
      stateWrites: this.state?.writes ?? 0,
    }));
    this.svc = new SvcClient(config.url, config.apiKey, config.filter);
    this.replies = new ReplyForwarder(this.svc, config.ingestToken, log, this.metrics, this.stopper.signal);
    this.sink = new SinkClient(config, log, this.metrics, this.replies, this.stopper.signal);
    this.slots = new Slots(config.concurrency);
    this.state = config.stateFile
      ? new StateFile(config.stateFile, config.url, 100, (error) =>
          log.error("state file write failed: retrying", { error: error.message }),
        )
      : null;
    this.window = new CursorWindow(Math.max(2 * PAGE_LIMIT, config.concurrency * 64), (cursor) => {
      this.state?.save(cursor);
    });
    this.position = { cursor: undefined, from: config.start };
  }

  /** Asks the connector to stop: reading ends, the requests in flight finish, the cursor is saved. */
  stop(reason: string): void {
    if (this.stopper.signal.aborted) return;
    this.log.info("stopping", { reason, in_flight: this.slots.inUse });
    this.stopper.abort();
  }

  readiness(): { ready: boolean; reasons: string[] } {
    const reasons: string[] = [];
    if (this.source === null) reasons.push("source config not read yet");
    if (this.sink.isPaused) reasons.push("sink refuses the connector (401/403)");
    if (this.svcAuthFailing) reasons.push("svc refuses the API key");
    if (this.replies.authFailing) reasons.push("svc refuses the ingest token");
    return { ready: reasons.length === 0, reasons };
  }

  /** Runs until stopped; resolves with the exit code. */
  async run(): Promise<number> {
    const stop = this.stopper.signal;
    let health: ReturnType<typeof startHealthServer> | null = null;
    if (this.config.healthListen) {
      const { hostname, port } = this.config.healthListen;
      try {
        health = startHealthServer(this.config.healthListen, {
          ready: () => this.readiness(),
          metrics: () => this.metrics.render(),
        });
      } catch (error) {
        this.log.error("cannot serve --health-listen", {
          listen: `${hostname}:${port}`,
          error: error instanceof Error ? error.message : String(error),
        });
        return 1;
      }
    }

    const saved = this.state?.load() ?? null;
    if (saved) {
      this.position = { cursor: saved.cursor, from: this.config.start };
      this.window.committed = saved.cursor;
    }
    this.log.info("connector starting", {
      url: this.config.url,
      sink: this.config.sink,
      filter: this.config.filter ?? null,
      encoding: this.config.structured ? "structured" : "binary",
      concurrency: this.config.concurrency,
      state_file: this.config.stateFile ?? null,
      resume: saved ? "saved cursor" : `no saved cursor: from ${this.config.start}`,
      overrides: Object.keys(this.config.overrides),
      replies: this.config.ingestToken ? "forwarded" : "dropped (no ingest token)",
      ...(health ? { health_listen: `${health.hostname}:${health.port}` } : {}),
    });
    if (!this.state) {
      this.log.warn("no --state-file: the position lives in memory only; a restart starts again at --start");
    }

    await this.loadSource(stop);
    while (!stop.aborted) {
      const session = new AbortController();
      this.session = session;
      const signal = AbortSignal.any([stop, session.signal]);
      let streaming = false;
      try {
        if (this.position.cursor === undefined) {
          await this.anchor(signal);
        } else if (this.currentMode() === "stream") {
          streaming = true;
          await this.streamSession(signal);
        } else {
          await this.pollSession(signal);
        }
      } catch (error) {
        await this.onConsumeError(error, signal, streaming);
      }
    }

    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    await Promise.all([...this.inFlight]);
    this.state?.flush();
    this.log.info("stopped", {
      committed: this.window.committed !== undefined,
      uncommitted: this.window.pending,
      delivered: this.metrics.delivered,
    });
    health?.stop(true);
    return this.exitCode;
  }

  /** The mode to consume in now: the source config's, with auto falling back to poll for a while. */
  private currentMode(): "stream" | "poll" {
    const mode = this.source?.mode ?? "auto";
    if (mode === "auto") return Date.now() < this.fallbackUntil ? "poll" : "stream";
    return mode;
  }

  // ------------------------------------------------------------------------------------------
  // Source config

  private async loadSource(stop: AbortSignal): Promise<void> {
    for (let attempt = 1; !stop.aborted; attempt++) {
      try {
        this.source = await this.svc.sourceConfig(stop);
        this.svcAuthFailing = false;
        this.log.info("source config read", { ...this.source });
        this.scheduleRefresh(this.source.refresh_after_seconds * 1000);
        return;
      } catch (error) {
        if (stop.aborted) return;
        if (error instanceof SvcError && error.auth) this.svcAuthFailing = true;
        const delay = svcErrorDelay(error, attempt);
        this.log.error("reading the source config failed: retrying", {
          ...describe(error),
          retry_in_ms: delay,
        });
        await sleep(delay, stop);
      }
    }
  }

  private scheduleRefresh(ms: number): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => void this.refreshSource(), Math.max(ms, 1000));
  }

  private async refreshSource(): Promise<void> {
    const stop = this.stopper.signal;
    if (stop.aborted) return;
    const before = this.source;
    try {
      const next = await this.svc.sourceConfig(stop);
      this.source = next;
      this.svcAuthFailing = false;
      this.scheduleRefresh(next.refresh_after_seconds * 1000);
      if (before && JSON.stringify(before) !== JSON.stringify(next)) {
        this.log.info("source config changed", { before, after: next });
      }
      if (before?.mode !== next.mode) {
        // The read position is kept: the next session continues exactly where this one stopped.
        this.fallbackUntil = 0;
        this.fallbacks = 0;
        this.session?.abort();
      }
    } catch (error) {
      if (stop.aborted) return;
      if (error instanceof SvcError && error.auth) this.svcAuthFailing = true;
      const retry = Math.min(SOURCE_RETRY_MS, (before?.refresh_after_seconds ?? 30) * 1000);
      this.log.warn("refreshing the source config failed: keeping the last one", {
        ...describe(error),
        retry_in_ms: retry,
      });
      this.scheduleRefresh(retry);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Consumption

  /** No cursor yet: one immediate poll fixes a durable position (`from=now`, or the oldest event). */
  private async anchor(signal: AbortSignal): Promise<void> {
    const page = await this.svc.poll(this.position, { wait: 0, limit: PAGE_LIMIT, signal });
    this.consumeSucceeded();
    this.log.info("starting position fixed", {
      from: this.position.from,
      events_waiting: page.data.length,
      has_more: page.has_more,
    });
    await this.takePage(page);
    // Saved at once: a crash before the first coalesced write must not move the start to a later `now`.
    this.state?.flush();
  }

  private async pollSession(signal: AbortSignal): Promise<void> {
    this.mode = "poll";
    while (!signal.aborted) {
      const source = this.source as SourceConfig;
      const fallingBack = source.mode === "auto";
      if (fallingBack && Date.now() >= this.fallbackUntil) {
        this.log.info("trying the event stream again");
        return;
      }
      const started = Date.now();
      const wait = fallingBack
        ? Math.max(0, Math.min(30, Math.ceil((this.fallbackUntil - started) / 1000)))
        : 30;
      const page = await this.svc.poll(this.position, { wait, limit: PAGE_LIMIT, signal });
      this.metrics.polls += 1;
      this.consumeSucceeded();
      if (!(await this.takePage(page))) return;
      if (!page.has_more) await sleep(started + source.poll_interval_seconds * 1000 - Date.now(), signal);
    }
  }

  /** Dispatches a page; the position moves to `next_cursor` only once every event was taken. */
  private async takePage(page: PollPage): Promise<boolean> {
    for (const event of page.data) {
      if (!(await this.dispatch({ event }, undefined))) return false;
    }
    this.window.add(page.next_cursor, true);
    this.position = { cursor: page.next_cursor, from: this.position.from };
    return true;
  }

  private async streamSession(signal: AbortSignal): Promise<void> {
    const source = this.source as SourceConfig;
    const idleMs = (source.stream_heartbeat_seconds * 2 + 5) * 1000;
    const watchdog = new AbortController();
    const streamSignal = AbortSignal.any([signal, watchdog.signal]);
    const response = await this.svc.stream(this.position, streamSignal);
    this.mode = "stream";
    this.metrics.streamConnects += 1;
    this.consumeSucceeded();
    this.fallbacks = 0;
    this.log.info("event stream connected", { resumed: this.position.cursor !== undefined });

    let lastChunk = Date.now();
    const idleCheck = setInterval(
      () => {
        if (Date.now() - lastChunk > idleMs) watchdog.abort();
      },
      Math.min(1000, idleMs),
    );
    const messages: SseMessage[] = [];
    const parser = new SseParser({ onMessage: (message) => messages.push(message) });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        let chunk: { done: boolean; value?: Uint8Array };
        try {
          chunk = await reader.read();
        } catch (error) {
          if (watchdog.signal.aborted && !signal.aborted) {
            this.log.warn("event stream silent: reconnecting", { silent_ms: Date.now() - lastChunk });
            return;
          }
          throw error;
        }
        if (chunk.done) {
          this.log.info("event stream ended by svc: reconnecting");
          await sleep(backoffMs(1, 200, 1000), signal);
          return;
        }
        lastChunk = Date.now();
        parser.feed(decoder.decode(chunk.value, { stream: true }));
        // Every message already read is dispatched, even when the session ends meanwhile.
        while (messages.length > 0) {
          const message = messages.shift() as SseMessage;
          const item = parseEvent(message.data);
          if (!item) {
            this.log.error("svc streamed a message that is not a CloudEvent: ignored", {
              data: message.data.slice(0, 200),
            });
            if (message.id !== undefined) this.advanceOver(message.id);
            continue;
          }
          if (!(await this.dispatch(item, message.id))) return;
          if (message.id !== undefined) this.position = { cursor: message.id, from: this.position.from };
        }
      }
    } finally {
      clearInterval(idleCheck);
      reader.cancel().catch(() => {});
    }
  }

  /** A message that is skipped still moves both positions over it. */
  private advanceOver(cursor: string): void {
    this.window.add(cursor, true);
    this.position = { cursor, from: this.position.from };
  }

  /** Hands one event to a delivery slot; false when the connector is stopping. */
  private async dispatch(item: StreamedEvent, cursor: string | undefined): Promise<boolean> {
    const stop = this.stopper.signal;
    await this.window.room(stop);
    if (stop.aborted) return false;
    if (!(await this.slots.acquire(stop))) return false;
    const entry = this.window.add(cursor);
    this.metrics.received += 1;
    const delivery = this.sink
      .deliver(item)
      .then(
        (outcome) => {
          if (outcome !== "abandoned") this.window.complete(entry);
        },
        (error: unknown) => {
          // A bug, not a sink answer. The event stays uncommitted, which would hold the cursor
          // back for good: stop (exit 1) so a supervisor restarts us and it is sent again.
          this.log.error("delivery failed unexpectedly: stopping", {
            event_id: item.event.id,
            ...describe(error),
          });
          this.exitCode = 1;
          this.stop("unexpected delivery error");
        },
      )
      .finally(() => {
        this.slots.release();
        this.inFlight.delete(delivery);
      });
    this.inFlight.add(delivery);
    return true;
  }

  private consumeSucceeded(): void {
    this.consecutiveErrors = 0;
    this.svcAuthFailing = false;
  }

  private async onConsumeError(error: unknown, signal: AbortSignal, streaming: boolean): Promise<void> {
    if (signal.aborted) return;
    this.consecutiveErrors += 1;
    const svcError = error instanceof SvcError ? error : null;
    const fields = describe(error);
    if (svcError?.code === "cursor_expired" || svcError?.code === "invalid_cursor") {
      this.metrics.cursorExpired += svcError.code === "cursor_expired" ? 1 : 0;
      this.log.error(
        svcError.code === "cursor_expired"
          ? "CURSOR EXPIRED: events after the saved position were removed by retention and were never delivered; restarting from the oldest retained event"
          : "svc rejected the saved cursor (another server or org?): restarting from the oldest retained event",
        { ...fields, cursor: this.position.cursor },
      );
      this.position = { cursor: undefined, from: "earliest" };
      return;
    }
    if (svcError && svcError.status === 400) {
      this.log.error("svc rejected the connector's request: check --filter", fields);
      this.exitCode = 1;
      this.stop("fatal configuration error");
      return;
    }
    if (svcError?.auth) this.svcAuthFailing = true;
    const streamFailure =
      streaming &&
      this.source?.mode === "auto" &&
      (svcError === null || svcError.network || svcError.status === 429 || svcError.status >= 500);
    if (streamFailure) {
      this.fallbacks += 1;
      this.metrics.streamFallbacks += 1;
      const forMs = Math.max(
        svcError?.retryAfterMs ?? 0,
        backoffMs(this.fallbacks, FALLBACK_BASE_MS, FALLBACK_CAP_MS),
      );
      this.fallbackUntil = Date.now() + forMs;
      this.consecutiveErrors = 0;
      this.log.warn("event stream unavailable: polling meanwhile", { ...fields, poll_for_ms: forMs });
      return;
    }
    const delay = svcErrorDelay(error, this.consecutiveErrors);
    (svcError?.auth ? this.log.error : this.log.warn)(
      `${streaming ? "event stream" : "poll"} failed: retrying`,
      {
        ...fields,
        retry_in_ms: delay,
      },
    );
    await sleep(delay, signal);
  }
}

/** A failed call to svc: its own retry delay, or backoff for an error that is not svc's answer. */
function svcErrorDelay(error: unknown, attempt: number): number {
  return error instanceof SvcError
    ? error.retryDelayMs(attempt)
    : backoffMs(attempt, ERROR_BASE_MS, ERROR_CAP_MS);
}

function parseEvent(data: string): StreamedEvent | null {
  try {
    const event = JSON.parse(data) as unknown;
    if (typeof event !== "object" || event === null || Array.isArray(event)) return null;
    return { event: event as Record<string, unknown>, raw: data };
  } catch {
    return null;
  }
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof SvcError) {
    return { status: error.status, code: error.code, error: error.message };
  }
  return { error: error instanceof Error ? error.message : String(error) };
}
