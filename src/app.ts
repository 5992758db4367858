/**
 * The App owns the database, the services, the scheduler and the HTTP server. `svc serve`
 * starts one; `svc admin` opens one without HTTP or scheduler to call the same services.
 */
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Accounts } from "./accounts/accounts.ts";
import { liveKeys } from "./accounts/api-keys.repository.ts";
import type { AccountsContext } from "./accounts/context.ts";
import { countOrgs } from "./accounts/orgs.repository.ts";
import { SessionSigner } from "./accounts/sessions.ts";
import { pruneAllAlerts } from "./alerts/retention.ts";
import { pruneCloudEvents } from "./cloudevents/retention.ts";
import type { Config } from "./config.ts";
import { migrate } from "./db/migrate.ts";
import { Store } from "./db/store.ts";
import { pruneIdempotency } from "./http/idempotency.ts";
import { Metrics } from "./http/metrics.ts";
import { createHttpApp } from "./http/server.ts";
import type { Logger } from "./log.ts";
import { Mailer } from "./mail/mailer.ts";
import { pendingEmailCount } from "./mail/outbox.ts";
import { deliveryCounts } from "./notifications/deliveries.repository.ts";
import { Scheduler } from "./scheduler.ts";
import { createServices, type Services } from "./services.ts";
import { DAY, HOUR } from "./time.ts";

export const INITIAL_KEY_FILE = "initial-admin-key";

export interface FirstRun {
  orgSlug: string;
  ownerEmail: string;
  keyPrefix: string;
  keySecret: string;
  keyFile: string;
}

export class App {
  readonly metrics = new Metrics();
  private server: ReturnType<typeof createHttpApp> | null = null;
  private scheduler: Scheduler | null = null;
  private mailer: Mailer | null = null;
  private ready = false;

  private constructor(
    /** Shared by every service; `start` may refine its config once the real port is known. */
    private readonly ctx: AccountsContext,
    readonly log: Logger,
    readonly store: Store,
    readonly services: Services,
    readonly schemaVersion: number,
  ) {}

