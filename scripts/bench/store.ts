/**
 * Store micro-benchmark: `Store` (src/db/store.ts) with durability "full" against raw bun:sqlite
 * in WAL mode with synchronous=FULL, in a temp dir on the same file system.
 *
 *   bun scripts/bench/store.ts        (BENCH_STORE_N rows per case, default 2000)
 */
import { Database as SqliteHandle } from "bun:sqlite";
import { join } from "node:path";
import type { Kysely } from "kysely";
import { type Db, Store } from "../../src/db/store.ts";
import {
  envNumber,
  heading,
  keyValues,
  num,
  ratio,
  removeDir,
  runBenchmarkMain,
  type SummaryRow,
  table,
  tempDir,
} from "./lib.ts";

interface BenchDb {
  bench_rows: { id: number | null; payload: string; created_at: number };
}

const TABLE_SQL =
  "CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, created_at INTEGER NOT NULL)";
/** About the size of a small row (an API key or an outbox entry). */
const PAYLOAD = JSON.stringify({ kind: "bench", text: "x".repeat(160) });

function insertUnit(tx: Db): Promise<unknown> {
  return (tx as unknown as Kysely<BenchDb>)
    .insertInto("bench_rows")
    .values({ payload: PAYLOAD, created_at: Date.now() })
    .execute();
}

