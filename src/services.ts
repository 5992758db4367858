/** Every domain service, wired once over one context and shared by the HTTP API and the CLI. */
import { type Accounts, createAccounts } from "./accounts/accounts.ts";
import type { AccountsContext } from "./accounts/context.ts";
import type { SessionSigner } from "./accounts/sessions.ts";
import { PolicyService } from "./escalation/policies.service.ts";
import { MonitorService } from "./monitors/monitors.service.ts";
import { ChannelService } from "./notifications/channels.service.ts";
import { ScheduleService } from "./schedules/schedules.service.ts";

export interface Services {
  accounts: Accounts;
  schedules: ScheduleService;
  channels: ChannelService;
  policies: PolicyService;
  monitors: MonitorService;
}

export function createServices(ctx: AccountsContext, signer: SessionSigner): Services {
  return {
    accounts: createAccounts(ctx, signer),
    schedules: new ScheduleService(ctx),
    channels: new ChannelService(ctx),
    policies: new PolicyService(ctx),
    monitors: new MonitorService(ctx),
  };
}
