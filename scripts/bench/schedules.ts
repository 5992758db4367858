/**
 * Schedules benchmark: on-call evaluations in process, and `GET /schedules/{id}/on-call`
 * through svc against a bare `Bun.serve` answering the same body, on a schedule of 3 layers,
 * 10 participants and 500 overrides.
 *
 *   bun scripts/bench/schedules.ts     (BENCH_SECONDS, default 10; BENCH_EVALS, default 200000)
 */
import { join } from "node:path";
import { onCallAt, type ScheduleSpec } from "../../src/schedules/rotation.ts";
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

const TARGET_EVALS_PER_SECOND = 100_000;
const TARGET_HTTP_RATIO = 0.4;
const DAY = 86_400_000;
const HOUR = 3_600_000;

/** 3 layers over 10 people: business hours, nights, and a weekly catch-all. */
function layers(people: string[], startAt: string) {
  return [
    {
      name: "business",
      rotation: "weekly",
      start_at: startAt,
      handoff_time: "mon 09:00",
      participants: people.slice(0, 4),
      restrictions: [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "09:00", end: "17:00" }],
    },
    {
      name: "nights",
      rotation: "daily",
      start_at: startAt,
      handoff_time: "20:00",
      participants: people.slice(4, 7),
      restrictions: [
        { days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], start: "20:00", end: "08:00" },
      ],
    },
    {
      name: "catch-all",
      rotation: "weekly",
      start_at: startAt,
      handoff_time: "mon 09:00",
      participants: people.slice(7),
    },
  ];
}

/** 500 overrides of 4 hours, one every 17 hours from `from`. */
function overrideWindows(from: number): { start: number; end: number }[] {
  return Array.from({ length: 500 }, (_, i) => ({
    start: from + i * 17 * HOUR,
    end: from + i * 17 * HOUR + 4 * HOUR,
  }));
}

function inProcess(evaluations: number): { perSecond: number } {
  const base = Date.parse("2026-01-05T08:00:00Z");
  const people = Array.from({ length: 10 }, (_, i) => `usr_${i}`);
  const spec: ScheduleSpec = {
    zone: "Europe/Berlin",
    layers: [
      {
        id: "business",
        rotation: "weekly",
        startAt: base,
        handoffMinute: 540,
        handoffWeekday: 1,
        participants: people.slice(0, 4),
        restrictions: [{ days: [1, 2, 3, 4, 5], start: 540, end: 1020 }],
      },
      {
        id: "nights",
        rotation: "daily",
        startAt: base,
        handoffMinute: 1200,
        handoffWeekday: 1,
        participants: people.slice(4, 7),
        restrictions: [{ days: [1, 2, 3, 4, 5, 6, 7], start: 1200, end: 480 }],
      },
      {
        id: "catch-all",
        rotation: "weekly",
        startAt: base,
        handoffMinute: 540,
        handoffWeekday: 1,
        participants: people.slice(7),
        restrictions: [],
      },
    ],
    overrides: overrideWindows(base).map((w, i) => ({
      id: `ovr_${i}`,
      userId: people[i % 10] as string,
      startAt: w.start,
      endAt: w.end,
      order: i,
    })),
  };
  // A different instant each time, spread over the year the overrides cover, `until` included.
  const instant = (i: number) => base + ((i * 7919) % 360) * DAY + ((i * 104_729) % DAY);
  for (let i = 0; i < 2000; i++) onCallAt(spec, instant(evaluations + i));
  const started = performance.now();
  for (let i = 0; i < evaluations; i++) onCallAt(spec, instant(i));
  return { perSecond: evaluations / ((performance.now() - started) / 1000) };
}

export async function runSchedulesBench(): Promise<SummaryRow[]> {
  const seconds = envNumber("BENCH_SECONDS", 10);
  const warmup = process.env.BENCH_WARMUP_SECONDS === "0" ? 0 : envNumber("BENCH_WARMUP_SECONDS", 2);
  const evaluations = envNumber("BENCH_EVALS", 200_000);

  heading("Schedules: on-call with 3 layers, 10 participants, 500 overrides");
  const engine = inProcess(evaluations);
  keyValues([
    ["in process", `${num(engine.perSecond)} on-call evaluations/s (with until), ${num(evaluations)} runs`],
  ]);

  const root = tempDir("svc-bench-schedules-");
  const dataDir = join(root, "data");
  try {
    const { authorization } = await initOrg(dataDir);
    const svc = (await startSvcOnPort(dataDir, join(root, "serve.log"), "warn")).server;
    const people: string[] = [];
    for (let i = 0; i < 10; i++) {
      people.push(
        (
          await api(svc.base, authorization, "POST", "/api/v1/users", {
            email: `p${i}@acme.test`,
            role: "member",
          })
        ).id,
      );
    }
    const now = Date.now();
    const schedule = await api(svc.base, authorization, "POST", "/api/v1/schedules", {
      name: "Platform",
      time_zone: "Europe/Berlin",
      layers: layers(people, new Date(now - 30 * DAY).toISOString()),
    });
    // Overrides from 10 days back to a year ahead: the on-call answer must search them.
    for (const [i, w] of overrideWindows(now - 10 * DAY).entries()) {
      await api(svc.base, authorization, "POST", `/api/v1/schedules/${schedule.id}/overrides`, {
        user_id: people[i % 10],
        start_at: new Date(w.start).toISOString(),
        end_at: new Date(w.end).toISOString(),
      });
    }
    const path = `/api/v1/schedules/${schedule.id}/on-call`;
    const sample = await fetch(`${svc.base}${path}`, { headers: { authorization } });
    const body = await sample.text();
    if (sample.status !== 200) throw new Error(`on-call answered ${sample.status}: ${body}`);

    const bare = await startBare(body);
    console.log(`\n  loading ${bare.label} …`);
    const bareRun = await runLoad(bare, path, authorization, seconds, warmup);
    await stopProcess(bare.proc);
    console.log(`  loading svc serve (warn) GET ${path.replace(schedule.id, "{id}")} …`);
    const svcRun = await runLoad(svc, path, authorization, seconds, warmup);
    await stopProcess(svc.proc);

    const httpRatio = svcRun.rps / bareRun.rps;
    keyValues([
      ["bare Bun.serve", `${num(bareRun.rps)} req/s, p99 ${ms(bareRun.report.latency.p99)}`],
      [
        "svc on-call",
        `${num(svcRun.rps)} req/s, p50 ${ms(svcRun.report.latency.p50)}, p99 ${ms(svcRun.report.latency.p99)}`,
      ],
      ["ratio svc / bare", `${ratio(httpRatio)} (target ≥ ${TARGET_HTTP_RATIO})`],
      ["non-2xx + errors", num(svcRun.non2xx + svcRun.report.errors)],
    ]);
    return [
      {
        name: "on-call evaluations/s in process",
        target: `≥ ${num(TARGET_EVALS_PER_SECOND)}`,
        figure: num(engine.perSecond),
        pass: engine.perSecond >= TARGET_EVALS_PER_SECOND,
      },
      {
        name: "on-call HTTP svc/bare",
        target: `≥ ${TARGET_HTTP_RATIO}`,
        figure: `${ratio(httpRatio)} (${num(svcRun.rps)} vs ${num(bareRun.rps)} req/s)`,
        pass: httpRatio >= TARGET_HTTP_RATIO,
      },
    ];
  } finally {
    removeDir(root);
  }
}

if (import.meta.main) {
  await runBenchmarkMain(runSchedulesBench);
}
