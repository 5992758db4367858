import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { migrate, SchemaTooNewError } from "../../src/db/migrate.ts";
import { LATEST_SCHEMA_VERSION, migrations } from "../../src/db/migrations.ts";
import { Store } from "../../src/db/store.ts";
import { ROOT, tempDir } from "../support/harness.ts";

const dirs: string[] = [];
function freshStore(): Store {
  const dir = tempDir("svc-store-");
  dirs.push(dir);
  const store = new Store(join(dir, "svc.db"), "full");
  migrate(store.writer);
  return store;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const orgRow = (i: number) => ({
  id: `org_${String(i).padStart(26, "0")}`,
  name: `Org ${i}`,
  slug: `org-${i}`,
  plan: "enterprise" as const,
  settings: "{}",
  settings_version: 1,
  created_at: i,
  updated_at: i,
});

describe("store", () => {
  test("pragmas: WAL, synchronous FULL, foreign keys on", () => {
    const store = freshStore();
    expect((store.writer.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe(
      "wal",
    );
    expect((store.writer.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(2);
    expect((store.writer.query("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys).toBe(
      1,
    );
    return store.close();
  });

  test("concurrent writes are grouped into fewer commits, and each is visible once it resolves", async () => {
    const store = freshStore();
    const writes = Array.from({ length: 200 }, (_, i) =>
      store.write(async (tx) => {
        await tx.insertInto("orgs").values(orgRow(i)).execute();
        return i;
      }),
    );
    const results = await Promise.all(writes);
    expect(results).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(store.stats.units).toBe(200);
    expect(store.stats.commits).toBeLessThan(10);
    const count = store.reader.query("SELECT COUNT(*) AS n FROM orgs").get() as { n: number };
    expect(count.n).toBe(200);
    await store.close();
  });

  test("a failing unit rolls back alone; the others in its group commit", async () => {
    const store = freshStore();
    const ok1 = store.write((tx) => tx.insertInto("orgs").values(orgRow(1)).execute());
    const bad = store.write(async (tx) => {
      await tx.insertInto("orgs").values(orgRow(2)).execute();
      throw new Error("rule broken halfway");
    });
    const ok2 = store.write((tx) => tx.insertInto("orgs").values(orgRow(3)).execute());
    await ok1;
    await ok2;
    await expect(bad).rejects.toThrow("rule broken halfway");
    const slugs = (store.reader.query("SELECT slug FROM orgs ORDER BY slug").all() as { slug: string }[]).map(
      (r) => r.slug,
    );
    expect(slugs).toEqual(["org-1", "org-3"]);
    await store.close();
  });

  test("an acknowledged write survives closing and reopening the file", async () => {
    const store = freshStore();
    await store.write((tx) => tx.insertInto("orgs").values(orgRow(7)).execute());
    await store.close();
    const again = new Store(store.file, "full");
    expect((again.reader.query("SELECT COUNT(*) AS n FROM orgs").get() as { n: number }).n).toBe(1);
    await again.close();
  });
});

describe("migrations", () => {
  test("every file in migrations/ is embedded, in order", () => {
    const files = readdirSync(join(ROOT, "migrations"))
      .filter((f) => f.endsWith(".sql"))
      .sort();
    expect(migrations.map((m) => `${m.name}.sql`)).toEqual(files);
    expect(migrations.map((m) => m.version)).toEqual(files.map((f) => Number(f.slice(0, 4))));
    expect(LATEST_SCHEMA_VERSION).toBe(migrations.length);
  });

  test("migrating twice is a no-op; a newer database is refused", () => {
    const dir = tempDir("svc-migrate-");
    dirs.push(dir);
    const db = new Database(join(dir, "svc.db"));
    expect(migrate(db)).toBe(LATEST_SCHEMA_VERSION);
    expect(migrate(db)).toBe(LATEST_SCHEMA_VERSION);
    db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', 0)");
    expect(() => migrate(db)).toThrow(SchemaTooNewError);
    db.close();
  });
});

describe("afterCommit", () => {
  test("hooks run after their unit commits, and never for a unit that rolled back", async () => {
    const store = freshStore();
    const seen: string[] = [];
    const kept = store.write(async (tx) => {
      await tx.insertInto("orgs").values(orgRow(1)).execute();
      store.afterCommit(() => {
        const n = (store.reader.query("SELECT COUNT(*) AS n FROM orgs").get() as { n: number }).n;
        seen.push(`kept sees ${n} row`);
      });
    });
    const dropped = store.write(async (tx) => {
      store.afterCommit(() => seen.push("dropped"));
      await tx.insertInto("orgs").values(orgRow(1)).execute();
    });
    await kept;
    await expect(dropped).rejects.toThrow();
    expect(seen).toEqual(["kept sees 1 row"]);
    expect(() => store.afterCommit(() => {})).toThrow();
    await store.close();
  });
});
