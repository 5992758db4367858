/**
 * The SQL migrations, embedded into the binary as text. Every file of `migrations/` is listed
 * here in name order; a test checks that none is missing.
 */
import accounts from "../../migrations/0001_accounts.sql" with { type: "text" };
import schedules from "../../migrations/0002_schedules.sql" with { type: "text" };
import alerting from "../../migrations/0003_alerting.sql" with { type: "text" };
import incidents from "../../migrations/0004_incidents.sql" with { type: "text" };
import cloudevents from "../../migrations/0005_cloudevents.sql" with { type: "text" };

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  { version: 1, name: "0001_accounts", sql: accounts },
  { version: 2, name: "0002_schedules", sql: schedules },
  { version: 3, name: "0003_alerting", sql: alerting },
  { version: 4, name: "0004_incidents", sql: incidents },
  { version: 5, name: "0005_cloudevents", sql: cloudevents },
];

export const LATEST_SCHEMA_VERSION = migrations[migrations.length - 1]?.version ?? 0;
