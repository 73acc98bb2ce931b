// npm run bench:ui: `kubediff ui` on a generated history of 1,000,000 events (issue 19). Writes the file
// with the same SqliteDatabase `watch --state` writes with, serves it with `kubediff ui` (its own process,
// as a user runs it), and measures what a user waits for: the page loaded and drawn in Chromium, and
// each API query over HTTP. The baseline, in the same run, is one pass of SQLite over every stored event
// (`SELECT count(*), sum(length(event)) FROM events`): the cost of touching the whole history once.
// Writes bench/results/ui.json and BENCHMARKS.md (section 8). Numbers are recorded, never asserted.
//
// Then the same history in a PostgreSQL database (the test harness's server), served by `kubediff ui
// --state postgres://…`: the same queries and page loads, against a baseline of one pass of PostgreSQL
// over every stored event (`SELECT count(*), sum(length(event::text)) FROM kubediff_events`).
//
//   npm run bench:ui                    1,000,000 events, SQLite then PostgreSQL (about 8 minutes)
//   npm run bench:ui -- --events 100000 --no-record
//   npm run bench:ui -- --reuse <file> --no-record      a file written by an earlier run (kept with --keep)
//   npm run bench:ui -- --only postgres   PostgreSQL alone; the SQLite figures of bench/results/ui.json stay
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { buildDist } from '../scripts/build.ts';
import { newPage, withBrowser } from '../test/helpers/browser.ts';
import {
  type GeneratedHistory,
  writeGeneratedHistory,
  writeGeneratedPostgresHistory,
} from '../test/helpers/generated-history.ts';
import { psql, startPostgres } from '../test/helpers/postgres.ts';
import { startChild } from './lib/processes.ts';
import { median, round } from './lib/stats.ts';
import { uiSection } from './ui-report.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');
const argv = process.argv.slice(2);
const option = (name: string) => {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
};
const EVENTS = Number(option('--events') ?? 1_000_000);
const RECORD = !argv.includes('--no-record');
const REUSE = option('--reuse');
const KEEP = argv.includes('--keep');
const ONLY = option('--only');
if (ONLY !== undefined && ONLY !== 'postgres') throw new Error('--only takes postgres');
const RUNS = 5;
const RESULT_FILE = path.join(repoRoot, 'bench/results/ui.json');
const SERVING = /serving the change history on (http:\/\/\S+?)\//;

export interface UiQueryFigure {
  query: string;
  /** Whether the query must read every event ('all') or a part an index finds ('part'). */
  reads: 'part' | 'all';
  /** What it answers with, in words (marks, density, a page…). */
  answer: string;
  coldMs: number;
  medianMs: number;
  ratio: number;
}

export interface UiBenchResult {
  date: string;
  machine: string;
  node: string;
  events: number;
  fileMiB: number;
  writeSeconds: number;
  fullPassMs: number;
  /** `runs`: each run's milliseconds, comma-separated (a string keeps the file as the formatter writes it). */
  pageLoads: UiPageLoad[];
  queries: UiQueryFigure[];
  /** The same history in PostgreSQL, served by the PostgreSQL reader. */
  postgres?: UiPostgresFigures;
}

export interface UiPageLoad {
  view: string;
  runs: string;
  medianMs: number;
}

export interface UiPostgresFigures {
  date: string;
  machine: string;
  server: string;
  tableMiB: number;
  writeSeconds: number;
  fullPassMs: number;
  pageLoads: UiPageLoad[];
  queries: UiQueryFigure[];
}

function machine(): string {
  const cpu = os.cpus();
  return `${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, load average ${os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`;
}

async function time<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

