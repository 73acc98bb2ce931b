// npm run bench:state [-- --events 1000000]: the history in an SQLite file against the same history in
// PostgreSQL (docs/state.md): write throughput of generated events through each store's write() in the
// recorder's batches (5,000 per transaction), then the latency of the queries `kubediff history` makes,
// median of 9 runs each. PostgreSQL is a server of the bench's own (the test harness's, with fsync ON,
// as in production), on the same machine. Writes bench/results/state.json and section 11 of BENCHMARKS.md
// (bench/state-report.ts renders it; only that section is replaced), and prints the table.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChangeEvent } from '../src/events/event.ts';
import { PostgresHistory } from '../src/state/postgres-history.ts';
import { PostgresStateStore } from '../src/state/postgres-store.ts';
import { SqliteDatabase } from '../src/state/sqlite-database.ts';
import { SqliteStateStore } from '../src/state/sqlite-store.ts';
import {
  type HistoryQuery,
  type HistoryReader,
  type SerializedWrite,
  serializeWrite,
} from '../src/state/store.ts';
import { psql, startPostgres } from '../test/helpers/postgres.ts';
import { STATE_RESULT_FILE, type StateBenchResult, stateSection } from './state-report.ts';

const argv = process.argv.slice(2);
const total = Number(argv[argv.indexOf('--events') + 1] || 1_000_000);
const BATCH = 5_000;
const CLUSTERS = ['prod-eu', 'prod-us', 'staging', 'dev'];
const NAMESPACES = 20;
const NAMES = 2_000;
const now = Date.now();
const WEEK = 7 * 24 * 3_600_000;

/** Event i of the generated history: a ConfigMap UPDATED with two changes, times spread over a week. */
function eventWrite(i: number): { cluster: string; write: SerializedWrite } {
  const cluster = CLUSTERS[i % CLUSTERS.length] as string;
  const namespace = `ns-${(i >> 2) % NAMESPACES}`;
  const name = `cm-${(i * 7919) % NAMES}`;
  const time = new Date(now - WEEK + Math.floor((i / total) * WEEK)).toISOString();
  const event: ChangeEvent = {
    id: `uid-${cluster}-${namespace}-${name}:${i}`,
    type: 'UPDATED',
    time,
    cluster,
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace,
      name,
      uid: `uid-${name}`,
      resourceVersion: String(i),
    },
    changes: [
      { op: 'replace', path: '/data/replicas', from: String(i - 1), to: String(i) },
      { op: 'replace', path: '/data/image', from: `shop:1.${i % 50}`, to: `shop:1.${(i + 1) % 50}` },
    ],
  };
  return {
    cluster,
    write: serializeWrite({ kind: 'event', resource: 'configmaps', event }),
  };
}

/** Writes every event, per cluster in batches, through `write(cluster, batch)`; returns events/s. */
async function writeAll(
  write: (cluster: string, batch: SerializedWrite[]) => Promise<void>,
): Promise<number> {
  const batches = new Map<string, SerializedWrite[]>(CLUSTERS.map((cluster) => [cluster, []]));
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const { cluster, write: entry } = eventWrite(i);
    const batch = batches.get(cluster) as SerializedWrite[];
    batch.push(entry);
    if (batch.length === BATCH) {
      await write(cluster, batch);
      batches.set(cluster, []);
    }
  }
  for (const [cluster, batch] of batches) if (batch.length > 0) await write(cluster, batch);
  return total / ((performance.now() - started) / 1000);
}

const QUERIES: { name: string; query: HistoryQuery }[] = [
  { name: '`--tail 100`', query: { limit: 100 } },
  { name: '`--cluster prod-eu --tail 100`', query: { clusters: ['prod-eu'], limit: 100 } },
  {
    name: '`--cluster prod-* --since 1h`, first page',
    query: { clusters: ['prod-*'], since: new Date(now - 3_600_000).toISOString() },
  },
  {
    name: '`-n ns-10 configmaps/cm-1000` (one object, all)',
    query: { namespace: 'ns-10', resource: 'configmaps', name: 'cm-1000' },
  },
  { name: '`-n ns-3`, first page (1,000)', query: { namespace: 'ns-3' } },
];

