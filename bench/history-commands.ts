// npm run bench:history: `kubediff show`, `diff` and `blame` (issue 32) on the 1,000,000-event history
// of the UI's benchmark (test/helpers/generated-history.ts), each run as a user runs it (its own process,
// from start to exit), on an SQLite state file and then on PostgreSQL. Beside the generated events, one
// Deployment with 1,000 changes (the UI's bound on the events of one object) and its last state, so that
// every command has versions to rebuild: the worst case the bound allows. Baselines measured in the same
// run: `kubediff version` (the cost of starting the process) and one pass of the store over every event.
// Writes bench/results/history-commands.json and section 14 of BENCHMARKS.md (bench/history-report.ts). Numbers are recorded,
// never asserted.
//
//   npm run bench:history                          1,000,000 events, SQLite then PostgreSQL
//   npm run bench:history -- --events 100000 --no-record
//   npm run bench:history -- --report           section 14 again from the recorded results
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { buildDist } from '../scripts/build.ts';
import { diffObjects } from '../src/diff/diff.ts';
import type { ChangeEvent } from '../src/events/event.ts';
import type { JsonObject, ResourceType } from '../src/kube/types.ts';
import { SqliteDatabase } from '../src/state/sqlite-database.ts';
import type { StateWrite } from '../src/state/store.ts';
import {
  type GeneratedHistory,
  writeGeneratedHistory,
  writeGeneratedPostgresHistory,
} from '../test/helpers/generated-history.ts';
import { psql, startPostgres } from '../test/helpers/postgres.ts';
import {
  CHANGES,
  type CommandFigure,
  HISTORY_RESULT_FILE as RESULT_FILE,
  type Result,
  RUNS,
  type StoreFigures,
} from './history-report.ts';
import { median, round } from './lib/stats.ts';
import { renderMarkdown } from './report.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');
const BIN = path.join(repoRoot, 'bin/kubediff.js');
const argv = process.argv.slice(2);
const option = (name: string) => {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
};
const EVENTS = Number(option('--events') ?? 1_000_000);
const RECORD = !argv.includes('--no-record');
const NAMESPACE = 'bench';
/** The Deployment's changes are this far apart: a minute, or closer in a shorter history. */
const STEP_MS = Math.min(60_000, Math.floor((EVENTS * 250) / CHANGES / 2));

const DISCOVERY: ResourceType[] = [
  ['', 'configmaps', 'ConfigMap', ['cm']],
  ['apps', 'deployments', 'Deployment', ['deploy']],
  ['', 'services', 'Service', ['svc']],
].map(([group, resource, kind, shortNames]) => ({
  group: group as string,
  version: 'v1',
  resource: resource as string,
  kind: kind as string,
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: shortNames as string[],
  singularName: (kind as string).toLowerCase(),
  categories: [],
}));

/** The Deployment's version after `n` changes: image, replicas, an env value and a label in turn. */
function version(n: number): JsonObject {
  const env = Array.from({ length: 20 }, (_, index) => ({
    name: `VAR_${index}`,
    value: index === n % 20 ? `v${n}` : `v0`,
  }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'target',
      namespace: NAMESPACE,
      uid: 'uid-target',
      labels: { app: 'target', revision: String(Math.floor(n / 4)) },
    },
    spec: {
      replicas: 1 + (Math.floor((n + 1) / 4) % 10),
      template: {
        metadata: { labels: { app: 'target' } },
        spec: {
          containers: [
            { name: 'web', image: `registry.local/web:${Math.floor((n + 2) / 4)}`, env },
            { name: 'proxy', image: 'registry.local/proxy:1' },
          ],
        },
      },
    },
  } as JsonObject;
}

/** The Deployment's events (an ADDED, then CHANGES - 1 updates), STEP_MS apart up to `end`. */
function targetEvents(end: number): ChangeEvent[] {
  const events: ChangeEvent[] = [];
  for (let n = 0; n < CHANGES; n++) {
    const event: ChangeEvent = {
      id: `uid-target:${n + 1}`,
      type: n === 0 ? 'ADDED' : 'UPDATED',
      time: new Date(end - (CHANGES - n) * STEP_MS).toISOString(),
      cluster: 'prod-eu',
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        resource: 'deployments',
        namespace: NAMESPACE,
        name: 'target',
        uid: 'uid-target',
        resourceVersion: String(n + 1),
      },
      by: { managers: [{ manager: n % 3 === 0 ? 'helm' : 'kubectl-edit', operation: 'Update' }] },
    };
    if (n > 0) event.changes = diffObjects(version(n - 1), version(n));
    events.push(event);
  }
  return events;
}

