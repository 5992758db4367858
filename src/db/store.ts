/**
 * The store: one writer connection that group-commits, one reader connection, both over the
 * same WAL database. Callers hand `write` a unit of work; units queued while a commit is under
 * way are committed together in the next transaction, each inside its own savepoint so that
 * one failing unit rolls back alone. A unit's promise settles only after its COMMIT returned,
 * so an answer to a client is never sent before its write is durable.
 */
import { Database as SqliteHandle } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Kysely } from "kysely";
import type { Database } from "./database.ts";
import { BunSqliteDialect } from "./dialect.ts";

export type Durability = "full" | "process";
export type Db = Kysely<Database>;

interface Unit {
  run: (tx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const MAX_UNITS_PER_COMMIT = 512;
const BUSY_TIMEOUT_MS = 5000;

export interface StoreStats {
  commits: number;
  units: number;
}

export class Store {
  readonly read: Db;
  readonly writer: SqliteHandle;
  readonly reader: SqliteHandle;
  private readonly writeDb: Db;
  private queue: Unit[] = [];
  /** Callbacks registered by the unit that is running now, see `afterCommit`. */
  private unitHooks: (() => void)[] | null = null;
  private draining = false;
  private closed = false;
  private readonly commitListeners: (() => void)[] = [];
  readonly stats: StoreStats = { commits: 0, units: 0 };

  constructor(
    readonly file: string,
    durability: Durability,
  ) {
    mkdirSync(dirname(file), { recursive: true });
    this.writer = openHandle(file, durability, false);
    this.reader = openHandle(file, durability, true);
    this.writeDb = new Kysely<Database>({ dialect: new BunSqliteDialect(this.writer) });
    this.read = new Kysely<Database>({ dialect: new BunSqliteDialect(this.reader) });
  }

  /** Runs `run` in a group-committed transaction and settles after it is durable. */
  write<T>(run: (tx: Db) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("the store is closed"));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) {
        this.draining = true;
        // After the I/O phase, not in this microtask: requests that arrived together have
        // queued their units by then and commit in one transaction (one fsync).
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_UNITS_PER_COMMIT);
        await this.commitBatch(batch);
      }
    } finally {
      this.draining = false;
    }
  }

  private async commitBatch(batch: Unit[]): Promise<void> {
    const settled: { unit: Unit; ok: boolean; value: unknown; hooks: (() => void)[] }[] = [];
    try {
      this.writer.run("BEGIN IMMEDIATE");
    } catch (error) {
      for (const unit of batch) unit.reject(error);
      return;
    }
    for (const unit of batch) {
      const hooks: (() => void)[] = [];
      this.unitHooks = hooks;
      try {
        this.writer.run("SAVEPOINT unit");
        const value = await unit.run(this.writeDb);
        this.writer.run("RELEASE unit");
        settled.push({ unit, ok: true, value, hooks });
      } catch (error) {
        rollBackUnit(this.writer);
        settled.push({ unit, ok: false, value: error, hooks: [] });
      } finally {
        this.unitHooks = null;
      }
    }
    try {
      this.writer.run("COMMIT");
    } catch (error) {
      if (this.writer.inTransaction) this.writer.run("ROLLBACK");
      for (const { unit } of settled) unit.reject(error);
      return;
    }
    this.stats.commits += 1;
    this.stats.units += batch.length;
    for (const listener of this.commitListeners) runHook(listener);
    for (const { unit, ok, value, hooks } of settled) {
      for (const hook of hooks) runHook(hook);
      if (ok) unit.resolve(value);
      else unit.reject(value);
    }
  }

  /**
   * Calls `listener` after every commit of this store's writer, before the committed units'
   * callers resume: the event broker reads the new events there once, for every consumer.
   */
  onCommit(listener: () => void): void {
    this.commitListeners.push(listener);
  }

  /**
   * A number that changes whenever any connection, in this process or another (`svc admin`),
   * has committed since it was last read: caches of rows compare it to know they are fresh.
   */
  dataVersion(): number {
    return (this.reader.query("PRAGMA data_version").get() as { data_version: number }).data_version;
  }

  /**
   * Called from inside a `write` unit: runs `hook` once that unit's changes are committed, and
   * never if they roll back (log lines about a change, waking consumers of new rows).
   */
  afterCommit(hook: () => void): void {
    if (!this.unitHooks) throw new Error("afterCommit is only valid inside a write unit");
    this.unitHooks.push(hook);
  }

  /** An online, consistent copy of the database (`VACUUM INTO`); the target must not exist. */
  backup(target: string): void {
    // The reader is `query_only`, which SQLite applies to VACUUM INTO as well; lift it for this
    // one synchronous statement (nothing else can run on this connection meanwhile).
    this.reader.run("PRAGMA query_only = OFF");
    try {
      this.reader.query("VACUUM INTO ?").run(target);
    } finally {
      this.reader.run("PRAGMA query_only = ON");
    }
  }

  /** Waits for queued writes, checkpoints the WAL and closes both connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.draining || this.queue.length > 0) await Bun.sleep(1);
    this.closed = true;
    try {
      this.writer.run("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Another process (svc admin) may hold the database; the WAL is checkpointed later.
    }
    this.reader.close();
    this.writer.close();
  }
}

/** Undoes a failed unit's savepoint; if it never opened, there is nothing to undo. */
function rollBackUnit(writer: SqliteHandle): void {
  try {
    writer.run("ROLLBACK TO unit");
    writer.run("RELEASE unit");
  } catch {
    // SAVEPOINT itself failed: the unit wrote nothing.
  }
}

/** A failing hook must not keep the other units of its group from being answered. */
function runHook(hook: () => void): void {
  try {
    hook();
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "afterCommit hook failed", error: String(error) }));
  }
}

function openHandle(file: string, durability: Durability, readonly: boolean): SqliteHandle {
  const handle = new SqliteHandle(file, { create: true, strict: true });
  handle.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (!readonly) handle.run("PRAGMA journal_mode = WAL");
  handle.run(`PRAGMA synchronous = ${durability === "full" ? "FULL" : "NORMAL"}`);
  handle.run("PRAGMA foreign_keys = ON");
  // Deleted rows (sent email bodies with single-use links) are overwritten, not left in free pages.
  handle.run("PRAGMA secure_delete = ON");
  handle.run("PRAGMA temp_store = MEMORY");
  handle.run("PRAGMA cache_size = -16000");
  if (readonly) handle.run("PRAGMA query_only = ON");
  return handle;
}