function openRaw(file: string): SqliteHandle {
  const db = new SqliteHandle(file, { create: true, strict: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = FULL");
  db.run(TABLE_SQL);
  return db;
}

interface Case {
  name: string;
  rows: number;
  commits: number;
  seconds: number;
}

const perSecond = (count: number, seconds: number) => count / seconds;

const SEQUENTIAL = "Store.write, awaited one by one";
const RAW_AUTOCOMMIT = "raw bun:sqlite, autocommit per row";
const RAW_PER_ROW_TX = "raw, BEGIN IMMEDIATE+SAVEPOINT+INSERT+RELEASE+COMMIT per row";
const CONCURRENT = (n: number) => `Store.write, ${n} fired at once`;
const RAW_BATCH = "raw bun:sqlite, one transaction";
const RAW_SAVEPOINTS = "raw, one transaction, savepoint per row";

/** Commits every database receives before timing, so the WAL has wrapped once (no file growth). */
const WARMUP_COMMITS = 1100;

export async function runStoreBench(): Promise<SummaryRow[]> {
  const n = Math.round(envNumber("BENCH_STORE_N", 2000));
  const rounds = Math.round(envNumber("BENCH_STORE_ROUNDS", 3));
  const dir = tempDir("svc-bench-store-");
  try {
    heading(`Store: ${n} single-row inserts per case, durability "full" (WAL, synchronous=FULL)`);
    keyValues([
      ["temp dir", `${dir} (same file system as the default data dir)`],
      [
        "method",
        `${rounds} rounds, cases interleaved, median per case; ${WARMUP_COMMITS} warm-up commits per database`,
      ],
    ]);

    // Store, through Kysely, as the services use it.
    const store = new Store(join(dir, "store.db"), "full");
    store.writer.run(TABLE_SQL);
    for (let i = 0; i < WARMUP_COMMITS; i++) await store.write(insertUnit);

    // Raw bun:sqlite with a prepared INSERT on its own database.
    const raw = openRaw(join(dir, "raw.db"));
    const insert = raw.prepare("INSERT INTO bench_rows (payload, created_at) VALUES (?, ?)");
    for (let i = 0; i < WARMUP_COMMITS; i++) insert.run(PAYLOAD, Date.now());

    const cases: Record<string, Case[]> = {};
    const record = (c: Case) => {
      cases[c.name] ??= [];
      cases[c.name]?.push(c);
    };
    /** Times `body`; `commits` is a fixed count or read from `store.stats` before and after. */
    const timed = async (name: string, commits: number | "store", body: () => Promise<void> | void) => {
      const before = store.stats.commits;
      const started = performance.now();
      await body();
      const seconds = (performance.now() - started) / 1000;
      record({
        name,
        rows: n,
        commits: commits === "store" ? store.stats.commits - before : commits,
        seconds,
      });
    };

    for (let round = 0; round < rounds; round++) {
      await timed(SEQUENTIAL, "store", async () => {
        for (let i = 0; i < n; i++) await store.write(insertUnit);
      });
      await timed(RAW_AUTOCOMMIT, n, () => {
        for (let i = 0; i < n; i++) insert.run(PAYLOAD, Date.now());
      });
      await timed(RAW_PER_ROW_TX, n, () => {
        for (let i = 0; i < n; i++) {
          raw.run("BEGIN IMMEDIATE");
          raw.run("SAVEPOINT unit");
          insert.run(PAYLOAD, Date.now());
          raw.run("RELEASE unit");
          raw.run("COMMIT");
        }
      });
      await timed(CONCURRENT(n), "store", async () => {
        await Promise.all(Array.from({ length: n }, () => store.write(insertUnit)));
      });
      await timed(RAW_BATCH, 1, () => {
        raw
          .transaction(() => {
            for (let i = 0; i < n; i++) insert.run(PAYLOAD, Date.now());
          })
          .immediate();
      });
      await timed(RAW_SAVEPOINTS, 1, () => {
        raw.run("BEGIN IMMEDIATE");
        for (let i = 0; i < n; i++) {
          raw.run("SAVEPOINT unit");
          insert.run(PAYLOAD, Date.now());
          raw.run("RELEASE unit");
        }
        raw.run("COMMIT");
      });
    }
    const storedRows = (store.reader.query("SELECT COUNT(*) AS n FROM bench_rows").get() as { n: number }).n;
    await store.close();
    raw.close();

    /** The round with the median time for each case. */
    const pick = (name: string): Case => {
      const all = [...(cases[name] ?? [])].sort((a, b) => a.seconds - b.seconds);
      return all[Math.floor(all.length / 2)] as Case;
    };
    const sequential = pick(SEQUENTIAL);
    const rawAutocommit = pick(RAW_AUTOCOMMIT);
    const rawPerRowTx = pick(RAW_PER_ROW_TX);
    const concurrent = pick(CONCURRENT(n));
    const rawBatch = pick(RAW_BATCH);
    const rawSavepoints = pick(RAW_SAVEPOINTS);
    const allCommits = (cases[CONCURRENT(n)] ?? []).map((c) => c.commits);

    table(
      ["case", "rows/s", "commits", "commits/s", "rows/commit", "µs/row"],
      [sequential, rawAutocommit, rawPerRowTx, concurrent, rawBatch, rawSavepoints].map((c) => [
        c.name,
        num(perSecond(c.rows, c.seconds)),
        num(c.commits),
        num(perSecond(c.commits, c.seconds)),
        num(c.rows / Math.max(1, c.commits), 1),
        num((c.seconds / c.rows) * 1e6, 1),
      ]),
    );

    const seqVsRaw = perSecond(sequential.commits, sequential.seconds) / perSecond(n, rawAutocommit.seconds);
    const seqVsTx = perSecond(sequential.commits, sequential.seconds) / perSecond(n, rawPerRowTx.seconds);
    const concVsBatch = perSecond(n, concurrent.seconds) / perSecond(n, rawBatch.seconds);
    const concVsSavepoints = perSecond(n, concurrent.seconds) / perSecond(n, rawSavepoints.seconds);
    const grouping = perSecond(n, concurrent.seconds) / perSecond(n, sequential.seconds);
    const expectedRows = WARMUP_COMMITS + 2 * n * rounds;
    console.log("");
    keyValues([
      ["Store sequential / raw autocommit (commits/s)", ratio(seqVsRaw)],
      ["Store sequential / raw same statements per row", `${ratio(seqVsTx)} (Kysely + promise overhead)`],
      ["Store concurrent / raw single transaction (rows/s)", ratio(concVsBatch)],
      [
        "Store concurrent / raw savepoint per row (rows/s)",
        `${ratio(concVsSavepoints)} (Kysely + promise overhead)`,
      ],
      ["Store concurrent / Store sequential (rows/s)", `${ratio(grouping)} (group commit)`],
      [
        "commits for the concurrent writes",
        `${allCommits.join(", ")} for ${num(n)} units in each round (at most 512 units per commit)`,
      ],
      ["rows in the Store table (check)", `${num(storedRows)} (expected ${num(expectedRows)})`],
    ]);
    if (storedRows !== expectedRows) throw new Error("the Store lost or duplicated rows");

    return [
      {
        name: "store sequential commits/s",
        target: "-",
        figure: `${num(perSecond(sequential.commits, sequential.seconds))} (raw autocommit ${num(perSecond(n, rawAutocommit.seconds))}, ${ratio(seqVsRaw)})`,
        pass: null,
      },
      {
        name: "store concurrent rows/s",
        target: "-",
        figure: `${num(perSecond(n, concurrent.seconds))} in ${concurrent.commits} commits (${ratio(grouping)} sequential; raw batch ${ratio(concVsBatch)})`,
        pass: null,
      },
    ];
  } finally {
    removeDir(dir);
  }
}

if (import.meta.main) {
  await runBenchmarkMain(runStoreBench);
}
