/**
 * Delivery to the sink per the Knative data plane (DESIGN §8): one POST per event with
 * `Prefer: reply`, binary mode unless `--structured`. The answer decides:
 *
 * - 2xx: accepted; a 200 carrying a CloudEvent is a reply (see replies.ts).
 * - 401, 403: the sink's configuration is wrong. Delivery pauses (one event probes with capped
 *   backoff, the others wait), the connector reports not ready, nothing is skipped.
 * - 404, 408, 409, 429, 5xx, 3xx, timeouts and network errors: retried with exponential backoff
 *   and jitter (a `Retry-After` wins), without limit: at-least-once means never giving up.
 * - any other 4xx (400, 413, 415, …): this event can never be taken; logged with its id and
 *   skipped.
 *
 * A stop (SIGTERM) lets the request in flight finish but starts no retry: an event that did not
 * get a 2xx is "abandoned", stays uncommitted, and is sent again after the restart.
 */
import type { Logger } from "../src/log.ts";
import { backoffMs, retryAfterMs, sleep } from "./backoff.ts";
import type { ConnectorConfig } from "./config.ts";
import { encodeBinary, encodeStructured, type SinkRequest, type StreamedEvent } from "./encode.ts";
import type { Metrics } from "./metrics.ts";
import { carriesEvent, parseResponseEvents, type ReplyForwarder } from "./replies.ts";
import { USER_AGENT } from "./svc.ts";

export type DeliveryOutcome = "delivered" | "skipped" | "abandoned";

const RETRY_BASE_MS = 100;
const RETRY_CAP_MS = 30_000;
const PAUSE_CAP_MS = 60_000;
const RETRIED = new Set([404, 408, 409, 429]);

type Verdict =
  | { kind: "accepted"; response: Response }
  | { kind: "retry"; status: number; retryAfterMs: number | undefined; error?: string }
  | { kind: "pause"; status: number }
  | { kind: "skip"; status: number; body: string };

export class SinkClient {
  private paused = false;
  private probe: symbol | null = null;
  private resumeWaiters: (() => void)[] = [];
  private readonly tls: { ca: string } | undefined;

  constructor(
    private readonly config: ConnectorConfig,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly replies: ReplyForwarder,
    private readonly stopSignal: AbortSignal,
  ) {
    this.tls = config.caCerts ? { ca: config.caCerts } : undefined;
    stopSignal.addEventListener("abort", () => this.resume(), { once: true });
  }

  /** True while the sink answers 401/403. */
  get isPaused(): boolean {
    return this.paused;
  }

  async deliver(item: StreamedEvent): Promise<DeliveryOutcome> {
    const eventId = String(item.event.id ?? "");
    const request = this.config.structured
      ? encodeStructured(item, this.config.overrides)
      : encodeBinary(item, this.config.overrides);
    const me = Symbol(eventId);
    let attempt = 0;
    try {
      for (;;) {
        // While paused only the probing event calls the sink; the others wait for it.
        let waited = false;
        while (this.paused && !this.stopSignal.aborted) {
          if (this.probe === null) this.probe = me;
          if (this.probe === me) break;
          waited = true;
          await this.waitForResume();
        }
        // Stopping: only a request already on its way finishes; nothing new is sent.
        if (this.stopSignal.aborted && (attempt > 0 || waited)) return "abandoned";
        attempt += 1;
        const verdict = await this.attempt(request);
        if (verdict.kind === "accepted") {
          this.endPause();
          const replyOutcome = await this.handleResponse(eventId, verdict.response);
          if (replyOutcome === "abandoned") return "abandoned";
          this.metrics.delivered += 1;
          if (this.log.enabled("debug")) {
            this.log.debug("delivered", { event_id: eventId, status: verdict.response.status, attempt });
          }
          return "delivered";
        }
        if (verdict.kind === "skip") {
          this.endPause();
          this.metrics.skipped += 1;
          this.log.error("sink refused the event for good: skipped", {
            event_id: eventId,
            event_type: item.event.type,
            status: verdict.status,
            response: verdict.body.slice(0, 200),
          });
          return "skipped";
        }
        if (this.stopSignal.aborted) return "abandoned";
        this.metrics.retried += 1;
        let delay: number;
        if (verdict.kind === "pause") {
          if (!this.paused) {
            this.paused = true;
            this.probe = me;
            this.log.error("sink refuses the connector (401/403): delivery paused, retrying", {
              event_id: eventId,
              status: verdict.status,
            });
          }
          if (this.probe !== me) continue;
          delay = backoffMs(attempt, 1000, PAUSE_CAP_MS);
          this.log.warn("sink still refuses the connector: retrying", {
            event_id: eventId,
            status: verdict.status,
            attempt,
            retry_in_ms: delay,
          });
        } else {
          delay = verdict.retryAfterMs ?? backoffMs(attempt, RETRY_BASE_MS, RETRY_CAP_MS);
          this.log.warn("delivery failed: retrying", {
            event_id: eventId,
            status: verdict.status,
            ...(verdict.error ? { error: verdict.error } : {}),
            attempt,
            retry_in_ms: delay,
          });
        }
        await sleep(delay, this.stopSignal);
      }
    } finally {
      if (this.probe === me) {
        // The probe leaves (stop): another waiting event takes over probing.
        this.probe = null;
        if (this.paused) this.wakeOne();
      }
    }
  }

