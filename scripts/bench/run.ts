/**
 * `bun run bench`: the performance figures in one run (one process tree): the HTTP foundation,
 * the store, schedules, alerting, public status pages, CloudEvents (BENCH_CE_*: see cloudevents.ts)
 * and the connector (BENCH_EVENTS, BENCH_RATE: see connector.ts).
 *
 *   BENCH_SECONDS=10 bun scripts/bench/run.ts
 *
 * Environment: BENCH_SECONDS (measured seconds per server, default 10; alerting's default is 20),
 * BENCH_WARMUP_SECONDS (default 2, 0 for none), BENCH_IDLE_MS (wait before the idle RSS reading,
 * default 1000), BENCH_STORE_N (rows per store case, default 2000), BENCH_ALERTS (alerts stored
 * for the alert list, default 100000) and BENCH_LIST_REQUESTS (default 200). Figures for the
 * issue note, so the exit code is 0 even when a target is missed; it is 1 only when the
 * benchmark itself failed.
 */
import { runAlertingBench } from "./alerting.ts";
import { runCloudEventsBench } from "./cloudevents.ts";
import { runConnectorBench } from "./connector.ts";
import { runFoundation } from "./foundation.ts";
import { runBenchmarkMain } from "./lib.ts";
import { runSchedulesBench } from "./schedules.ts";
import { runStatusPagesBench } from "./status-pages.ts";
import { runStoreBench } from "./store.ts";

await runBenchmarkMain(async () => [
  ...(await runFoundation()),
  ...(await runStoreBench()),
  ...(await runSchedulesBench()),
  ...(await runAlertingBench()),
  ...(await runStatusPagesBench()),
  ...(await runCloudEventsBench()),
  ...(await runConnectorBench()),
]);
