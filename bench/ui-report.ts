// Section 8 of BENCHMARKS.md, from bench/results/ui.json (written by `npm run bench:ui`, bench/ui.ts).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { UiBenchResult } from './ui.ts';

/** The bound BENCHMARKS.md states for the UI on a 1,000,000-event history. */
export const UI_TARGET_MS = { query: 1_000, pageLoad: 2_000 };

function table(header: string[], rows: string[][]): string {
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

export function uiSection(file = path.join(import.meta.dirname, 'results', 'ui.json')): string | undefined {
  if (!existsSync(file)) return undefined;
  const result = JSON.parse(readFileSync(file, 'utf8')) as UiBenchResult;
  const met = (ms: number, bound: number) => (ms <= bound ? 'met' : 'NOT met');
  return `## 8. \`kubediff ui\` on a ${result.events.toLocaleString('en-US')}-event history

Measured by \`npm run bench:ui\` (bench/ui.ts) on ${result.date.slice(0, 10)}: ${result.machine}; Node ${result.node}.
A generated history (${result.events.toLocaleString('en-US')} events over 40 namespaces, 3 kinds, 20,000 objects, one every
250 ms: 69 hours; a state file of ${result.fileMiB} MiB, written in ${result.writeSeconds} s) served by \`kubediff ui\` in its
own process. Query times are over HTTP from another process, the median of 5 runs after a first (cold) one. The
baseline is one pass of SQLite over every stored event (\`SELECT count(*), sum(length(event)) FROM events\`):
${result.fullPassMs} ms. Target: every query within ${UI_TARGET_MS.query} ms and the page drawn within
${UI_TARGET_MS.pageLoad} ms on this history.

${table(
  ['query', 'answer', 'first', 'median', 'vs one pass', 'target'],
  result.queries.map((query) => [
    query.query,
    query.answer,
    `${query.coldMs} ms`,
    `${query.medianMs} ms`,
    `${query.ratio}×`,
    met(query.medianMs, UI_TARGET_MS.query),
  ]),
)}

Page load in Chromium (navigation to the timeline drawn and the first page of events listed; median of 5, each in a
fresh browser context):

${table(
  ['view', 'median', 'runs', 'target'],
  result.pageLoads.map((load) => [
    load.view,
    `${load.medianMs} ms`,
    load.ms.map((ms) => `${ms}`).join(', '),
    met(load.medianMs, UI_TARGET_MS.pageLoad),
  ]),
)}
`;
}
