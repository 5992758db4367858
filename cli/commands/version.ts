import { Command } from "commander";
import { LATEST_SCHEMA_VERSION } from "../../src/db/migrations.ts";
import { COMMIT, VERSION } from "../../src/version.ts";

export function versionCommand(): Command {
  return new Command("version")
    .description("print version, commit and schema version")
    .option("--json", "print JSON")
    .action((options: { json?: boolean }) => {
      const info = { version: VERSION, commit: COMMIT, schema_version: LATEST_SCHEMA_VERSION };
      process.stdout.write(
        options.json
          ? `${JSON.stringify(info)}\n`
          : `svc ${VERSION} (commit ${COMMIT}, schema ${LATEST_SCHEMA_VERSION})\n`,
      );
    });
}