/** Median ms of 9 runs of each query (after one warm-up run), and how many events the first page held. */
async function queryAll(reader: HistoryReader): Promise<{ name: string; ms: number; events: number }[]> {
  const results = [];
  for (const { name, query } of QUERIES) {
    const first = await reader.history(query);
    const times: number[] = [];
    for (let run = 0; run < 9; run++) {
      const started = performance.now();
      await reader.history(query);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    results.push({ name, ms: times[4] as number, events: first.events.length });
  }
  return results;
}

/** bench/results/state.json, and section 11 of BENCHMARKS.md in place (the other sections stay as they are). */
function record(result: StateBenchResult): void {
  writeFileSync(STATE_RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  const benchmarks = path.join(import.meta.dirname, '..', 'BENCHMARKS.md');
  const text = readFileSync(benchmarks, 'utf8');
  const section = /^## 11\. .*?(?=^## )/ms;
  const fresh = stateSection();
  writeFileSync(benchmarks, section.test(text) ? text.replace(section, `${fresh}\n`) : text);
  process.stdout.write(`${fresh}\n`);
  process.stderr.write('bench state: wrote bench/results/state.json and section 11 of BENCHMARKS.md\n');
}

async function main(): Promise<void> {
  const loadAtStart = Number((os.loadavg()[0] ?? 0).toFixed(1));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-state-'));
  const pgServer = await startPostgres({
    label: 'bench-state',
    settings: { fsync: 'on', full_page_writes: 'on' },
  });
  try {
    // SQLite: one file (a file holds one process's history; the bench puts the fleet's in one to compare).
    const file = path.join(dir, 'state.db');
    const sqlite = new SqliteStateStore(SqliteDatabase.open(file));
    const sqliteRate = await writeAll((_cluster, batch) => sqlite.write(batch, new Map()));
    await sqlite.close();
    const sqliteReader = SqliteStateStore.open(file, { readOnly: true });
    const sqliteQueries = await queryAll(sqliteReader);
    await sqliteReader.close();

    const url = new URL(pgServer.url);
    url.password = '';
    process.env.PGPASSWORD = pgServer.password;
    const stores = new Map<string, PostgresStateStore>();
    for (const cluster of CLUSTERS)
      stores.set(cluster, await PostgresStateStore.open({ url: url.href }, cluster));
    const pgRate = await writeAll((cluster, batch) =>
      (stores.get(cluster) as PostgresStateStore).write(batch, new Map()),
    );
    for (const store of stores.values()) await store.close();
    const pgReader = await PostgresHistory.open({ url: url.href });
    const pgQueries = await queryAll(pgReader);
    await pgReader.close();
    // What the indexes are worth: the same queries with the primary key and the identity index alone.
    await psql(
      pgServer,
      'DROP INDEX kubediff_events_cluster, kubediff_events_time, kubediff_events_object; ANALYZE kubediff_events',
    );
    const bareReader = await PostgresHistory.open({ url: url.href });
    const bareQueries = await queryAll(bareReader);
    await bareReader.close();

    const result: StateBenchResult = {
      date: new Date().toISOString(),
      events: total,
      clusters: CLUSTERS.length,
      batch: BATCH,
      cores: os.cpus().length,
      loadAverage: { start: loadAtStart, end: Number((os.loadavg()[0] ?? 0).toFixed(1)) },
      writes: { sqlitePerSecond: sqliteRate, postgresPerSecond: pgRate },
      queries: QUERIES.map(({ name }, i) => ({
        name,
        events: pgQueries[i]?.events ?? 0,
        sqliteMs: sqliteQueries[i]?.ms ?? Number.NaN,
        postgresMs: pgQueries[i]?.ms ?? Number.NaN,
        postgresBareMs: bareQueries[i]?.ms ?? Number.NaN,
      })),
    };
    record(result);
  } finally {
    await pgServer.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
