/**
 * `svc admin …`: operator commands that work on the database file directly (WAL lets them run
 * beside `svc serve`). They call the same services as the HTTP API. `--json` output is a
 * contract for scripts (DESIGN §3).
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { Command, Option } from "commander";
import { ROLES, type Role, SCOPES, type Scope } from "../../src/accounts/access.ts";
import { PLANS, type Plan } from "../../src/accounts/org.ts";
import { App } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { errors } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { parseDuration, parseRfc3339 } from "../../src/time.ts";
import { type OutputOptions, printList, printObject } from "../output.ts";

interface Common extends OutputOptions {
  dataDir?: string;
  config?: string;
}

/** Adds the options every admin command takes and runs `body` with an open App. */
function leaf(name: string, description: string) {
  return new Command(name)
    .description(description)
    .option("--data-dir <dir>", "the data directory (default ./data)")
    .option("--config <file>", "TOML or JSON config file")
    .option("--json", "print exactly one JSON document");
}

async function withApp<T>(options: Common, body: (app: App) => Promise<T>): Promise<T> {
  const config = loadConfig({ dataDir: options.dataDir, config: options.config });
  const log = createLogger("warn", "json", (line) => process.stderr.write(line));
  const app = await App.open(config, log);
  try {
    return await body(app);
  } finally {
    await app.stop();
  }
}

function plan(value: string | undefined): Plan | undefined {
  if (value === undefined) return undefined;
  if (!(PLANS as readonly string[]).includes(value))
    throw errors.field("plan", `must be one of ${PLANS.join(", ")}`);
  return value as Plan;
}

function role(value: string): Role {
  if (!(ROLES as readonly string[]).includes(value))
    throw errors.field("role", `must be one of ${ROLES.join(", ")}`);
  return value as Role;
}

function scopes(value: string): Scope[] {
  const list = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = list.find((s) => !(SCOPES as readonly string[]).includes(s));
  if (bad !== undefined || list.length === 0)
    throw errors.field("scopes", `must be a comma list of ${SCOPES.join(", ")}`);
  return list as Scope[];
}

const PAGE_SIZE = 200;

/** Every item of a list, read page by page through a service's `list` (keyset on `id`). */
async function allPages<T extends { id: string }>(
  list: (cursor: (string | number)[] | null) => Promise<{ data: T[]; next_cursor: string | null }>,
): Promise<T[]> {
  const all: T[] = [];
  let cursor: (string | number)[] | null = null;
  for (;;) {
    const page = await list(cursor);
    all.push(...page.data);
    if (!page.next_cursor) return all;
    cursor = [page.data[page.data.length - 1]?.id ?? ""];
  }
}

const orgColumns = [
  { header: "SLUG", value: (o: { slug: string }) => o.slug },
  { header: "NAME", value: (o: { name: string }) => o.name },
  { header: "PLAN", value: (o: { plan: string }) => o.plan },
  { header: "SEATS", value: (o: { seat_count: number }) => String(o.seat_count) },
  { header: "ID", value: (o: { id: string }) => o.id },
];

