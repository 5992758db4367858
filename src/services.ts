/** Every domain service, wired once over one context and shared by the HTTP API and the CLI. */
import { type Accounts, createAccounts } from "./accounts/accounts.ts";
import type { AccountsContext } from "./accounts/context.ts";
import type { SessionSigner } from "./accounts/sessions.ts";
import { AlertmanagerReceiver } from "./alerts/alertmanager.ts";
import { AlertService } from "./alerts/alerts.service.ts";
import { EventsApi } from "./alerts/events-api.ts";
import { ConsumerService } from "./cloudevents/consumers.ts";
import { IngestService } from "./cloudevents/ingest.ts";
import { OidcVerifier } from "./cloudevents/oidc.ts";
import { ReplyDispatcher } from "./cloudevents/replies.ts";
import { Dispatcher } from "./escalation/dispatcher.ts";
import { PolicyService } from "./escalation/policies.service.ts";
import { EventBroker } from "./events/broker.ts";
import { IncidentService } from "./incidents/incidents.service.ts";
import { EventMonitorIndex } from "./monitors/event-monitors.ts";
import { MonitorService } from "./monitors/monitors.service.ts";
import { MonitorRuntime } from "./monitors/runtime.ts";
import { ChannelService } from "./notifications/channels.service.ts";
import { Deliverer } from "./notifications/deliverer.ts";
import { ScheduleService } from "./schedules/schedules.service.ts";
import { PublicStatusPages } from "./status-pages/public.ts";
import { StatusPageService } from "./status-pages/status-pages.service.ts";

export interface Services {
  accounts: Accounts;
  alerts: AlertService;
  eventsApi: EventsApi;
  deliverer: Deliverer;
  runtime: MonitorRuntime;
  incidents: IncidentService;
  statusPages: StatusPageService;
  publicPages: PublicStatusPages;
  alertmanager: AlertmanagerReceiver;
  schedules: ScheduleService;
  channels: ChannelService;
  policies: PolicyService;
  monitors: MonitorService;
  ingest: IngestService;
  consumers: ConsumerService;
  replies: ReplyDispatcher;
}

export function createServices(ctx: AccountsContext, signer: SessionSigner): Services {
  const schedules = new ScheduleService(ctx);
  const deliverer = new Deliverer(ctx);
  const alerts = new AlertService(ctx, new Dispatcher(schedules, ctx.store, deliverer));
  const replies = new ReplyDispatcher(ctx, alerts);
  const accounts = createAccounts(ctx, signer);
  const eventMonitors = new EventMonitorIndex(ctx.store);
  return {
    accounts,
    alerts,
    eventsApi: new EventsApi(ctx.store, alerts),
    deliverer,
    runtime: new MonitorRuntime(ctx, alerts),
    incidents: new IncidentService(ctx, deliverer),
    statusPages: new StatusPageService(ctx),
    publicPages: new PublicStatusPages(ctx.store),
    alertmanager: new AlertmanagerReceiver(ctx.store, alerts),
    schedules,
    channels: new ChannelService(ctx),
    policies: new PolicyService(ctx),
    monitors: new MonitorService(ctx, eventMonitors),
    ingest: new IngestService(
      ctx,
      replies,
      alerts,
      new OidcVerifier(),
      accounts.ingestCredentials,
      eventMonitors,
    ),
    consumers: new ConsumerService(ctx, new EventBroker(ctx.store)),
    replies,
  };
}
