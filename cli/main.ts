#!/usr/bin/env bun
/** The one binary: `svc serve`, `svc admin …`, `svc connector`, `svc version`. */
import { Command, CommanderError } from "commander";
import { ConfigError } from "../src/config.ts";
import { SchemaTooNewError } from "../src/db/migrate.ts";
import { AppError } from "../src/errors.ts";
import { adminCommand } from "./commands/admin.ts";
import { connectorCommand } from "./commands/connector.ts";
import { serveCommand } from "./commands/serve.ts";
import { versionCommand } from "./commands/version.ts";

const program = new Command("svc")
  .description("Self-hosted monitoring, alerting, on-call and incidents in one executable.")
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`${message.split("\n")[0]}\n`) });

program.addCommand(serveCommand());
program.addCommand(adminCommand());
program.addCommand(connectorCommand());
program.addCommand(versionCommand());

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode === 0 ? 0 : 1);
  }
  const known =
    error instanceof AppError || error instanceof ConfigError || error instanceof SchemaTooNewError;
  // One line on stderr (DESIGN §3), whatever the error's own message looks like.
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, " ").trim();
  process.stderr.write(`error: ${known ? message : `unexpected failure: ${message}`}\n`);
  process.exit(1);
}
