// Section 14 of BENCHMARKS.md: `kubediff show`, `diff` and `blame` on the 1,000,000-event history, as
// bench/history-commands.ts (npm run bench:history) recorded them in bench/results/history-commands.json.
// bench/report.ts writes it with the other sections, so regenerating BENCHMARKS.md keeps it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { markdownTable } from './lib/markdown.ts';
import { round } from './lib/stats.ts';

export const HISTORY_RESULT_FILE = path.join(import.meta.dirname, 'results', 'history-commands.json');
/** Runs of each command after its first (cold) one. */
export const RUNS = 5;
/** The Deployment's changes: the UI's bound on the events of one object, the most versions a command rebuilds. */
export const CHANGES = 1_000;

export interface CommandFigure {
  command: string;
  what: string;
  coldMs: number;
  medianMs: number;
  /** medianMs over `kubediff version`'s. */
  overStart: number;
}

export interface StoreFigures {
  store: string;
  fullPassMs: number;
  startMs: number;
  commands: CommandFigure[];
}

export interface Result {
  date: string;
  machine: string;
  node: string;
  events: number;
  sqlite: StoreFigures;
  postgres?: StoreFigures;
}

/** Section 14 of BENCHMARKS.md, from bench/results/history-commands.json; undefined before a first run. */
export function historySection(file = HISTORY_RESULT_FILE): string | undefined {
  if (!existsSync(file)) return undefined;
  const result = JSON.parse(readFileSync(file, 'utf8')) as Result;
  const stores = [result.sqlite, ...(result.postgres ? [result.postgres] : [])];
  const rows = (figures: StoreFigures) => {
    // The baseline of the store: the same open and one indexed query (`history … --tail 1`).
    const opened = figures.commands.find((figure) => figure.command.startsWith('history'))?.medianMs;
    return figures.commands.map((figure) => [
      `${figures.store}: \`${figure.command}\``,
      figure.what,
      `${figure.medianMs}`,
      `${figure.coldMs}`,
      `${figure.overStart}×`,
      opened ? `${round(figure.medianMs / opened)}×` : '',
    ]);
  };
  const header = [
    'command',
    'what it does',
    'median ms',
    'first ms',
    'over process start',
    'over `history --tail 1`',
  ];
  return `## 14. \`show\`, \`diff\` and \`blame\` on a ${result.events.toLocaleString('en-US')}-event history

Measured by \`npm run bench:history\` (bench/history-commands.ts) on ${result.date.slice(0, 10)}: ${result.machine}; Node ${result.node}.
The history of section 10 (generated: 40 namespaces, 3 kinds, 20,000 objects), plus one Deployment with ${CHANGES.toLocaleString('en-US')}
changes (the UI's bound on the events of one object: the most versions a command rebuilds) and its last state. Each
command runs as a user runs it, in its own process from start to exit: the median of ${RUNS} runs after a first (cold)
one. Two ratios, each to a baseline measured in the same run: to \`kubediff version\` (starting the process:
${stores.map((store) => `${store.startMs} ms during the ${store.store} runs`).join(', ')}), and to
\`kubediff history <the Deployment> --tail 1\` (the same read-only open of the store and one indexed query: on an
SQLite file the open checks the file whole, \`PRAGMA quick_check\`, which is most of a command's time on 614 MiB).
One pass of the store over every event, for scale: ${stores.map((store) => `${store.store} ${store.fullPassMs} ms`).join(', ')}.

${markdownTable(header, stores.flatMap(rows))}

Every command reads one object's events through its index (the newest 1,000 at most), never the whole history;
\`diff -n …\` over a window finds the window's events through the time index (the timeline's marks, up to the UI's
2,000; a busier window page by page), then reads each object changed.
`;
}