  private async attempt(request: SinkRequest): Promise<Verdict> {
    let response: Response;
    try {
      response = await fetch(this.config.sink, {
        method: "POST",
        headers: { ...request.headers, prefer: "reply", "user-agent": USER_AGENT },
        body: request.body,
        redirect: "manual",
        signal: AbortSignal.timeout(this.config.sinkTimeoutMs),
        ...(this.tls ? { tls: this.tls } : {}),
      } as RequestInit);
    } catch (error) {
      const name = error instanceof Error ? error.name : "";
      const message =
        name === "TimeoutError" ? "timeout" : error instanceof Error ? error.message : String(error);
      return { kind: "retry", status: 0, retryAfterMs: undefined, error: message };
    }
    const status = response.status;
    if (status >= 200 && status < 300) return { kind: "accepted", response };
    const body = await response.text().catch(() => "");
    if (status === 401 || status === 403) return { kind: "pause", status };
    if (status >= 400 && status < 500 && !RETRIED.has(status)) return { kind: "skip", status, body };
    return {
      kind: "retry",
      status,
      retryAfterMs: retryAfterMs(response.headers.get("retry-after"), RETRY_CAP_MS),
    };
  }

  /** Reads the answer; a 200 with a CloudEvent goes to the reply forwarder. */
  private async handleResponse(eventId: string, response: Response) {
    if (response.status !== 200 || !carriesEvent(response.headers)) {
      await response.body?.cancel().catch(() => {});
      return "none" as const;
    }
    const text = await response.text().catch(() => "");
    let events: Record<string, unknown>[];
    try {
      events = parseResponseEvents(response.headers, text);
    } catch (error) {
      this.metrics.eventsDroppedFromReplies += 1;
      this.log.warn("sink answered 200 with a CloudEvent that cannot be parsed: dropped", {
        event_id: eventId,
        error: error instanceof Error ? error.message.split("\n")[0] : String(error),
      });
      return "none" as const;
    }
    return this.replies.handle(eventId, events);
  }

  /** Any answer other than 401/403 shows the sink accepts the connector again. */
  private endPause(): void {
    if (!this.paused) return;
    this.paused = false;
    this.probe = null;
    this.log.info("sink accepts the connector again: delivery resumed");
    this.resume();
  }

  private waitForResume(): Promise<void> {
    return new Promise((resolve) => this.resumeWaiters.push(resolve));
  }

  private resume(): void {
    const waiters = this.resumeWaiters;
    this.resumeWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Hands probing to one waiting event: it finds `probe` empty and claims it. */
  private wakeOne(): void {
    this.resumeWaiters.shift()?.();
  }
}
