/** The connector's counters and gauges, rendered in the Prometheus text format at `/metrics`. */

export class Metrics {
  received = 0;
  delivered = 0;
  retried = 0;
  skipped = 0;
  repliesForwarded = 0;
  repliesDropped = 0;
  eventsDroppedFromReplies = 0;
  streamConnects = 0;
  streamFallbacks = 0;
  polls = 0;
  cursorExpired = 0;

  /** Live values the connector supplies when scraped. */
  constructor(
    private readonly live: () => {
      ready: boolean;
      paused: boolean;
      mode: string;
      inFlight: number;
      pending: number;
      stateWrites: number;
    },
  ) {}

  render(): string {
    const live = this.live();
    const lines: string[] = [];
    const counter = (name: string, help: string, value: number) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name} ${value}`);
    };
    const gauge = (name: string, help: string, value: number, labels = "") => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${labels} ${value}`);
    };
    counter("svc_connector_events_received_total", "Events read from svc.", this.received);
    counter("svc_connector_events_delivered_total", "Events the sink accepted (2xx).", this.delivered);
    counter("svc_connector_delivery_retries_total", "Delivery attempts that are retried.", this.retried);
    counter(
      "svc_connector_events_skipped_total",
      "Events the sink refused for good (4xx other than 401/403/404/408/409/429), logged and skipped.",
      this.skipped,
    );
    counter(
      "svc_connector_replies_forwarded_total",
      "Reply events from the sink forwarded to svc ingest.",
      this.repliesForwarded,
    );
    counter(
      "svc_connector_replies_dropped_total",
      "Reply events that could not be forwarded for good (logged).",
      this.repliesDropped,
    );
    counter(
      "svc_connector_response_events_dropped_total",
      "Events in sink responses that are not replies (logged and dropped).",
      this.eventsDroppedFromReplies,
    );
    counter("svc_connector_stream_connects_total", "Event streams opened.", this.streamConnects);
    counter(
      "svc_connector_stream_fallbacks_total",
      "Times auto mode fell back to polling.",
      this.streamFallbacks,
    );
    counter("svc_connector_polls_total", "Poll requests answered.", this.polls);
    counter("svc_connector_cursor_expired_total", "410 cursor_expired restarts.", this.cursorExpired);
    counter("svc_connector_state_writes_total", "State file writes.", live.stateWrites);
    gauge("svc_connector_ready", "1 when ready.", live.ready ? 1 : 0);
    gauge("svc_connector_delivery_paused", "1 while the sink answers 401/403.", live.paused ? 1 : 0);
    for (const mode of ["stream", "poll"]) {
      gauge(
        "svc_connector_mode",
        "The consumption mode in use.",
        live.mode === mode ? 1 : 0,
        `{mode="${mode}"}`,
      );
    }
    gauge("svc_connector_in_flight", "Deliveries in flight.", live.inFlight);
    gauge("svc_connector_uncommitted_events", "Events read but not yet committed.", live.pending);
    return `${dedupeHelp(lines).join("\n")}\n`;
  }
}

/** One HELP/TYPE pair per metric name, even with several labelled samples. */
function dedupeHelp(lines: string[]): string[] {
  const seen = new Set<string>();
  return lines.filter((line) => {
    if (!line.startsWith("# ")) return true;
    if (seen.has(line)) return false;
    seen.add(line);
    return true;
  });
}