/** Runs `kubediff …` to its exit; its milliseconds. */
function timed(args: string[], env: NodeJS.ProcessEnv, accept: number[] = [0]): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8' });
  const ms = performance.now() - started;
  if (!accept.includes(result.status ?? -1))
    throw new Error(`kubediff ${args.join(' ')}: exit ${result.status}: ${result.stderr}`);
  return ms;
}

function measure(
  state: string,
  env: NodeJS.ProcessEnv,
  end: number,
  store: string,
  fullPassMs: number,
): StoreFigures {
  const iso = (ms: number) => new Date(ms).toISOString();
  const startSamples = Array.from({ length: RUNS }, () => timed(['version'], env));
  const startMs = median(startSamples);
  const target = ['deploy/target', '-n', NAMESPACE, '--state', state];
  const commands: [string, string, string[], number[]][] = [
    [
      'show --at (500 changes back)',
      'the version 500 changes back',
      ['show', ...target, '--at', iso(end - 500 * STEP_MS - STEP_MS / 2)],
      [0],
    ],
    [
      'history deploy/target --tail 1 (baseline)',
      'the same open of the store, one indexed query, one event printed',
      ['history', ...target, '--tail', '1'],
      [0],
    ],
    ['show (now)', 'the last recorded version', ['show', ...target], [0]],
    [
      'diff --from … --to …',
      '100 changes, one unified diff',
      [
        'diff',
        ...target,
        '--from',
        iso(end - 200 * STEP_MS - STEP_MS / 2),
        '--to',
        iso(end - 100 * STEP_MS - STEP_MS / 2),
      ],
      [1],
    ],
    ['diff (the whole history kept)', `${CHANGES - 1} changes, one unified diff`, ['diff', ...target], [1]],
    ['blame', `${CHANGES} versions walked`, ['blame', ...target, '--offline'], [0]],
    [
      'blame --at (500 changes back)',
      '500 versions walked',
      ['blame', ...target, '--offline', '--at', iso(end - 500 * STEP_MS - STEP_MS / 2)],
      [0],
    ],
    [
      'diff -n ns-3 --from … --to … (10 minutes)',
      'every object of a namespace changed in 10 minutes (60 events of 60 objects)',
      ['diff', '-n', 'ns-3', '--from', iso(end - 600_000), '--to', iso(end), '--state', state],
      [0, 1],
    ],
  ];
  const figures: CommandFigure[] = [];
  for (const [command, what, args, accept] of commands) {
    const samples = Array.from({ length: RUNS + 1 }, () => timed(args, env, accept));
    const medianMs = median(samples.slice(1));
    figures.push({
      command,
      what,
      coldMs: round(samples[0]!),
      medianMs: round(medianMs),
      overStart: round(medianMs / startMs),
    });
    process.stderr.write(
      `bench history (${store}): ${command}: ${round(medianMs)} ms (first ${round(samples[0]!)} ms)\n`,
    );
  }
  return { store, fullPassMs: round(fullPassMs), startMs: round(startMs), commands: figures };
}

function machine(): string {
  const cpu = os.cpus();
  return `${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, load average ${os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`;
}

