/**
 * Delivers the email outbox over SMTP. Each due message is leased (its next attempt pushed
 * out) before sending, so a crash mid-send retries it later instead of losing it. Without SMTP
 * settings nothing is sent: messages stay in the outbox.
 */
import type { Transporter } from "nodemailer";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { Logger } from "../log.ts";
import { MINUTE } from "../time.ts";
import { dueEmails, leaseEmails, markFailed, markSent } from "./outbox.ts";

const MAX_ATTEMPTS = 8;
const LEASE_MS = 5 * MINUTE;
const BATCH = 20;

export class Mailer {
  private transport: Transporter | null = null;

  constructor(
    private readonly config: Config,
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.smtp.host !== undefined;
  }

  /** nodemailer loads only on hosts that send email. */
  private async connect(): Promise<Transporter> {
    if (this.transport) return this.transport;
    const smtp = this.config.smtp;
    const { default: nodemailer } = await import("nodemailer");
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      auth: smtp.user ? { user: smtp.user, pass: smtp.pass ?? "" } : undefined,
      connectionTimeout: 10_000,
      socketTimeout: 20_000,
    });
    return this.transport;
  }

  /** Sends what is due; called by the scheduler. */
  async deliverDue(now = Date.now()): Promise<void> {
    if (!this.enabled) return;
    const due = await this.store.write(async (tx) => {
      const rows = await dueEmails(tx, now, BATCH);
      await leaseEmails(
        tx,
        rows.map((r) => r.id),
        now + LEASE_MS,
      );
      return rows;
    });
    for (const email of due) {
      try {
        const transport = await this.connect();
        await transport.sendMail({
          from: this.config.smtp.from,
          to: email.recipient,
          subject: email.subject,
          text: email.text_body ?? "",
          html: email.html_body ?? undefined,
        });
        await this.store.write((tx) => markSent(tx, email.id, Date.now()));
        this.log.info("email sent", { id: email.id, to: email.recipient, subject: email.subject });
      } catch (error) {
        const attempts = email.attempts + 1;
        const retryAt = attempts >= MAX_ATTEMPTS ? null : Date.now() + backoff(attempts);
        const reason = error instanceof Error ? error.message : String(error);
        await this.store.write((tx) => markFailed(tx, email.id, attempts, retryAt, reason));
        this.log.warn(retryAt === null ? "email dead-lettered" : "email will be retried", {
          id: email.id,
          to: email.recipient,
          attempts,
          error: reason,
        });
      }
    }
  }

  close(): void {
    this.transport?.close();
  }
}

/** Exponential backoff with full jitter: up to 30 s, 1 min, 2 min, … capped at 1 hour. */
function backoff(attempts: number): number {
  const ceiling = Math.min(60 * MINUTE, 30_000 * 2 ** (attempts - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}
