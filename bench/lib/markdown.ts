// A Markdown table, for BENCHMARKS.md's sections.
export function markdownTable(header: string[], body: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...body.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