async function sqliteFigures(spec: GeneratedHistory, end: number, dir: string): Promise<StoreFigures> {
  const file = path.join(dir, 'history.db');
  writeGeneratedHistory(file, spec);
  const db = SqliteDatabase.open(file);
  const writes: StateWrite[] = targetEvents(end).map((event) => ({
    kind: 'event',
    resource: 'deployments.apps',
    event,
  }));
  writes.push({
    kind: 'object',
    resource: 'deployments.apps',
    object: {
      key: `${NAMESPACE}/target`,
      namespace: NAMESPACE,
      name: 'target',
      uid: 'uid-target',
      resourceVersion: String(CHANGES),
      object: version(CHANGES - 1),
    },
  });
  db.write(writes);
  // The discovery a watch records, so that kubectl's names (deploy, cm) resolve as they do for users.
  db.writeSerialized([
    {
      kind: 'resources',
      entries: DISCOVERY.map((type) => ({
        resource: type.group ? `${type.resource}.${type.group}` : type.resource,
        json: JSON.stringify(type),
        watched: true,
      })),
    },
  ]);
  db.close();
  process.stderr.write(
    `bench history: wrote ${EVENTS + CHANGES} events (${round(statSync(file).size / 1048576)} MiB)\n`,
  );
  const reader = new DatabaseSync(file, { readOnly: true });
  const passes = Array.from({ length: RUNS }, () => {
    const started = performance.now();
    reader.prepare('SELECT count(*), sum(length(event)) FROM events').get();
    return performance.now() - started;
  });
  reader.close();
  return measure(file, process.env, end, 'SQLite', median(passes));
}

async function postgresFigures(spec: GeneratedHistory, end: number): Promise<StoreFigures> {
  const server = await startPostgres({ label: 'bench-history' });
  try {
    await writeGeneratedPostgresHistory(server.url, spec);
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      for (const event of targetEvents(end)) {
        await client.query(
          `INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event)
           VALUES ($1, $2, $3::timestamptz, $4, 'deployments.apps', $5, 'target', $6::json)`,
          [event.cluster, event.id, event.time, event.type, NAMESPACE, JSON.stringify(event)],
        );
      }
      for (const type of DISCOVERY) {
        await client.query(
          `INSERT INTO kubediff_resources (cluster, resource, type, watched) VALUES ('prod-eu', $1, $2::json, true)`,
          [type.group ? `${type.resource}.${type.group}` : type.resource, JSON.stringify(type)],
        );
      }
      await client.query(
        `INSERT INTO kubediff_objects (cluster, resource, key, namespace, name, uid, resource_version, object)
         VALUES ('prod-eu', 'deployments.apps', $1, $2, 'target', 'uid-target', $3, $4)`,
        [`${NAMESPACE}/target`, NAMESPACE, String(CHANGES), JSON.stringify(version(CHANGES - 1))],
      );
    } finally {
      await client.end();
    }
    await psql(server, 'VACUUM ANALYZE kubediff_events');
    const passes: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      await psql(server, 'SELECT count(*), sum(length(event::text)) FROM kubediff_events');
      passes.push(performance.now() - started);
    }
    const url = new URL(server.url);
    url.password = '';
    const env = { ...process.env, PGPASSWORD: server.password };
    // The generated history records two clusters: the commands name the target's.
    return measure(`${url.href}`, env, end, 'PostgreSQL', median(passes));
  } finally {
    await server.stopServer();
  }
}

function record(result: Result): void {
  if (!RECORD) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  writeFileSync(RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  const latest = path.join(repoRoot, 'bench', 'results', 'latest.json');
  writeFileSync(
    path.join(repoRoot, 'BENCHMARKS.md'),
    renderMarkdown(JSON.parse(readFileSync(latest, 'utf8')) as Record<string, unknown>),
  );
  process.stderr.write(
    'bench history: wrote bench/results/history-commands.json and section 14 of BENCHMARKS.md\n',
  );
}

async function main(): Promise<void> {
  // --report: section 14 again from bench/results/history-commands.json (after a change of its wording).
  if (argv.includes('--report')) {
    record(JSON.parse(readFileSync(RESULT_FILE, 'utf8')) as Result);
    return;
  }
  buildDist();
  const stepMs = 250;
  const end = Date.now();
  const spec: GeneratedHistory = {
    events: EVENTS,
    start: end - EVENTS * stepMs,
    stepMs,
    namespaces: 40,
    objects: 20_000,
  };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kubediff-bench-history-'));
  try {
    const sqlite = await sqliteFigures(spec, end, dir);
    rmSync(dir, { recursive: true, force: true });
    const postgres = argv.includes('--no-postgres') ? undefined : await postgresFigures(spec, end);
    record({
      date: new Date().toISOString(),
      machine: machine(),
      node: process.version,
      events: EVENTS,
      sqlite,
      ...(postgres ? { postgres } : {}),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
