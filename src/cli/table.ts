/** The plain-text tables the reading commands print (list, usage). */

/** A table with a header, left-aligned first column(s) and right-aligned numbers; one line per row, header first. */
export function table(head: string[], rows: string[][], leftColumns: number[] = [0]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const left = new Set(leftColumns);
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 && left.has(i) ? c : left.has(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)];
}
