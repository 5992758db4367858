/**
 * Prometheus text exposition for `/metrics`. Counters and histograms live in memory; gauges
 * that describe stored state (outbox depth, key expiry) are read when scraped.
 */

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Histogram {
  counts: number[];
  sum: number;
  count: number;
}

export type GaugeSample = { labels: Record<string, string>; value: number };
export interface GaugeSource {
  name: string;
  help: string;
  /** Called at each scrape. */
  read: () => GaugeSample[] | Promise<GaugeSample[]>;
}

export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly gauges: GaugeSource[] = [];

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method}\u0000${route}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    const hKey = `${method}\u0000${route}`;
    let h = this.latency.get(hKey);
    if (!h) {
      h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.latency.set(hKey, h);
    }
    h.sum += seconds;
    h.count += 1;
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) h.counts[i] = (h.counts[i] ?? 0) + 1;
    });
  }

  addGauge(source: GaugeSource): void {
    this.gauges.push(source);
  }

  async render(): Promise<string> {
    const lines: string[] = [
      "# HELP svc_http_requests_total HTTP requests answered, by route and status.",
      "# TYPE svc_http_requests_total counter",
    ];
    for (const [key, value] of this.requests) {
      const [method, route, status] = key.split("\u0000");
      lines.push(`svc_http_requests_total${labels({ method, route, status })} ${value}`);
    }
    lines.push(
      "# HELP svc_http_request_duration_seconds Time to answer, by route.",
      "# TYPE svc_http_request_duration_seconds histogram",
    );
    for (const [key, h] of this.latency) {
      const [method, route] = key.split("\u0000");
      BUCKETS.forEach((le, i) => {
        lines.push(
          `svc_http_request_duration_seconds_bucket${labels({ method, route, le: String(le) })} ${h.counts[i]}`,
        );
      });
      lines.push(
        `svc_http_request_duration_seconds_bucket${labels({ method, route, le: "+Inf" })} ${h.count}`,
      );
      lines.push(`svc_http_request_duration_seconds_sum${labels({ method, route })} ${h.sum}`);
      lines.push(`svc_http_request_duration_seconds_count${labels({ method, route })} ${h.count}`);
    }
    for (const gauge of this.gauges) {
      lines.push(`# HELP ${gauge.name} ${gauge.help}`, `# TYPE ${gauge.name} gauge`);
      for (const sample of await gauge.read())
        lines.push(`${gauge.name}${labels(sample.labels)} ${sample.value}`);
    }
    return `${lines.join("\n")}\n`;
  }
}

function labels(values: Record<string, string | undefined>): string {
  const parts = Object.entries(values)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}="${String(v).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}
