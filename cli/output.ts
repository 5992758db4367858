/** How admin commands answer: one JSON document with --json, else a table or key/value lines. */
import type { Column } from "./ui/table.tsx";

export interface OutputOptions {
  json?: boolean;
}

export async function printObject(options: OutputOptions, value: Record<string, unknown>): Promise<void> {
  if (options.json) {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    return;
  }
  for (const [key, field] of Object.entries(value)) {
    if (field !== null && typeof field === "object" && !Array.isArray(field)) {
      process.stdout.write(`${key}:\n`);
      for (const [k, v] of Object.entries(field)) process.stdout.write(`  ${k}: ${format(v)}\n`);
    } else {
      process.stdout.write(`${key}: ${format(field)}\n`);
    }
  }
}

export async function printList<Row>(
  options: OutputOptions,
  rows: Row[],
  columns: Column<Row>[],
): Promise<void> {
  if (options.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (process.stdout.isTTY) {
    // ink and React load only when a table is drawn: they cost ~30 MB and ~100 ms at start.
    const { printTable } = await import("./ui/table.tsx");
    await printTable(rows, columns);
    return;
  }
  process.stdout.write(`${columns.map((c) => c.header).join("\t")}\n`);
  for (const row of rows) process.stdout.write(`${columns.map((c) => c.value(row)).join("\t")}\n`);
}

function format(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (Array.isArray(value)) return value.join(",");
  return String(value);
}