/** The queries and page loads of the history served at `origin`, against `fullPassMs` of its store. */
async function measure(
  origin: string,
  spec: GeneratedHistory,
  fullPassMs: number,
  store: string,
): Promise<{ figures: UiQueryFigure[]; pageLoads: UiPageLoad[] }> {
  const stepMs = spec.stepMs;
  const end = spec.start + EVENTS * stepMs;
  const iso = (ms: number) => new Date(ms).toISOString();
  const whole = `from=${iso(spec.start)}&to=${iso(end + 1)}`;
  const lastHour = `from=${iso(end - 3_600_000)}&to=${iso(end + 1)}`;
  const lastFive = `from=${iso(end - 300_000)}&to=${iso(end + 1)}`;
  // Whether each query reads a part of the history (an index narrows it) or all of it.
  const queries: [string, string, 'part' | 'all'][] = [
    ['facets', '/api/v1/facets', 'part'],
    ['timeline, whole history by namespace, 250 buckets', `/api/v1/timeline?${whole}&buckets=250`, 'all'],
    [
      'timeline, whole history by kind, one namespace',
      `/api/v1/timeline?${whole}&rows=kind&namespace=ns-3`,
      'all',
    ],
    ['timeline, last hour (14,400 events)', `/api/v1/timeline?${lastHour}&buckets=250`, 'part'],
    ['timeline, last 5 minutes (1,200 marks)', `/api/v1/timeline?${lastFive}`, 'part'],
    ['events, newest page of 100', '/api/v1/events?limit=100', 'part'],
    ['events, a page 500,000 events back', `/api/v1/events?limit=100&before=${EVENTS / 2}`, 'part'],
    [
      'events, newest page of an hour two days back',
      `/api/v1/events?limit=100&from=${iso(end - 50 * 3_600_000)}&to=${iso(end - 49 * 3_600_000)}`,
      'all',
    ],
    ['events, name filter', '/api/v1/events?limit=100&name=obj-4242', 'all'],
    ['events, path filter', '/api/v1/events?limit=100&path=metadata.labels', 'part'],
    ['events, user filter matching nothing', '/api/v1/events?limit=100&user=nobody', 'all'],
    [
      'object history (50 events) with two rebuilt versions',
      '/api/v1/object?kind=configmaps&namespace=ns-2&name=obj-42&a=1&b=2',
      'part',
    ],
  ];
  const figures: UiQueryFigure[] = [];
  for (const [query, url, reads] of queries) {
    const samples: number[] = [];
    let answer = '';
    for (let run = 0; run <= RUNS; run++) {
      const { ms, value } = await time(async () => {
        const response = await fetch(`${origin}${url}`);
        if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
        return (await response.json()) as {
          marks?: unknown[];
          density?: { cells: unknown[] };
          events?: unknown[];
          total?: number;
        };
      });
      samples.push(ms);
      answer = value.density
        ? `${value.total} events as ${value.density.cells.length} density cells`
        : value.marks
          ? `${value.marks.length} marks`
          : value.events
            ? `${value.events.length} events`
            : 'facets';
    }
    const medianMs = median(samples.slice(1));
    figures.push({
      query,
      reads,
      answer,
      coldMs: round(samples[0]!),
      medianMs: round(medianMs),
      ratio: round(medianMs / fullPassMs),
    });
    process.stderr.write(
      `bench ui (${store}): ${query}: ${round(medianMs)} ms (first ${round(samples[0]!)} ms)\n`,
    );
  }
  const pageLoads: UiBenchResult['pageLoads'] = [];
  await withBrowser(async (browser) => {
    for (const [view, query] of [
      ['the default view (last hour, live)', ''],
      ['the whole history (69 hours) by kind, as density', `?rows=kind&${whole}`],
    ] as const) {
      const ms: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const page = await newPage(browser);
        const started = performance.now();
        await page.goto(`${origin}/${query}`);
        await page.waitForFunction(() =>
          /events in view/.test(document.querySelector('#status')?.textContent ?? ''),
        );
        await page.waitForFunction(() => document.querySelectorAll('#events tbody tr').length > 0);
        ms.push(performance.now() - started);
        await page.context().close();
      }
      pageLoads.push({
        view,
        runs: ms.map((value) => round(value)).join(', '),
        medianMs: round(median(ms)),
      });
      process.stderr.write(`bench ui (${store}): page load, ${view}: ${round(median(ms))} ms\n`);
    }
  });
  return { figures, pageLoads };
}

/** The same history in PostgreSQL, served by `kubediff ui --state postgres://…`. */
async function measurePostgres(spec: GeneratedHistory): Promise<UiPostgresFigures> {
  const server = await startPostgres({ label: 'bench-ui' });
  try {
    const written = await time(() => writeGeneratedPostgresHistory(server.url, spec));
    process.stderr.write(
      `bench ui: wrote ${EVENTS} events to PostgreSQL in ${(written.ms / 1000).toFixed(1)} s\n`,
    );
    await psql(server, 'VACUUM ANALYZE kubediff_events');
    const size = Number((await psql(server, "SELECT pg_total_relation_size('kubediff_events')")).trim());
    const fullPass: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      await psql(server, 'SELECT count(*), sum(length(event::text)) FROM kubediff_events');
      fullPass.push(performance.now() - started);
    }
    const fullPassMs = median(fullPass);
    const url = new URL(server.url);
    url.password = '';
    const ui = startChild(
      process.execPath,
      [path.join(repoRoot, 'bin/kubediff.js'), 'ui', '--state', url.href, '--listen', '127.0.0.1:0'],
      { env: { ...process.env, KUBEDIFF_LOG_FORMAT: 'text', PGPASSWORD: server.password } },
    );
    try {
      await ui.waitForStderr(SERVING, 300_000);
      const origin = SERVING.exec(ui.stderr())![1]!;
      const { figures, pageLoads } = await measure(origin, spec, fullPassMs, 'postgres');
      return {
        date: new Date().toISOString(),
        machine: machine(),
        server: `PostgreSQL ${server.version}`,
        tableMiB: round(size / 1024 / 1024),
        writeSeconds: round(written.ms / 1000),
        fullPassMs: round(fullPassMs),
        pageLoads,
        queries: figures,
      };
    } finally {
      await ui.stop();
    }
  } finally {
    await server.stopServer();
  }
}

