/** `svc serve`: the API server, scheduler and first-run set-up. */
import { Command } from "commander";
import { App, type FirstRun } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger, type Logger } from "../../src/log.ts";

interface ServeOptions {
  config?: string;
  dataDir?: string;
  listen?: string;
  baseUrl?: string;
  edition?: string;
}

export function serveCommand(): Command {
  return new Command("serve")
    .description("run the API server, scheduler and event delivery")
    .option("--config <file>", "TOML or JSON config file (env SVC_CONFIG)")
    .option("--data-dir <dir>", "where svc.db and the signing key live (default ./data)")
    .option("--listen <host:port>", "address to listen on (default 127.0.0.1:8080)")
    .option("--base-url <url>", "public URL used in links")
    .option("--edition <edition>", "oss or cloud")
    .action(async (options: ServeOptions) => {
      const started = performance.now();
      const config = loadConfig(options);
      const log = createLogger(config.log.level, config.log.format);
      const app = await App.open(config, log);
      const firstRun = await app.firstRun();
      const address = await app.start();
      log.info("svc is serving", {
        listen: `${address.hostname}:${address.port}`,
        data_dir: config.data_dir,
        edition: config.edition,
        schema_version: app.schemaVersion,
        startup_ms: Math.round(performance.now() - started),
      });
      if (firstRun) await announceFirstRun(firstRun, log);

      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        log.info("stopping", { signal });
        await app.stop();
        log.info("stopped");
        process.exit(0);
      };
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGINT", () => void stop("SIGINT"));
    });
}

/** On a TTY the banner shows the secret; otherwise stdout is a log and it shows only the file. */
async function announceFirstRun(first: FirstRun, log: Logger): Promise<void> {
  const signUp = `svc admin user invite-link --org ${first.orgSlug} --email ${first.ownerEmail}`;
  if (process.stdout.isTTY) {
    // ink and React load only for the banner: a server under systemd never pays for them.
    const { printBanner } = await import("../ui/table.tsx");
    await printBanner("svc is set up: first start on an empty database", [
      ["organization", first.orgSlug],
      ["owner", `${first.ownerEmail} (invited)`],
      ["API key", first.keySecret],
      ["saved in", first.keyFile],
      ["finish sign-up", signUp],
    ]);
    return;
  }
  log.info("first start: created the default organization", {
    org: first.orgSlug,
    owner: first.ownerEmail,
    api_key_prefix: first.keyPrefix,
    api_key_file: first.keyFile,
    finish_sign_up: signUp,
  });
}
