// Section 11 of BENCHMARKS.md, from bench/results/state.json (written by `npm run bench:state`,
// bench/state-stores.ts), so that regenerating BENCHMARKS.md (bench/report.ts) keeps it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { markdownTable } from './lib/markdown.ts';

/** One query `kubediff history` makes: the median of 9 runs in each store, and the first page's size. */
export interface StateQueryFigure {
  name: string;
  events: number;
  sqliteMs: number;
  postgresMs: number;
  /** PostgreSQL with its primary key and identity index only. */
  postgresBareMs: number;
}

export interface StateBenchResult {
  date: string;
  events: number;
  clusters: number;
  batch: number;
  cores: number;
  /** Load averages (1 min) at the start and the end of the run. */
  loadAverage: { start: number; end: number };
  writes: { sqlitePerSecond: number; postgresPerSecond: number };
  queries: StateQueryFigure[];
  /** What the machine was doing, and anything else a reader should know of this run. */
  note?: string;
}

export const STATE_RESULT_FILE = path.join(import.meta.dirname, 'results', 'state.json');

const ms = (value: number): string => `${value.toFixed(1)} ms`;
const perSecond = (value: number): string => `${Math.round(value).toLocaleString('en-US')} events/s`;

export function stateSection(file = STATE_RESULT_FILE): string {
  const heading = '## 11. State stores: SQLite and PostgreSQL (issue 17)\n';
  if (!existsSync(file)) {
    return `${heading}\nNot measured yet: \`npm run bench:state\` (bench/state-stores.ts) writes bench/results/state.json and this section.\n`;
  }
  const result = JSON.parse(readFileSync(file, 'utf8')) as StateBenchResult;
  const { writes } = result;
  const rows = [
    [
      'write throughput',
      perSecond(writes.sqlitePerSecond),
      perSecond(writes.postgresPerSecond),
      `${(writes.postgresPerSecond / writes.sqlitePerSecond).toFixed(2)}×`,
      '—',
    ],
    ...result.queries.map((query) => [
      `${query.name} (${query.events} events)`,
      ms(query.sqliteMs),
      ms(query.postgresMs),
      `${(query.postgresMs / query.sqliteMs).toFixed(2)}×`,
      ms(query.postgresBareMs),
    ]),
  ];
  return `${heading}
Measured by \`npm run bench:state\` (bench/state-stores.ts) on ${result.date.slice(0, 10)}:
${result.events.toLocaleString('en-US')} generated events (ConfigMap UPDATEDs with two changes, about 450 bytes of JSON each,
${result.clusters} clusters, 20 namespaces, 2,000 names, times spread over a week), written through each store's \`write()\` in the
recorder's batches (${result.batch.toLocaleString('en-US')} per transaction), then the queries \`kubediff history\` makes, median of 9 runs each
after one warm-up. SQLite: one file (WAL, \`synchronous=NORMAL\`); PostgreSQL 15: a server of the bench's own on
the same machine with \`fsync\` on. ${result.cores} cores, load average ${result.loadAverage.start} at the start and ${result.loadAverage.end} at the end.${result.note ? ` ${result.note}` : ''}

${markdownTable(['', 'SQLite', 'PostgreSQL', 'PostgreSQL / SQLite', 'PostgreSQL without its secondary indexes'], rows)}

- **Writes**: both take thousands of events per second, far above what a cluster produces (the soak's churn,
  figure 4, is 40 events/s); PostgreSQL pays for a round trip per statement and five indexes.
- **Reads**: SQLite answers what its indexes serve (the newest events, one object) in a few ms, in-process.
  What it has no column for (the cluster, which it reads from the event's JSON) it scans; PostgreSQL's
  \`(cluster, seq)\` and \`(time)\` indexes serve \`--cluster\` and \`--since\`, and the \`(resource, namespace, name,
  seq)\` index one object's history (compare the last column). \`--tail\` and a namespace's first page walk the
  primary key (\`seq\`) either way.
- A \`--tail\` is two queries in either store (where the newest n start, then the page); over a network
  connection each PostgreSQL query adds its round trip.
`;
}