/**
 * Writes the result to bench/results/ui.json and its section of BENCHMARKS.md (only that section: the others,
 * from other benches, stay as they are), or prints it with --no-record.
 */
function record(result: UiBenchResult): void {
  if (!RECORD) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  writeFileSync(RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  const benchmarks = path.join(repoRoot, 'BENCHMARKS.md');
  const text = readFileSync(benchmarks, 'utf8');
  const section = /^## 10\. .*?(?=^## )/ms;
  const fresh = uiSection(RESULT_FILE) ?? '';
  writeFileSync(benchmarks, section.test(text) ? text.replace(section, `${fresh}\n`) : text);
  process.stderr.write('bench ui: wrote bench/results/ui.json and section 10 of BENCHMARKS.md\n');
}

async function main(): Promise<void> {
  // kubediff runs from dist/: compiled from the sources being measured.
  buildDist();
  const stepMs = 250;
  const spec: GeneratedHistory = {
    events: EVENTS,
    start: Date.now() - EVENTS * stepMs,
    stepMs,
    namespaces: 40,
    objects: 20_000,
  };
  if (ONLY === 'postgres') {
    const earlier = JSON.parse(readFileSync(RESULT_FILE, 'utf8')) as UiBenchResult;
    if (earlier.events !== EVENTS)
      throw new Error(`bench/results/ui.json holds ${earlier.events} events, not ${EVENTS}`);
    record({ ...earlier, postgres: await measurePostgres(spec) });
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kubediff-bench-ui-'));
  const file = REUSE ?? path.join(dir, 'history.db');
  try {
    const written = await time(async () => (REUSE ? undefined : writeGeneratedHistory(file, spec)));
    if (!REUSE)
      process.stderr.write(`bench ui: wrote ${EVENTS} events in ${(written.ms / 1000).toFixed(1)} s\n`);
    const fullPass = [];
    const db = new DatabaseSync(file, { readOnly: true });
    // The window of the file as written (a reused one was written earlier).
    spec.start = Date.parse((db.prepare('SELECT min(time) AS t FROM events').get() as { t: string }).t);
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      db.prepare('SELECT count(*), sum(length(event)) FROM events').get();
      fullPass.push(performance.now() - started);
    }
    db.close();
    const fullPassMs = median(fullPass);

    const server = startChild(
      process.execPath,
      [path.join(repoRoot, 'bin/kubediff.js'), 'ui', '--state', file, '--listen', '127.0.0.1:0'],
      { env: { ...process.env, KUBEDIFF_LOG_FORMAT: 'text' } },
    );
    let result: UiBenchResult;
    try {
      // The facets of a million events are computed before it listens: seconds.
      await server.waitForStderr(SERVING, 120_000);
      const origin = SERVING.exec(server.stderr())![1]!;
      const { figures, pageLoads } = await measure(origin, spec, fullPassMs, 'sqlite');
      result = {
        date: new Date().toISOString(),
        machine: machine(),
        node: process.version,
        events: EVENTS,
        fileMiB: round(statSync(file).size / 1024 / 1024),
        writeSeconds: REUSE ? Number.NaN : round(written.ms / 1000),
        fullPassMs: round(fullPassMs),
        pageLoads,
        queries: figures,
      };
    } finally {
      await server.stop();
    }
    // One store at a time on the machine: the SQLite server is stopped before PostgreSQL starts.
    result.postgres = await measurePostgres({ ...spec, start: Date.now() - EVENTS * stepMs });
    record(result);
  } finally {
    if (KEEP && !REUSE) process.stderr.write(`bench ui: kept ${file}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
