import { ApiKeyService } from "./api-keys.service.ts";
import { AuthService } from "./auth.service.ts";
import type { AccountsContext } from "./context.ts";
import { IngestCredentials } from "./ingest-credentials.ts";
import { IngestTokenService } from "./ingest-tokens.service.ts";
import { OrgService } from "./orgs.service.ts";
import type { SessionSigner } from "./sessions.ts";
import { TeamService } from "./teams.service.ts";
import { InviteService, UserService } from "./users.service.ts";

/** The account services, wired once and shared by the HTTP layer and the admin CLI. */
export interface Accounts {
  orgs: OrgService;
  users: UserService;
  keys: ApiKeyService;
  teams: TeamService;
  ingestTokens: IngestTokenService;
  /** What the ingest endpoint authenticates with (shared so a revoke can forget it). */
  ingestCredentials: IngestCredentials;
  auth: AuthService;
}

export function createAccounts(ctx: AccountsContext, signer: SessionSigner): Accounts {
  const invites = new InviteService(ctx);
  const ingestCredentials = new IngestCredentials(ctx.store);
  return {
    orgs: new OrgService(ctx, invites),
    users: new UserService(ctx, invites),
    keys: new ApiKeyService(ctx),
    teams: new TeamService(ctx),
    ingestTokens: new IngestTokenService(ctx, ingestCredentials),
    ingestCredentials,
    auth: new AuthService(ctx, signer),
  };
}
