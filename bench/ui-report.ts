// Section 10 of BENCHMARKS.md, from bench/results/ui.json (written by `npm run bench:ui`, bench/ui.ts).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { markdownTable } from './lib/markdown.ts';
import type { UiBenchResult, UiPageLoad, UiPostgresFigures, UiQueryFigure } from './ui.ts';

/**
 * The bounds BENCHMARKS.md states for the UI on a 1,000,000-event history: a query that an index
 * narrows answers within a second; one that must read every event (density over the whole history, a
 * filter on a field only the event's JSON holds) within 3 passes of SQLite over the history; the page
 * is drawn within 2 s in its default view.
 */
export const UI_TARGET = { partMs: 1_000, allPasses: 3, pageLoadMs: 2_000 };

export function uiSection(file = path.join(import.meta.dirname, 'results', 'ui.json')): string | undefined {
  if (!existsSync(file)) return undefined;
  const result = JSON.parse(readFileSync(file, 'utf8')) as UiBenchResult;
  return `## 10. \`kubediff ui\` on a ${result.events.toLocaleString('en-US')}-event history

Measured by \`npm run bench:ui\` (bench/ui.ts) on ${result.date.slice(0, 10)}: ${result.machine}; Node ${result.node}.
A generated history (${result.events.toLocaleString('en-US')} events over 40 namespaces, 3 kinds, 20,000 objects, one every
250 ms: 69 hours; a state file of ${result.fileMiB} MiB${Number.isFinite(result.writeSeconds) ? `, written in ${result.writeSeconds} s` : ''}) served by \`kubediff ui\` in its
own process. Query times are over HTTP from another process, the median of 5 runs after a first (cold) one. The
baseline is one pass of SQLite over every stored event (\`SELECT count(*), sum(length(event)) FROM events\`):
${result.fullPassMs} ms. Targets: a query that an index narrows (a page, a window, an object) within
${UI_TARGET.partMs} ms; one that must read every event (density over the whole history, a filter on what only the
stored JSON or a part of a name holds, a page far back in time) within ${UI_TARGET.allPasses}× that one pass; the page
drawn within ${UI_TARGET.pageLoadMs} ms in its default view.

${queryTable(result.queries)}

Page load in Chromium (navigation to the timeline drawn and the first page of events listed; median of 5, each in a
fresh browser context):

${pageTable(result.pageLoads)}
${result.postgres ? postgresRows(result.postgres) : ''}`;
}

/** The PostgreSQL reader's rows: the same queries and page loads on the same history in PostgreSQL. */
function postgresRows(figures: UiPostgresFigures): string {
  return `
### The PostgreSQL reader (\`kubediff ui --state postgres://…\`)

Measured on ${figures.date.slice(0, 10)}: ${figures.machine}; ${figures.server} (the test harness's server, default
settings). The same generated history, written to \`kubediff_events\` (${figures.tableMiB} MiB with its indexes, in
${figures.writeSeconds} s) and served by \`kubediff ui --state postgres://…\` in its own process, over one connection.
The baseline is one pass of PostgreSQL over every stored event (\`SELECT count(*), sum(length(event::text)) FROM
kubediff_events\`, through psql): ${figures.fullPassMs} ms. The same targets, against that pass.

${queryTable(figures.queries)}

${pageTable(figures.pageLoads)}
`;
}

const met = (value: number, bound: number) => (value <= bound ? 'met' : 'NOT met');

function queryTable(queries: readonly UiQueryFigure[]): string {
  return markdownTable(
    ['query', 'reads', 'answer', 'first', 'median', 'vs one pass', 'target'],
    queries.map((query) => [
      query.query,
      query.reads === 'all' ? 'every event' : 'a part',
      query.answer,
      `${query.coldMs} ms`,
      `${query.medianMs} ms`,
      `${query.ratio}×`,
      query.reads === 'all'
        ? `≤ ${UI_TARGET.allPasses}×: ${met(query.ratio, UI_TARGET.allPasses)}`
        : `≤ ${UI_TARGET.partMs} ms: ${met(query.medianMs, UI_TARGET.partMs)}`,
    ]),
  );
}

function pageTable(loads: readonly UiPageLoad[]): string {
  return markdownTable(
    ['view', 'median', 'runs', 'target'],
    loads.map((load) => [
      load.view,
      `${load.medianMs} ms`,
      load.runs,
      load.view.startsWith('the default view')
        ? `≤ ${UI_TARGET.pageLoadMs} ms: ${met(load.medianMs, UI_TARGET.pageLoadMs)}`
        : '—',
    ]),
  );
}
