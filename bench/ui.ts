// npm run bench:ui: `kubediff ui` on a generated history of 1,000,000 events (issue 19). Writes the file
// with the same StateDatabase `watch --state` writes with, serves it with `kubediff ui` (its own process,
// as a user runs it), and measures what a user waits for: the page loaded and drawn in Chromium, and
// each API query over HTTP. The baseline, in the same run, is one pass of SQLite over every stored event
// (`SELECT count(*), sum(length(event)) FROM events`): the cost of touching the whole history once.
// Writes bench/results/ui.json and BENCHMARKS.md (section 8). Numbers are recorded, never asserted.
//
//   npm run bench:ui                    1,000,000 events (about 3 minutes)
//   npm run bench:ui -- --events 100000 --no-record
//   npm run bench:ui -- --reuse <file> --no-record      a file written by an earlier run (kept with --keep)
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { newPage, withBrowser } from '../test/helpers/browser.ts';
import { type GeneratedHistory, writeGeneratedHistory } from '../test/helpers/generated-history.ts';
import { startChild } from './lib/processes.ts';
import { median, round } from './lib/stats.ts';
import { renderMarkdown } from './report.ts';

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
const RUNS = 5;
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
  pageLoads: { view: string; runs: string; medianMs: number }[];
  queries: UiQueryFigure[];
}

async function time<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kubediff-bench-ui-'));
  const file = REUSE ?? path.join(dir, 'history.db');
  const stepMs = 250;
  const spec: GeneratedHistory = {
    events: EVENTS,
    start: Date.now() - EVENTS * stepMs,
    stepMs,
    namespaces: 40,
    objects: 20_000,
  };
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
    try {
      // The facets of a million events are computed before it listens: seconds.
      await server.waitForStderr(SERVING, 120_000);
      const origin = SERVING.exec(server.stderr())![1]!;
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
        process.stderr.write(`bench ui: ${query}: ${round(medianMs)} ms (first ${round(samples[0]!)} ms)\n`);
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
          process.stderr.write(`bench ui: page load, ${view}: ${round(median(ms))} ms\n`);
        }
      });
      const cpu = os.cpus();
      const result: UiBenchResult = {
        date: new Date().toISOString(),
        machine: `${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, load average ${os
          .loadavg()
          .map((value) => value.toFixed(2))
          .join(' ')}`,
        node: process.version,
        events: EVENTS,
        fileMiB: round(statSync(file).size / 1024 / 1024),
        writeSeconds: REUSE ? Number.NaN : round(written.ms / 1000),
        fullPassMs: round(fullPassMs),
        pageLoads,
        queries: figures,
      };
      if (RECORD) {
        writeFileSync(path.join(repoRoot, 'bench/results/ui.json'), `${JSON.stringify(result, null, 2)}\n`);
        const latest = path.join(repoRoot, 'bench/results/latest.json');
        writeFileSync(
          path.join(repoRoot, 'BENCHMARKS.md'),
          renderMarkdown(JSON.parse(readFileSync(latest, 'utf8'))),
        );
        process.stderr.write('bench ui: wrote bench/results/ui.json and BENCHMARKS.md\n');
      } else {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      }
    } finally {
      await server.stop();
    }
  } finally {
    if (KEEP && !REUSE) process.stderr.write(`bench ui: kept ${file}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