export function adminCommand(): Command {
  const admin = new Command("admin").description("operator commands on the database file");

  admin.addCommand(
    leaf("init", "create the first organization, its owner, an API key and an ingest token")
      .requiredOption("--org-name <name>", "organization name")
      .requiredOption("--org-slug <slug>", "organization slug")
      .requiredOption("--owner-email <email>", "the owner's email")
      .option("--plan <plan>", "free, pro or enterprise")
      .action(async (o: Common & { orgName: string; orgSlug: string; ownerEmail: string; plan?: string }) => {
        const created = await withApp(o, (app) =>
          app.accounts.orgs.create(
            { name: o.orgName, slug: o.orgSlug, ownerEmail: o.ownerEmail, plan: plan(o.plan) },
            { onlyIfEmpty: true },
          ),
        );
        await printObject(o, created);
      }),
  );

  const org = new Command("org").description("organizations");
  org.addCommand(
    leaf("create", "create an organization with its owner, an API key and an ingest token")
      .requiredOption("--name <name>", "organization name")
      .requiredOption("--slug <slug>", "organization slug")
      .requiredOption("--owner-email <email>", "the owner's email")
      .option("--plan <plan>", "free, pro or enterprise")
      .action(async (o: Common & { name: string; slug: string; ownerEmail: string; plan?: string }) => {
        const created = await withApp(o, (app) =>
          app.accounts.orgs.create({
            name: o.name,
            slug: o.slug,
            ownerEmail: o.ownerEmail,
            plan: plan(o.plan),
          }),
        );
        await printObject(o, created);
      }),
  );
  org.addCommand(
    leaf("list", "list organizations").action(async (o: Common) => {
      await printList(o, await withApp(o, (app) => app.accounts.orgs.list()), orgColumns);
    }),
  );
  org.addCommand(
    leaf("show", "show one organization")
      .requiredOption("--org <slug>", "organization slug")
      .action(async (o: Common & { org: string }) => {
        await printObject(o, await withApp(o, (app) => app.accounts.orgs.bySlug(o.org)));
      }),
  );
  org.addCommand(
    leaf("set-plan", "change an organization's plan")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--plan <plan>", "free, pro or enterprise")
      .action(async (o: Common & { org: string; plan: string }) => {
        await printObject(
          o,
          await withApp(o, (app) => app.accounts.orgs.setPlan(o.org, plan(o.plan) as Plan)),
        );
      }),
  );
  org.addCommand(
    leaf("set-slug", "change an organization's slug (existing ingest tokens keep working)")
      .requiredOption("--org <slug>", "current slug")
      .requiredOption("--slug <new>", "new slug")
      .action(async (o: Common & { org: string; slug: string }) => {
        await printObject(o, await withApp(o, (app) => app.accounts.orgs.setSlug(o.org, o.slug)));
      }),
  );
  admin.addCommand(org);

  const key = new Command("key").description("API keys");
  key.addCommand(
    leaf("create", "create an API key (the secret is printed once)")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--name <name>", "a label")
      .requiredOption("--scopes <list>", `comma list of ${SCOPES.join(", ")}`)
      .addOption(new Option("--user <email>", "the owning user").conflicts("service"))
      .option("--service", "a service-bound key with no user")
      .option("--expires-at <time>", "RFC 3339 time, or 'never' (default 90 days ahead)")
      .option("--channel-id <id>", "bind the key to a cloudevents channel")
      .action(
        async (
          o: Common & {
            org: string;
            name: string;
            scopes: string;
            user?: string;
            service?: boolean;
            expiresAt?: string;
            channelId?: string;
          },
        ) => {
          const created = await withApp(o, async (app) => {
            const orgRow = await app.accounts.orgs.requireSlug(o.org);
            let expires: number | null | undefined;
            if (o.expiresAt === "never") expires = null;
            else if (o.expiresAt !== undefined) {
              expires = parseRfc3339(o.expiresAt) ?? undefined;
              if (expires === undefined)
                throw errors.field("expires-at", "must be an RFC 3339 time or 'never'");
            }
            if (!o.user && !o.service) throw errors.field("user", "give --user EMAIL or --service");
            const userId = o.user ? (await app.accounts.users.getByEmail(orgRow.id, o.user)).id : undefined;
            return app.accounts.keys.create(orgRow.id, null, {
              name: o.name,
              scopes: scopes(o.scopes),
              user_id: userId,
              service: o.service ?? false,
              expires_at: expires,
              channel_id: o.channelId,
            });
          });
          await printObject(o, created);
        },
      ),
  );
  key.addCommand(
    leaf("list", "list API keys")
      .requiredOption("--org <slug>", "organization slug")
      .action(async (o: Common & { org: string }) => {
        const keys = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          return allPages((cursor) => app.accounts.keys.list(orgRow.id, null, PAGE_SIZE, cursor));
        });
        await printList(o, keys, [
          { header: "ID", value: (k) => k.id },
          { header: "NAME", value: (k) => k.name },
          { header: "PREFIX", value: (k) => k.prefix },
          { header: "SCOPES", value: (k) => k.scopes.join(",") },
          { header: "OWNER", value: (k) => (k.service ? "service" : (k.user_id ?? "-")) },
          { header: "EXPIRES", value: (k) => k.expires_at ?? "never" },
          { header: "REVOKED", value: (k) => k.revoked_at ?? "-" },
        ]);
      }),
  );
  key.addCommand(
    leaf("revoke", "revoke an API key (a running server refuses it within 2 seconds)")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--id <key_id>", "the key's id")
      .action(async (o: Common & { org: string; id: string }) => {
        const result = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          return app.accounts.keys.revoke(orgRow.id, null, o.id);
        });
        await printObject(o, result);
      }),
  );
  admin.addCommand(key);

  const user = new Command("user").description("users");
  user.addCommand(
    leaf("list", "list users")
      .requiredOption("--org <slug>", "organization slug")
      .action(async (o: Common & { org: string }) => {
        const users = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          return allPages((cursor) => app.accounts.users.list(orgRow.id, { limit: PAGE_SIZE, cursor }));
        });
        await printList(o, users, [
          { header: "EMAIL", value: (u) => u.email },
          { header: "ROLE", value: (u) => u.role },
          { header: "STATUS", value: (u) => u.status },
          { header: "MFA", value: (u) => (u.mfa_enabled ? "yes" : "no") },
          { header: "ID", value: (u) => u.id },
        ]);
      }),
  );
  user.addCommand(
    leaf("invite", "invite a user (the invite email goes through the outbox)")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--email <email>", "the user's email")
      .requiredOption("--role <role>", "admin, member or viewer")
      .action(async (o: Common & { org: string; email: string; role: string }) => {
        const invited = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          return app.accounts.users.invite(orgRow.id, { email: o.email, role: role(o.role) });
        });
        await printObject(o, invited);
      }),
  );
  user.addCommand(
    leaf("set-role", "change a user's role")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--email <email>", "the user's email")
      .requiredOption("--role <role>", "admin, member or viewer")
      .action(async (o: Common & { org: string; email: string; role: string }) => {
        const updated = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          const target = await app.accounts.users.getByEmail(orgRow.id, o.email);
          return app.accounts.users.update(orgRow.id, target.id, { role: role(o.role) });
        });
        await printObject(o, updated as Record<string, unknown>);
      }),
  );
  user.addCommand(
    leaf("invite-link", "a fresh single-use invite link (the previous one stops working)")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--email <email>", "the user's email")
      .action(async (o: Common & { org: string; email: string }) => {
        const link = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          return app.accounts.users.inviteLink(orgRow.id, o.email);
        });
        await printObject(o, link);
      }),
  );
  admin.addCommand(user);

  admin.addCommand(
    leaf("token", "mint an admin JWT for an owner or admin")
      .requiredOption("--org <slug>", "organization slug")
      .requiredOption("--user <email>", "an owner or admin")
      .option("--ttl <duration>", "lifetime such as 15m, 2h (at most 24h)", "15m")
      .action(async (o: Common & { org: string; user: string; ttl: string }) => {
        const ttl = parseDuration(o.ttl);
        if (ttl === null || ttl < 60_000 || ttl > 86_400_000)
          throw errors.field("ttl", "must be between 1m and 24h");
        const token = await withApp(o, async (app) => {
          const orgRow = await app.accounts.orgs.requireSlug(o.org);
          const target = await app.accounts.users.getByEmail(orgRow.id, o.user);
          return app.accounts.auth.mintAdminToken(
            {
              orgId: orgRow.id,
              kind: "session",
              userId: target.id,
              role: target.role,
              scopes: null,
              keyId: null,
              channelId: null,
              actor: target.id,
            },
            ttl,
          );
        });
        await printObject(o, token);
      }),
  );

  admin.addCommand(
    leaf("backup", "write an online, consistent copy of the database")
      .argument("<file>", "target file (must not exist)")
      .action(async (file: string, o: Common) => {
        const target = resolve(file);
        if (existsSync(target)) throw errors.field("file", `${target} already exists`);
        await withApp(o, async (app) => app.store.backup(target));
        await printObject(o, { file: target, bytes: statSync(target).size });
      }),
  );

  admin.addCommand(
    leaf("migrate", "apply pending migrations").action(async (o: Common) => {
      const version = await withApp(o, async (app) => app.schemaVersion);
      await printObject(o, { schema_version: version });
    }),
  );

  return admin;
}
