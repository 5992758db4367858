/**
 * Public status page benchmark: `GET /status/{org}/{page}` (HTML) and `…/index.json` through
 * svc against a bare `Bun.serve` answering the same bytes, at 64 connections, on a page with
 * three active incidents; then a check that the page is right on the first request after an
 * incident update (no stale banner).
 *
 *   bun scripts/bench/status-pages.ts     (BENCH_SECONDS, default 10)
 */
import { join } from "node:path";
import { initOrg, runLoad, startBare, startSvcOnPort } from "./foundation.ts";
import {
  api,
  envNumber,
  heading,
  keyValues,
  ms,
  num,
  ratio,
  removeDir,
  runBenchmarkMain,
  type SummaryRow,
  stopProcess,
  tempDir,
} from "./lib.ts";

const TARGET_RATIO = 0.6;

export async function runStatusPagesBench(): Promise<SummaryRow[]> {
  const seconds = envNumber("BENCH_SECONDS", 10);
  const warmup = process.env.BENCH_WARMUP_SECONDS === "0" ? 0 : envNumber("BENCH_WARMUP_SECONDS", 2);
  heading("Public status page: svc vs bare Bun.serve, 64 connections");
  const root = tempDir("svc-bench-status-");
  const dataDir = join(root, "data");
  try {
    const { authorization } = await initOrg(dataDir);
    const svc = (await startSvcOnPort(dataDir, join(root, "serve.log"), "warn")).server;
    const page = await api(svc.base, authorization, "POST", "/api/v1/status-pages", {
      slug: "status",
      title: "Acme status",
    });
    const incidents = [];
    for (const [title, severity] of [
      ["Payments failing", "critical"],
      ["Slow search", "minor"],
      ["Login delays", "major"],
    ]) {
      incidents.push(
        await api(svc.base, authorization, "POST", "/api/v1/incidents", {
          title,
          severity,
          status_page_ids: [page.id],
          initial_update: { body: `${title}: we are on it.` },
        }),
      );
    }
    const rows: SummaryRow[] = [];
    for (const [label, path] of [
      ["HTML", "/status/acme/status"],
      ["JSON", "/status/acme/status/index.json"],
    ] as const) {
      const sample = await fetch(`${svc.base}${path}`);
      const body = await sample.text();
      const bare = await startBare(body);
      const bareRun = await runLoad(bare, path, authorization, seconds, warmup);
      await stopProcess(bare.proc);
      const svcRun = await runLoad(svc, path, authorization, seconds, warmup);
      const r = svcRun.rps / bareRun.rps;
      keyValues([
        [`${label} bare`, `${num(bareRun.rps)} req/s, p99 ${ms(bareRun.report.latency.p99)}`],
        [
          `${label} svc`,
          `${num(svcRun.rps)} req/s, p50 ${ms(svcRun.report.latency.p50)}, p99 ${ms(svcRun.report.latency.p99)}`,
        ],
        [`${label} ratio`, `${ratio(r)} (target ≥ ${TARGET_RATIO})`],
      ]);
      rows.push({
        name: `status page ${label} svc/bare`,
        target: `≥ ${TARGET_RATIO}`,
        figure: `${ratio(r)} (${num(svcRun.rps)} vs ${num(bareRun.rps)} req/s)`,
        pass: r >= TARGET_RATIO,
      });
    }
    // Right after an update is committed, the very next request shows it.
    const worst = incidents[0] as { id: string };
    await api(svc.base, authorization, "PATCH", `/api/v1/incidents/${worst.id}`, { status: "resolved" });
    const after = (await (await fetch(`${svc.base}/status/acme/status/index.json`)).json()) as {
      banner: { text: string };
    };
    const fresh = after.banner.text === "Partial Outage";
    keyValues([
      [
        "banner right after resolving the critical incident",
        `${after.banner.text} (expected Partial Outage)`,
      ],
    ]);
    rows.push({
      name: "no stale banner after a committed change",
      target: "fresh",
      figure: after.banner.text,
      pass: fresh,
    });
    await stopProcess(svc.proc);
    return rows;
  } finally {
    removeDir(root);
  }
}

if (import.meta.main) {
  await runBenchmarkMain(runStatusPagesBench);
}
