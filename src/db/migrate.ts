/**
 * Applies the embedded migrations in order, each in its own transaction, and refuses to open a
 * database written by a newer svc (its schema version is above the newest migration we know).
 */
import type { Database as SqliteHandle } from "bun:sqlite";
import { LATEST_SCHEMA_VERSION, migrations } from "./migrations.ts";

export class SchemaTooNewError extends Error {
  constructor(readonly found: number) {
    super(
      `the database has schema version ${found}, newer than this svc understands (${LATEST_SCHEMA_VERSION}); ` +
        "run a newer svc or restore a backup",
    );
  }
}

export function schemaVersion(handle: SqliteHandle): number {
  handle.run(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const row = handle.query("SELECT MAX(version) AS version FROM schema_migrations").get() as {
    version: number | null;
  };
  return row.version ?? 0;
}

/** Brings the schema up to date; returns the schema version afterwards. */
export function migrate(handle: SqliteHandle): number {
  const current = schemaVersion(handle);
  if (current > LATEST_SCHEMA_VERSION) throw new SchemaTooNewError(current);
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    handle
      .transaction(() => {
        // Another process (serve and svc admin starting together) may have applied it meanwhile.
        if (schemaVersion(handle) >= migration.version) return;
        handle.run(migration.sql);
        handle
          .query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
          .run(migration.version, migration.name, Date.now());
      })
      .immediate();
  }
  return LATEST_SCHEMA_VERSION;
}
