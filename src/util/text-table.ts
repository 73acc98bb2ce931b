// Columns for a terminal: each cell made printable (terminal-text.ts) and padded to its column's width,
// two spaces between columns, the last column unpadded. `kubediff resources` and `kubediff fleet status`.
import { printable } from './terminal-text.ts';

/** `rows` (the header first) as aligned lines, each ending in a newline. */
export function textTable(rows: readonly (readonly string[])[]): string {
  const lines = rows.map((row) => row.map((cell) => printable(cell)));
  const widths: number[] = [];
  for (const line of lines) {
    line.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, cell.length);
    });
  }
  return lines
    .map((line) =>
      line
        .map((cell, column) => (column === line.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  '),
    )
    .join('\n')
    .concat('\n');
}
