/** `svc connector`: the Knative-style event source (DESIGN §8; connector/). */
import { Command } from "commander";
import {
  type ConnectorFlags,
  DEFAULT_CONCURRENCY,
  DEFAULT_SINK_TIMEOUT_SECONDS,
  resolveConfig,
} from "../../connector/config.ts";
import { Connector } from "../../connector/connector.ts";
import { createLogger } from "../../src/log.ts";

export function connectorCommand(): Command {
  return new Command("connector")
    .description(
      "deliver a svc server's CloudEvents to a sink and relay the sink's replies (Knative event source)",
    )
    .option("--url <url>", "svc base URL (env SVC_URL)")
    .option("--api-key <key>", "API key with scope events (env SVC_API_KEY; prefer the env over the flag)")
    .option("--sink <url>", "where events are posted (env K_SINK)")
    .option("--filter <globs>", "comma-separated globs on the event type, e.g. run.service.alert.*")
    .option("--ingest-token <token>", "ingest token replies are forwarded with (env SVC_INGEST_TOKEN)")
    .option("--state-file <file>", "where the committed cursor is kept across restarts")
    .option("--start <now|earliest>", "where to start without a saved cursor", "now")
    .option("--structured", "post events in structured mode (default: binary mode)")
    .option("--concurrency <n>", `deliveries in flight at once (default ${DEFAULT_CONCURRENCY})`)
    .option("--health-listen <host:port>", "serve /healthz, /readyz and /metrics")
    .addHelpText(
      "after",
      `\nKnative SinkBinding environment: K_SINK, K_CE_OVERRIDES ({"extensions":{"name":"value"}}),\nK_CA_CERTS (PEM, trusted for TLS to the sink), K_SINK_TIMEOUT (seconds, default ${DEFAULT_SINK_TIMEOUT_SECONDS}).\nLogs: SVC_LOG_LEVEL (debug|info|warn|error), SVC_LOG_FORMAT (json|pretty).`,
    )
    .action(async (flags: ConnectorFlags) => {
      const resolved = resolveConfig(flags);
      if (!resolved.ok) {
        for (const problem of resolved.problems) process.stderr.write(`error: ${problem}\n`);
        process.exit(1);
      }
      const config = resolved.config;
      const log = createLogger(config.log.level, config.log.format);
      const connector = new Connector(config, log);
      process.on("SIGTERM", () => connector.stop("SIGTERM"));
      process.on("SIGINT", () => connector.stop("SIGINT"));
      const code = await connector.run();
      process.exit(code);
    });
}
