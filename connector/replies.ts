/**
 * Events in sink responses (DESIGN §8). A 200 answer that carries a CloudEvent (binary,
 * structured or batch mode; parsed with the cloudevents SDK's `HTTP.toEvent`) is a reply. Only
 * `run.service.reply.*` events are forwarded to svc's ingest endpoint, in structured mode, with
 * the connector's ingest token (whose channel the reply then speaks for); any other event is
 * logged and dropped, so no loop can form. Forwarding is retried until svc takes the reply or
 * refuses it for good (a 4xx that retrying cannot fix, logged at error): never dropped silently.
 */
import { type CloudEventV1, HTTP } from "cloudevents";
import type { Logger } from "../src/log.ts";
import { sleep } from "./backoff.ts";
import type { Metrics } from "./metrics.ts";
import { type SvcClient, SvcError } from "./svc.ts";

export const REPLY_PREFIX = "run.service.reply.";

/** True when a response carries a CloudEvent in some mode. */
export function carriesEvent(headers: Headers): boolean {
  const type = headers.get("content-type")?.toLowerCase() ?? "";
  return type.startsWith("application/cloudevents") || headers.has("ce-id");
}

/**
 * The events of a sink response as structured-mode objects. Structured bodies are kept as sent
 * (the SDK would add a `time` and rewrite it); binary ones are rebuilt from what the SDK parsed,
 * with header values percent-decoded (the HTTP binding §3.1.3.2) and no invented `time`.
 */
export function parseResponseEvents(headers: Headers, body: string): Record<string, unknown>[] {
  const plain: Record<string, string> = {};
  headers.forEach((value, name) => {
    plain[name.toLowerCase()] = value;
  });
  const parsed = HTTP.toEvent({ headers: plain, body }) as CloudEventV1<unknown> | CloudEventV1<unknown>[];
  const contentType = plain["content-type"]?.toLowerCase() ?? "";
  if (contentType.startsWith("application/cloudevents-batch")) {
    return (JSON.parse(body) as Record<string, unknown>[]).filter((e) => typeof e === "object" && e !== null);
  }
  if (contentType.startsWith("application/cloudevents")) {
    return [JSON.parse(body) as Record<string, unknown>];
  }
  const event = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!event) return [];
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries({ ...event })) {
    if (value === undefined || name === "data" || name === "data_base64") continue;
    if (name === "time" && plain["ce-time"] === undefined) continue;
    out[name] = typeof value === "string" ? percentDecode(value) : value;
  }
  if (plain["ce-time"] !== undefined) out.time = percentDecode(plain["ce-time"]);
  const data = (event as { data?: unknown }).data;
  if (data instanceof Uint8Array || data instanceof Uint32Array) {
    out.data_base64 = Buffer.from(data as Uint8Array).toString("base64");
  } else if (data !== undefined && !(typeof data === "string" && data === "")) {
    out.data = data;
  }
  return [out];
}

function percentDecode(value: string): string {
  if (!value.includes("%")) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export type ForwardOutcome = "forwarded" | "dropped" | "abandoned";

export class ReplyForwarder {
  /** True while svc refuses the ingest token (401/403): the connector reports not ready. */
  authFailing = false;

  constructor(
    private readonly svc: SvcClient,
    private readonly ingestToken: string | undefined,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    private readonly stopSignal: AbortSignal,
  ) {}

  /**
   * Handles the events of one sink response to `eventId`. Resolves "abandoned" only when the
   * connector stops before svc took a reply: the event is then not committed, and is sent
   * again (and so answered again) after a restart.
   */
  async handle(eventId: string, events: Record<string, unknown>[]): Promise<ForwardOutcome> {
    let outcome: ForwardOutcome = "forwarded";
    for (const reply of events) {
      const type = typeof reply.type === "string" ? reply.type : "";
      if (!type.startsWith(REPLY_PREFIX)) {
        this.metrics.eventsDroppedFromReplies += 1;
        this.log.warn("sink answered with an event that is not a reply: dropped", {
          event_id: eventId,
          response_event_id: reply.id,
          response_event_type: type,
        });
        continue;
      }
      const result = await this.forward(eventId, reply);
      if (result === "abandoned") return "abandoned";
      if (result === "dropped") outcome = "dropped";
    }
    return outcome;
  }

  private async forward(eventId: string, reply: Record<string, unknown>): Promise<ForwardOutcome> {
    const fields = { event_id: eventId, reply_id: reply.id, reply_type: reply.type };
    if (this.ingestToken === undefined) {
      this.metrics.repliesDropped += 1;
      this.log.error("reply dropped: no --ingest-token (SVC_INGEST_TOKEN) to forward it with", fields);
      return "dropped";
    }
    for (let attempt = 1; ; attempt++) {
      try {
        // Not cut short by a stop: a forward already on its way finishes (only retries stop).
        await this.svc.ingest(this.ingestToken, reply);
        this.authFailing = false;
        this.metrics.repliesForwarded += 1;
        this.log.info("reply forwarded", fields);
        return "forwarded";
      } catch (caught) {
        const error = caught instanceof SvcError ? caught : new SvcError(0, "network", String(caught));
        if (this.stopSignal.aborted) return "abandoned";
        // The token travels in the URL: keep it out of any message that quotes one.
        const message = error.message.replaceAll(this.ingestToken, "[redacted]");
        const permanent =
          error.status >= 400 && error.status < 500 && ![401, 403, 408, 429].includes(error.status);
        if (permanent) {
          this.metrics.repliesDropped += 1;
          this.log.error("reply refused by svc for good: dropped", {
            ...fields,
            status: error.status,
            code: error.code,
            error: message,
          });
          return "dropped";
        }
        if (error.auth) this.authFailing = true;
        const delay = error.retryDelayMs(attempt);
        (error.auth ? this.log.error : this.log.warn)("forwarding a reply failed: retrying", {
          ...fields,
          attempt,
          status: error.status,
          code: error.code,
          error: message,
          retry_in_ms: delay,
        });
        await sleep(delay, this.stopSignal);
        if (this.stopSignal.aborted) return "abandoned";
      }
    }
  }
}
