/**
 * A small Kysely dialect over `bun:sqlite`. Each connection wraps one synchronous SQLite handle;
 * statements go through `Database.query`, which caches the prepared statement per SQL text, so
 * every query Kysely compiles runs as a prepared statement after its first use.
 */
import type { Database as SqliteHandle } from "bun:sqlite";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";

const WRITE_VERBS = /^\s*(insert|update|delete|replace|with[\s\S]*\b(insert|update|delete)\b)/i;

/** What a statement does, worked out once per SQL text. */
interface StatementKind {
  returnsRows: boolean;
  isWrite: boolean;
}

class BunSqliteConnection implements DatabaseConnection {
  private readonly kinds = new Map<string, StatementKind>();

  constructor(private readonly handle: SqliteHandle) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.handle.query(compiled.sql);
    const parameters = compiled.parameters as never[];
    let kind = this.kinds.get(compiled.sql);
    if (!kind) {
      kind = { returnsRows: statement.columnNames.length > 0, isWrite: WRITE_VERBS.test(compiled.sql) };
      this.kinds.set(compiled.sql, kind);
    }
    if (kind.returnsRows) return { rows: statement.all(...parameters) as R[] };
    const result = statement.run(...parameters);
    return {
      rows: [],
      numAffectedRows: kind.isWrite ? BigInt(result.changes) : undefined,
      insertId: kind.isWrite ? BigInt(result.lastInsertRowid) : undefined,
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered; the method exists for the interface.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported by the bun:sqlite dialect");
  }
}

class BunSqliteDriver implements Driver {
  private readonly connection: BunSqliteConnection;
  constructor(handle: SqliteHandle) {
    this.connection = new BunSqliteConnection(handle);
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }
  async beginTransaction(): Promise<void> {
    throw new Error("use Store.write for transactions");
  }
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

export class BunSqliteDialect implements Dialect {
  constructor(private readonly handle: SqliteHandle) {}
  createDriver(): Driver {
    return new BunSqliteDriver(this.handle);
  }
  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
