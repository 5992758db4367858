/**
 * A real HTTP receiver for webhook channels: `Bun.serve` on a random loopback port that keeps
 * every request it gets, checks the `svc-signature` (hex HMAC-SHA256 of `svc-timestamp + "." +
 * body` under the channel's secret) and parses the structured CloudEvent. Each path can be told
 * which statuses to answer, in turn (the last one repeats); 200 otherwise.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface Received {
  path: string;
  /** When the request arrived (ms since the epoch). */
  at: number;
  contentType: string | null;
  timestamp: string | null;
  signature: string | null;
  /** Whether the signature matches under the secret registered for the path (null: none registered). */
  signatureOk: boolean | null;
  body: string;
  /** The parsed body, or null when it was not JSON. */
  json: any;
  /** The status this receiver answered. */
  answered: number;
}

export function hmacHex(secret: string, timestamp: string, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly statuses = new Map<string, number[]>();
  private readonly served = new Map<string, number>();

  private constructor(private readonly server: ReturnType<typeof Bun.serve>) {}

  static start(): WebhookReceiver {
    let receiver: WebhookReceiver | null = null;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (request) => {
        const at = Date.now();
        const body = await request.text();
        return (receiver as WebhookReceiver).record(request, body, at);
      },
    });
    receiver = new WebhookReceiver(server);
    return receiver;
  }

  get base(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  /** The secret to verify signatures on `path` with. */
  secret(path: string, secret: string): void {
    this.secrets.set(path, secret);
  }

  /** The statuses to answer on `path`, one per request; the last repeats. */
  answer(path: string, ...statuses: number[]): void {
    this.statuses.set(path, statuses);
  }

  private record(request: Request, body: string, at: number): Response {
    const path = new URL(request.url).pathname;
    const count = this.served.get(path) ?? 0;
    this.served.set(path, count + 1);
    const plan = this.statuses.get(path) ?? [200];
    const answered = plan[Math.min(count, plan.length - 1)] as number;
    const timestamp = request.headers.get("svc-timestamp");
    const signature = request.headers.get("svc-signature");
    const secret = this.secrets.get(path);
    let signatureOk: boolean | null = null;
    if (secret !== undefined) {
      const expected = Buffer.from(hmacHex(secret, timestamp ?? "", body), "hex");
      const given = Buffer.from(signature ?? "", "hex");
      signatureOk =
        timestamp !== null && given.length === expected.length && timingSafeEqual(given, expected);
    }
    let json: unknown = null;
    try {
      json = JSON.parse(body);
    } catch {
      json = null;
    }
    this.received.push({
      path,
      at,
      contentType: request.headers.get("content-type"),
      timestamp,
      signature,
      signatureOk,
      body,
      json,
      answered,
    });
    return new Response(answered < 300 ? "ok" : "nope", { status: answered });
  }

  /** Requests so far whose path and CloudEvent subject match. */
  for(path: string | null, subject?: string): Received[] {
    return this.received.filter(
      (r) => (path === null || r.path === path) && (subject === undefined || r.json?.subject === subject),
    );
  }

  /** Waits until `match` holds for at least `count` requests; returns them. */
  async waitFor(match: (r: Received) => boolean, count = 1, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.filter(match);
      if (found.length >= count) return found;
      if (Date.now() > deadline) {
        const seen = this.received.map((r) => `${r.path} ${r.json?.type} ${r.json?.subject}`).join("\n");
        throw new Error(
          `${found.length} of ${count} matching requests within ${timeoutMs} ms; got:\n${seen}`,
        );
      }
      await Bun.sleep(20);
    }
  }

  stop(): void {
    this.server.stop(true);
  }
}