  /** Opens the database (applying migrations) and wires the services. */
  static async open(config: Config, log: Logger): Promise<App> {
    const store = new Store(join(config.data_dir, "svc.db"), config.durability);
    try {
      const version = migrate(store.writer);
      const signer = await SessionSigner.load(config.data_dir);
      const ctx: AccountsContext = { store, config, log };
      return new App(ctx, log, store, createServices(ctx, signer), version);
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  get accounts(): Accounts {
    return this.services.accounts;
  }

  get config(): Config {
    return this.ctx.config;
  }

  /** On an empty database: the default org, its invited owner and an owner-bound key. */
  async firstRun(): Promise<FirstRun | null> {
    if ((await countOrgs(this.store.read)) > 0) return null;
    const created = await this.accounts.orgs.create(
      { name: "Default", slug: "default", ownerEmail: "admin@localhost" },
      { onlyIfEmpty: true },
    );
    const keyFile = join(this.config.data_dir, INITIAL_KEY_FILE);
    try {
      writeFileSync(keyFile, `${created.api_key.secret}\n`, { mode: 0o600 });
      chmodSync(keyFile, 0o600);
    } catch (error) {
      // The org exists now, so the next start will not retry: say how to get a key instead.
      throw new Error(
        `could not write ${keyFile} (${(error as Error).message}); create a key with ` +
          `'svc admin key create --org ${created.org.slug} --name admin --scopes admin --user ${created.owner.email}'`,
      );
    }
    return {
      orgSlug: created.org.slug,
      ownerEmail: created.owner.email,
      keyPrefix: created.api_key.prefix,
      keySecret: created.api_key.secret,
      keyFile,
    };
  }

  /** Starts the scheduler and the HTTP server; resolves once it listens. */
  async start(): Promise<{ port: number; hostname: string }> {
    this.mailer = new Mailer(this.config, this.store, this.log);
    const mailer = this.mailer;
    this.scheduler = new Scheduler(this.log);
    this.scheduler.add({ name: "email-outbox", everyMs: 1000, run: (now) => mailer.deliverDue(now) });
    const alerts = this.services.alerts;
    const deliverer = this.services.deliverer;
    const runtime = this.services.runtime;
    this.scheduler.add({ name: "heartbeats", everyMs: 1000, run: (now) => runtime.heartbeatsDue(now) });
    this.scheduler.add({ name: "http-checks", everyMs: 1000, run: (now) => runtime.httpChecksDue(now) });
    this.scheduler.add({ name: "deliveries", everyMs: 1000, run: (now) => deliverer.deliverDue(now) });
    this.scheduler.add({ name: "escalations", everyMs: 1000, run: (now) => alerts.escalateDue(now) });
    this.scheduler.add({ name: "auto-resolve", everyMs: 1000, run: (now) => alerts.autoResolveDue(now) });
    this.scheduler.add({
      name: "idempotency-prune",
      everyMs: HOUR,
      run: async (now) => {
        await this.store.write((tx) => pruneIdempotency(tx, now));
      },
    });
    const { replies } = this.services;
    this.scheduler.add({
      name: "cloudevents-retention",
      everyMs: 10 * 60_000,
      run: (now) => pruneCloudEvents(this.ctx, replies, now),
    });
    this.scheduler.add({
      name: "alerts-retention",
      everyMs: 10 * 60_000,
      run: (now) => pruneAllAlerts(this.ctx, now),
    });
    this.registerGauges();
    this.server = createHttpApp({
      config: this.config,
      store: this.store,
      ...this.services,
      metrics: this.metrics,
      log: this.log,
      baseUrl: () => this.ctx.config.base_url,
      isReady: () => this.ready,
    });
    this.server.listen({
      hostname: this.config.host,
      port: this.config.port,
      // The configured limit is enforced by the route layer, which answers 413 with the error
      // envelope; Bun's own cap (a bare 413, or a 500 mid-read) only backstops absurd sizes.
      maxRequestBodySize: Math.max(this.config.limits.max_request_bytes + 1, 128 * 1024 * 1024),
      development: false,
    });
    this.scheduler.start();
    this.ready = true;
    const server = this.server.server;
    if (!server) throw new Error("the HTTP server did not start");
    const address = { port: server.port ?? this.config.port, hostname: server.hostname ?? this.config.host };
    this.settleBaseUrl(address.port);
    return address;
  }

  /**
   * A base URL derived from `listen` names port 0 until the server is bound: links (invites,
   * feeds) then use the real port. A wildcard host cannot be reached as written: warn.
   */
  private settleBaseUrl(port: number): void {
    const config = this.ctx.config;
    if (!config.base_url_derived) return;
    if (config.port === 0) {
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      this.ctx.config = Object.freeze({ ...config, port, base_url: `http://${host}:${port}` });
    }
    if (["0.0.0.0", "::", ""].includes(config.host)) {
      this.log.warn("base_url is not set and listen is a wildcard address: links in emails will not work", {
        listen: config.listen,
        base_url: this.ctx.config.base_url,
      });
    }
  }

  private registerGauges(): void {
    const read = this.store.read;
    this.metrics.addGauge({
      name: "svc_email_outbox_pending",
      help: "Emails waiting in the outbox.",
      read: async () => [{ labels: {}, value: await pendingEmailCount(read) }],
    });
    this.metrics.addGauge({
      name: "svc_api_key_days_to_expiry",
      help: "Days until each live API key expires (-1: never).",
      read: async () => {
        const now = Date.now();
        const rows = await liveKeys(read);
        return rows.map((r) => ({
          labels: { key_id: r.id, org_id: r.org_id },
          value: r.expires_at === null ? -1 : Math.round(((r.expires_at - now) / DAY) * 100) / 100,
        }));
      },
    });
    this.metrics.addGauge({
      name: "svc_notification_deliveries",
      help: "Notification deliveries waiting to be sent (pending) or given up on (dead).",
      read: async () => {
        const counts = new Map((await deliveryCounts(read)).map((c) => [c.status, c.n]));
        return ["pending", "dead"].map((status) => ({ labels: { status }, value: counts.get(status) ?? 0 }));
      },
    });
    this.metrics.addGauge({
      name: "svc_cloudevents_streams",
      help: "Open CloudEvents streams per organization.",
      read: () =>
        [...this.services.consumers.streamCounts()].map(([orgId, n]) => ({
          labels: { org_id: orgId },
          value: n,
        })),
    });
    this.metrics.addGauge({
      name: "svc_store_commits",
      help: "Write transactions committed since start (each may group several requests).",
      read: () => [{ labels: {}, value: this.store.stats.commits }],
    });
  }

  /** Graceful stop: no new connections, in-flight requests finish, then the database closes. */
  async stop(): Promise<void> {
    this.ready = false;
    // An open event stream is a request that never ends: close them so the server can stop.
    this.services.consumers.closeStreams();
    await this.server?.server?.stop(false);
    await this.scheduler?.stop();
    await this.services.deliverer.idle();
    this.mailer?.close();
    await this.store.close();
  }
}
