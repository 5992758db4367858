/**
 * A real SMTP server (the `smtp-server` package) on a random loopback port that keeps every
 * message it receives, with a small MIME reader for the plain-text and HTML parts. Start `svc
 * serve` with `SVC_SMTP_HOST=127.0.0.1 SVC_SMTP_PORT=<port>` to have it deliver here.
 */
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface CapturedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  raw: string;
}

export class MailCatcher {
  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
    readonly messages: CapturedMail[],
  ) {}

  static async start(): Promise<MailCatcher> {
    const messages: CapturedMail[] = [];
    const server = new SMTPServer({
      secure: false,
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
          messages.push({
            ...parseMessage(raw),
            from,
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
          });
          callback();
        });
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.on("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.server.address() as AddressInfo).port));
    });
    return new MailCatcher(server, port, messages);
  }

  /** The env that points `svc serve` at this server. */
  get env(): Record<string, string> {
    return { SVC_SMTP_HOST: "127.0.0.1", SVC_SMTP_PORT: String(this.port) };
  }

  /** Waits for the first message (received so far or later) that matches. */
  async waitFor(match: (mail: CapturedMail) => boolean, timeoutMs = 10_000): Promise<CapturedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) {
        const seen = this.messages.map((m) => `${m.to.join(",")}: ${m.subject}`).join("\n");
        throw new Error(`no matching email within ${timeoutMs} ms; received:\n${seen}`);
      }
      await Bun.sleep(50);
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

interface Part {
  headers: Map<string, string>;
  body: string;
}

function splitPart(raw: string): Part {
  const at = raw.search(/\r?\n\r?\n/);
  const head = at === -1 ? raw : raw.slice(0, at);
  const body = at === -1 ? "" : raw.slice(at).replace(/^\r?\n\r?\n/, "");
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body };
}

function decodeQuotedPrintable(value: string): string {
  const joined = value.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined.slice(i + 1, i + 3);
    if (joined[i] === "=" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...new TextEncoder().encode(joined[i]));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

function decodeBody(part: Part): string {
  const encoding = (part.headers.get("content-transfer-encoding") ?? "7bit").toLowerCase();
  if (encoding === "quoted-printable") return decodeQuotedPrintable(part.body);
  if (encoding === "base64") return Buffer.from(part.body.replace(/\s+/g, ""), "base64").toString("utf8");
  return part.body;
}

function decodeWords(value: string): string {
  return value.replace(
    /=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g,
    (_m, _charset: string, kind: string, text: string) =>
      kind.toUpperCase() === "B"
        ? Buffer.from(text, "base64").toString("utf8")
        : decodeQuotedPrintable(text.replaceAll("_", " ")),
  );
}

/** The leaf parts of a (possibly multipart) message. */
function leaves(part: Part): Part[] {
  const type = part.headers.get("content-type") ?? "text/plain";
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!/^multipart\//i.test(type) || !boundary) return [part];
  const sections = part.body.split(`--${boundary}`).slice(1);
  return sections
    .filter((s) => !s.startsWith("--"))
    .flatMap((s) => leaves(splitPart(s.replace(/^\r?\n/, ""))));
}

function parseMessage(raw: string): { subject: string; text: string; html: string } {
  const top = splitPart(raw);
  let text = "";
  let html = "";
  for (const leaf of leaves(top)) {
    const type = (leaf.headers.get("content-type") ?? "text/plain").toLowerCase();
    if (type.startsWith("text/html")) html += decodeBody(leaf);
    else if (type.startsWith("text/plain")) text += decodeBody(leaf);
  }
  return { subject: decodeWords(top.headers.get("subject") ?? ""), text, html };
}
