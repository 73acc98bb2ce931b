// Figure 20 (npm run bench:search): the history's search (the UI's `q`, docs/ui.md) over a window of
// `--events` generated events (test/helpers/generated-history.ts), in an SQLite state file and in a
// PostgreSQL database (the test harness's server), through each store's TimelineReader in this process.
// For each store, in the same run: the plain window (its timeline, and its first page of 100 events),
// then the same with a search for a name, a user and a path, each the median of 5 runs; the ratio of a
// search to the plain window is the figure. Then, as the history was searched before each event had its
// search text (events recorded by an older kubediff still are): the column emptied, the same searches
// again, in the events' JSON. Writes bench/results/search.json and section 20 of BENCHMARKS.md.
//
//   npm run bench:search [-- --events 100000] [--no-record]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PostgresHistory } from '../src/state/postgres-history.ts';
import { PostgresTimelineReader } from '../src/state/postgres-timeline-reader.ts';
import { SqliteDatabase } from '../src/state/sqlite-database.ts';
import { SqliteTimelineReader } from '../src/state/sqlite-timeline-reader.ts';
import type { HistoryFilter, TimelineReader } from '../src/state/timeline-reader.ts';
import { LIMITS } from '../src/ui/query.ts';
import {
  type GeneratedHistory,
  writeGeneratedHistory,
  writeGeneratedPostgresHistory,
} from '../test/helpers/generated-history.ts';
import { psql, startPostgres } from '../test/helpers/postgres.ts';
import { median, round } from './lib/stats.ts';
import { SEARCH_RESULT_FILE, type SearchFigures, searchSection } from './ui-search-report.ts';

const argv = process.argv.slice(2);
const option = (name: string) => {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
};
const EVENTS = Number(option('--events') ?? 100_000);
const RECORD = !argv.includes('--no-record');
const RUNS = 5;
const log = (message: string) => process.stderr.write(`search: ${message}\n`);

const spec: GeneratedHistory = {
  events: EVENTS,
  start: Date.parse('2026-11-20T00:00:00Z'),
  stepMs: 1_000,
  namespaces: 20,
  objects: 5_000,
};
const window: HistoryFilter = {
  from: new Date(spec.start).toISOString(),
  to: new Date(spec.start + EVENTS * spec.stepMs).toISOString(),
};
/** What people type: a name, a user, a path (generated-history.ts holds them). */
export const SEARCHES = ['obj-42', 'alice@example.com', 'spec.replicas'] as const;

/** Median ms of the timeline and of the first page, for `filter`. */
async function measure(reader: TimelineReader, filter: HistoryFilter) {
  const timeline: number[] = [];
  const page: number[] = [];
  let found = 0;
  for (let run = 0; run < RUNS; run++) {
    let started = performance.now();
    await reader.timeline(filter, {
      from: window.from!,
      to: window.to!,
      rows: 'namespace',
      buckets: LIMITS.bucketsDefault,
      maxMarks: LIMITS.marks,
      maxRows: LIMITS.rowsDefault,
    });
    timeline.push(performance.now() - started);
    started = performance.now();
    found = (await reader.events(filter, { limit: LIMITS.pageDefault })).events.length;
    page.push(performance.now() - started);
  }
  return { timelineMs: round(median(timeline)), pageMs: round(median(page)), found };
}

async function measureStore(
  reader: TimelineReader,
  emptyColumn: () => Promise<void>,
): Promise<SearchFigures['stores'][number]['figures']> {
  await measure(reader, window); // warm: the first pass reads the pages into the caches
  const plain = await measure(reader, window);
  const searches = [];
  for (const q of SEARCHES) searches.push({ q, ...(await measure(reader, { ...window, search: q })) });
  log('emptying the search column: searching the JSON, as before it');
  await emptyColumn();
  const inJson = [];
  for (const q of SEARCHES) inJson.push({ q, ...(await measure(reader, { ...window, search: q })) });
  return { plain, searches, inJson };
}

const figures: SearchFigures = {
  events: EVENTS,
  runs: RUNS,
  loadAverage: round(os.loadavg()[0]!, 1),
  stores: [],
};
const dir = mkdtempSync(path.join(os.tmpdir(), 'kubediff-bench-search-'));
try {
  const file = path.join(dir, 'history.db');
  log(`writing ${EVENTS} events into an SQLite state file`);
  writeGeneratedHistory(file, spec);
  const db = SqliteDatabase.open(file);
  const sqlite = new SqliteTimelineReader(db);
  figures.stores.push({
    store: 'SQLite',
    figures: await measureStore(sqlite, async () => {
      const raw = new DatabaseSync(file);
      raw.exec('UPDATE events SET search = NULL; VACUUM');
      raw.close();
    }),
  });
  await sqlite.close();

  log('starting PostgreSQL');
  const server = await startPostgres({ label: 'bench-search' });
  try {
    log(`writing ${EVENTS} events into PostgreSQL`);
    await writeGeneratedPostgresHistory(server.url, spec);
    await psql(server, 'VACUUM ANALYZE kubediff_events');
    const passwordFile = path.join(dir, 'pg-password');
    writeFileSync(passwordFile, server.password, { mode: 0o600 });
    const url = new URL(server.url);
    url.password = '';
    const postgres = new PostgresTimelineReader(await PostgresHistory.open({ url: url.href, passwordFile }));
    try {
      figures.stores.push({
        store: `PostgreSQL ${server.version}`,
        figures: await measureStore(postgres, async () => {
          await psql(server, 'UPDATE kubediff_events SET search = NULL');
          await psql(server, 'VACUUM FULL ANALYZE kubediff_events');
        }),
      });
    } finally {
      await postgres.close();
    }
  } finally {
    await server.stopServer();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
figures.loadAverageAtEnd = round(os.loadavg()[0]!, 1);

process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
if (RECORD) {
  const recorded: SearchFigures = { date: new Date().toISOString(), ...figures };
  writeFileSync(SEARCH_RESULT_FILE, `${JSON.stringify(recorded, null, 2)}\n`);
  const benchmarks = path.resolve(import.meta.dirname, '..', 'BENCHMARKS.md');
  const text = readFileSync(benchmarks, 'utf8');
  const section = `${searchSection(recorded)}\n`;
  const existing = /^## 20\. .*?(?=^## )/ms;
  writeFileSync(
    benchmarks,
    existing.test(text) ? text.replace(existing, section) : text.replace('## Notes', `${section}## Notes`),
  );
  log('recorded in bench/results/search.json and section 20 of BENCHMARKS.md');
}
