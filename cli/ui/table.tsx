/** A plain table for the terminal, drawn with ink. */
import { Box, render, Text } from "ink";

export interface Column<Row> {
  header: string;
  value: (row: Row) => string;
}

function Table<Row>({ rows, columns }: { rows: Row[]; columns: Column<Row>[] }) {
  const widths = columns.map((c) => Math.max(c.header.length, ...rows.map((r) => c.value(r).length)));
  return (
    <Box flexDirection="column">
      <Box>
        {columns.map((c, i) => (
          <Box key={c.header} width={(widths[i] ?? 0) + 2}>
            <Text bold>{c.header}</Text>
          </Box>
        ))}
      </Box>
      {rows.map((row, r) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows have no stable key of their own
        <Box key={r}>
          {columns.map((c, i) => (
            <Box key={c.header} width={(widths[i] ?? 0) + 2}>
              <Text>{c.value(row)}</Text>
            </Box>
          ))}
        </Box>
      ))}
      {rows.length === 0 ? <Text dimColor>(none)</Text> : null}
    </Box>
  );
}

export async function printTable<Row>(rows: Row[], columns: Column<Row>[]): Promise<void> {
  const instance = render(<Table rows={rows} columns={columns} />);
  instance.unmount();
  await instance.waitUntilExit();
}

export function Banner({ title, lines }: { title: string; lines: [string, string][] }) {
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1}>
      <Text bold color="green">
        {title}
      </Text>
      {lines.map(([label, value]) => (
        <Text key={label}>
          <Text dimColor>{label.padEnd(14)}</Text>
          {value}
        </Text>
      ))}
    </Box>
  );
}

export async function printBanner(title: string, lines: [string, string][]): Promise<void> {
  const instance = render(<Banner title={title} lines={lines} />);
  instance.unmount();
  await instance.waitUntilExit();
}
