// npm run bench: kubediff's benchmarks (issue 7), each figure a ratio against a baseline measured in
// the same run, on a control plane of its own. Prints a table; a full run also writes
// bench/results/latest.json and BENCHMARKS.md. Numbers are recorded, never asserted.
//
//   npm run bench                      the recorded run (about 21 minutes, 10-minute soak)
//   npm run bench -- --quick           a development run (about 3 minutes); results in a temp folder
//   npm run bench -- --help            this text; an option not listed here is refused (exit 2)
//   options: --soak-seconds N, --cluster <ClusterInfo.json> (reuse a running cluster; without the
//            deployment and ReplicaSet controllers it records no Pods, and figure 1 skips them),
//            --only pipeline,sync,sync-large,latency,soak,go-original,startup,connections,kafka,audit,admission,log-sinks,ui-object,sizing,used-by,outcomes,fleet (a subset; nothing recorded unless
//            --record: then its figures replace theirs in latest.json, the others are kept),
//            --go-original-src <folder> (the Go original's source; default: beside the repository),
//            --outcome-pods N (figure 19's pods; default 10,000),
//            --fleet-kills N, --fleet-writes N (figure 21's takeovers and load; default 10 and 1,800,
//            3 and 600 with --quick)
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs as parseCommandLine } from 'node:util';
import { buildDist } from '../scripts/build.ts';
import { ensureKwok } from '../scripts/kwok-build.ts';
import { writeRunDescription } from '../test/helpers/run-description.ts';
import { measureAdmission } from './admission.ts';
import { measureAuditLatency } from './audit.ts';
import { measureConnections } from './connections.ts';
import { DEFAULT_GO_ORIGINAL_SRC, ensureGoOriginal } from './go-original.ts';
import { measureKafka } from './kafka.ts';
import { measureLatency } from './latency.ts';
import { benchCluster } from './lib/cluster.ts';
import { measureLogSinks } from './log-sinks.ts';
import type { StreamFigures } from './pipeline.ts';
import { recordStreams } from './record.ts';
import { FIGURES, type FigureName, renderMarkdown, renderTable } from './report.ts';
import { measureSideBySide } from './side-by-side.ts';
import { measureSizing } from './sizing.ts';
import { runSoak } from './soak.ts';
import { measureStartup } from './startup.ts';
import type { StoryFigures } from './stories.ts';
import { measureSyncTime, populate } from './sync.ts';
import { measureLargeSync } from './sync-large.ts';
import { measureUiObject } from './ui-object.ts';
import type { UsedByFigures } from './used-by.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');

/** The options this command takes: anything else is refused before a control plane starts. */
const OPTIONS = {
  help: { type: 'boolean' },
  quick: { type: 'boolean' },
  record: { type: 'boolean' },
  only: { type: 'string' },
  cluster: { type: 'string' },
  'soak-seconds': { type: 'string' },
  'go-original-src': { type: 'string' },
  'outcome-pods': { type: 'string' },
  'fleet-kills': { type: 'string' },
  'fleet-writes': { type: 'string' },
} as const;

/** Says `message` (what is wrong and how to fix it) and exits 2, as kubediff does with a bad flag. */
function usageError(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv: string[]) {
  let values: ReturnType<typeof parseCommandLine<{ options: typeof OPTIONS }>>['values'];
  try {
    ({ values } = parseCommandLine({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    usageError(`${(error as Error).message.replace(/\.$/, '')}; see npm run bench -- --help.`);
  }
  if (values.help) {
    // The usage is this file's header.
    const usage = readFileSync(import.meta.filename, 'utf8').split('\nimport ')[0] ?? '';
    process.stdout.write(`${usage.replace(/^\/\/ ?/gm, '')}\n`);
    process.exit(0);
  }
  const option = (name: Exclude<keyof typeof OPTIONS, 'help' | 'quick' | 'record'>) => values[name];
  const quick = values.quick === true;
  const only = option('only')?.split(',');
  for (const name of only ?? []) {
    if (!Object.hasOwn(FIGURES, name))
      usageError(`--only: unknown figure ${name} (figures: ${Object.keys(FIGURES).join(', ')}).`);
  }
  const soakSeconds = Number(option('soak-seconds') ?? (quick ? 45 : 600));
  return {
    quick,
    figures: new Set<string>(only ?? Object.keys(FIGURES)),
    cluster: option('cluster'),
    record: !quick && (!only || values.record === true),
    partial: only !== undefined,
    pipelinePairs: quick ? 3 : 9,
    recordScale: quick ? 0.5 : 1,
    syncObjects: quick ? 2_000 : 10_000,
    syncPairs: quick ? 3 : 9,
    // Issue 40: one cluster of 100,000 objects.
    largeSyncObjects: quick ? 20_000 : 100_000,
    largeSyncPairs: quick ? 2 : 5,
    latencyWrites: quick ? 300 : 1_200,
    latencyRate: 20,
    auditWrites: quick ? 300 : 1_200,
    // Issue 28: 500 writes each way.
    admissionWrites: quick ? 200 : 500,
    // Issue 36: each phase of the loads (quiet, slow bodies, large reviews).
    admissionLoadSeconds: quick ? 10 : 20,
    soakSeconds,
    soakRate: 40,
    connectionPairs: quick ? 1 : 2,
    // Long enough for HTTP/1.1's idle LIST connections to close (30 s keep-alive): "settled" is then what stays.
    connectionWindowSeconds: quick ? 5 : 35,
    goOriginalSource: path.resolve(option('go-original-src') ?? DEFAULT_GO_ORIGINAL_SRC),
    sideBySideObjects: quick ? [300, 2_000] : [300, 10_000],
    sideBySideWrites: quick ? 1_000 : 3_000,
    sideBySideRate: 50,
    sideBySideRounds: quick ? 1 : 3,
    startupPairs: quick ? 3 : 9,
    initialObjects: quick ? 1_000 : 3_000,
    kafkaEvents: quick ? 20_000 : 100_000,
    uiObjectWrites: quick ? 200 : 600,
    // Figure 17: pods on the pod plane (10,000; fewer where the machine cannot schedule that many in time).
    outcomePods: Number(option('outcome-pods') ?? 10_000),
    uiObjectReplaces: quick ? 10 : 30,
    kafkaPairs: quick ? 2 : 5,
    logSinkEvents: quick ? 10_000 : 50_000,
    webhookEvents: quick ? 2_000 : 10_000,
    logSinkPairs: quick ? 1 : 3,
    sizingConfigMaps: quick ? [0, 1_000] : [0, 1_000, 10_000, 30_000],
    sizingCrds: quick ? 5 : 50,
    sizingWindowSeconds: quick ? 10 : 60,
    // Figure 21: the same load with 1, 2 and 3 replicas, then kill -9s of a cluster's owner.
    fleetWrites: Number(option('fleet-writes') ?? (quick ? 600 : 1_800)),
    fleetKills: Number(option('fleet-kills') ?? (quick ? 3 : 10)),
  };
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

/** A progress line of one figure, under its number in BENCHMARKS.md. */
function step(figure: FigureName, message: string): void {
  log(`${FIGURES[figure].number}. ${message}`);
}

function runChild(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => (stdout += text));
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`node ${args.join(' ')} exited ${code}`)),
    );
  });
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((value) => Math.round(value * 100) / 100),
  };
}

const settings = parseArgs(process.argv.slice(2));
// Every figure runs kubediff from dist/: compiled from the sources being measured.
buildDist();
const started = Date.now();
const work = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-'));
const result: Record<string, unknown> = {
  date: new Date().toISOString(),
  mode: settings.quick ? 'quick' : 'full',
  machine: machine(),
  node: process.version,
  // The source folder as seen from the repository: the machine's own paths are not part of a result.
  settings: {
    ...settings,
    figures: [...settings.figures],
    goOriginalSource: path.relative(repoRoot, settings.goOriginalSource),
  },
};
log(`${settings.quick ? 'quick' : 'full'} run; working in ${work}`);
const cluster = await benchCluster({ existing: settings.cluster, log });
result.kubernetes = cluster.kubernetesVersion;
const clusterFile = path.join(work, 'cluster.json');
await writeRunDescription(clusterFile, cluster.info);
try {
  // Figures 1 and 8 replay the same recordings.
  const fixtures = path.join(work, 'fixtures');
  const streams =
    settings.figures.has('pipeline') || settings.figures.has('stories')
      ? await (async () => {
          step('pipeline', 'pipeline throughput: recording watch streams from the API server');
          return recordStreams(cluster.info, cluster.admin, fixtures, { scale: settings.recordScale, log });
        })()
      : [];
  if (settings.figures.has('pipeline')) {
    step('pipeline', 'pipeline throughput: replaying');
    const output = await runChild([
      path.join(import.meta.dirname, 'pipeline.ts'),
      '--fixtures',
      fixtures,
      '--pairs',
      String(settings.pipelinePairs),
    ]);
    const figures = (JSON.parse(output) as { streams: StreamFigures[] }).streams;
    result.pipeline = { recorded: streams.map(({ file: _file, ...rest }) => rest), streams: figures };
  }
  if (settings.figures.has('stories')) {
    step('stories', 'stories: replaying with stories on and off, and the heap of open stories');
    const output = await runChild([
      '--expose-gc',
      path.join(import.meta.dirname, 'stories.ts'),
      '--fixtures',
      fixtures,
      '--pairs',
      String(settings.pipelinePairs),
    ]);
    const { sink: _sink, ...figures } = JSON.parse(output) as StoryFigures & { sink: boolean };
    result.stories = figures;
  }
  if (settings.figures.has('used-by')) {
    step('used-by', "what a change reaches: usedBy on and off, and the index's heap");
    const output = await runChild([
      '--expose-gc',
      path.join(import.meta.dirname, 'used-by.ts'),
      '--pairs',
      String(settings.pipelinePairs),
    ]);
    const { sink: _sink, ...figures } = JSON.parse(output) as UsedByFigures & { sink: boolean };
    result.usedBy = figures;
  }
  if (settings.figures.has('outcomes')) {
    step('outcomes', 'outcomes: 10,000 pods on the pod plane, outcomes on and off side by side, rollouts');
    await ensureKwok(log);
    const output = await runChild([
      path.join(import.meta.dirname, 'outcomes.ts'),
      '--pods',
      String(settings.quick ? 1000 : settings.outcomePods),
    ]);
    result.outcomes = JSON.parse(output);
  }
  if (settings.figures.has('fleet')) {
    step(
      'fleet',
      'a fleet of replicas: 6 clusters on 2 API servers, throughput with 1, 2, 3 replicas, takeovers',
    );
    const output = await runChild([
      path.join(import.meta.dirname, 'fleet.ts'),
      '--cluster',
      clusterFile,
      '--kills',
      String(settings.fleetKills),
      '--writes',
      String(settings.fleetWrites),
    ]);
    result.fleet = JSON.parse(output);
  }
  if (settings.figures.has('sync')) {
    step('sync', `initial sync: creating ${settings.syncObjects} ConfigMaps`);
    const ns = await cluster.admin.createNamespace('bench-sync');
    const emptyNs = await cluster.admin.createNamespace('bench-sync-empty');
    await populate(cluster.admin, ns, settings.syncObjects, log);
    step('sync', 'initial sync: timing');
    const time = await measureSyncTime(cluster.info, ns, settings.syncObjects, settings.syncPairs);
    step('sync', 'initial sync: retained heap');
    const heap = JSON.parse(
      await runChild([
        '--expose-gc',
        path.join(import.meta.dirname, 'sync.ts'),
        '--heap',
        '--cluster',
        clusterFile,
        '--namespace',
        ns,
        '--empty',
        emptyNs,
      ]),
    );
    result.sync = { time, heap };
    await cluster.admin.deleteNamespace(ns);
    await cluster.admin.deleteNamespace(emptyNs);
  }
  if (settings.figures.has('sync-large')) {
    step('sync-large', `initial sync of one big cluster: creating ${settings.largeSyncObjects} ConfigMaps`);
    result.syncLarge = await measureLargeSync(cluster.info, cluster.admin, {
      objects: settings.largeSyncObjects,
      pairs: settings.largeSyncPairs,
      log,
    });
  }
  if (settings.figures.has('latency')) {
    step('latency', 'latency');
    result.latency = await measureLatency(cluster.info, clusterFile, cluster.admin, {
      writes: settings.latencyWrites,
      writesPerSecond: settings.latencyRate,
      log,
    });
  }
  if (settings.figures.has('soak')) {
    step('soak', `churn soak (${settings.soakSeconds} s)`);
    result.soak = await runSoak(cluster.info, cluster.admin, {
      seconds: settings.soakSeconds,
      writesPerSecond: settings.soakRate,
      log,
    });
  }
  if (settings.figures.has('go-original')) {
    step('go-original', 'the Go original, side by side');
    const build = await ensureGoOriginal(settings.goOriginalSource, log);
    const streams = [];
    for (const objects of settings.sideBySideObjects) {
      streams.push(
        await measureSideBySide(cluster.info, cluster.admin, build, {
          objects,
          writes: settings.sideBySideWrites,
          writesPerSecond: settings.sideBySideRate,
          rounds: settings.sideBySideRounds,
          log,
        }),
      );
    }
    const { binary: _binary, source: _source, ...buildFigures } = build;
    result.goOriginal = { build: buildFigures, streams };
  }
  if (settings.figures.has('startup')) {
    step('startup', 'start-up');
    result.startup = await measureStartup(cluster.info, cluster.admin, {
      pairs: settings.startupPairs,
      initialObjects: settings.initialObjects,
      log,
    });
  }
  if (settings.figures.has('audit')) {
    step('audit', 'audit join: write → event line with the audit webhook against without');
    result.audit = await measureAuditLatency(cluster.info, {
      writes: settings.auditWrites,
      writesPerSecond: settings.latencyRate,
      log,
    });
  }
  if (settings.figures.has('admission')) {
    step(
      'admission',
      "admission webhook: a write's latency reviewed against not reviewed, and the join rate",
    );
    result.admission = await measureAdmission(cluster.info, {
      writes: settings.admissionWrites,
      loadSeconds: settings.admissionLoadSeconds,
      log,
    });
  }
  if (settings.figures.has('connections')) {
    step('connections', 'connections: HTTP/2 against HTTP/1.1, 64 resource types');
    result.connections = await measureConnections(cluster.info, cluster.admin, {
      pairs: settings.connectionPairs,
      windowSeconds: settings.connectionWindowSeconds,
      writesPerSecond: 5,
      log,
    });
  }
  if (settings.figures.has('sizing')) {
    step(
      'sizing',
      'memory by cluster size: objects and kinds against resident memory, with the chart’s heap',
    );
    result.sizing = await measureSizing(cluster.info, cluster.admin, {
      configMaps: settings.sizingConfigMaps,
      crds: settings.sizingCrds,
      windowSeconds: settings.sizingWindowSeconds,
      log,
    });
  }
  if (settings.figures.has('ui-object')) {
    step('ui-object', 'the UI beside the watch: event latency and /healthz while a huge object is opened');
    result.uiObject = await measureUiObject(cluster.info, cluster.admin, {
      keys: 20_000,
      replaces: settings.uiObjectReplaces,
      writes: settings.uiObjectWrites,
      writesPerSecond: settings.latencyRate,
      log,
    });
  }
  if (settings.figures.has('kafka')) {
    step('kafka', 'the Kafka sink against a raw producer');
    result.kafka = await measureKafka({ events: settings.kafkaEvents, pairs: settings.kafkaPairs, log });
  }
  if (settings.figures.has('log-sinks')) {
    step('log-sinks', 'the logging-stack sinks against raw clients of the same servers');
    result.logSinks = await measureLogSinks({
      events: settings.logSinkEvents,
      webhookEvents: settings.webhookEvents,
      pairs: settings.logSinkPairs,
      log,
    });
  }
} finally {
  await cluster.stop();
}
result.elapsedSeconds = Math.round((Date.now() - started) / 1000);
result.goVersion = safeExec('go', ['version']);

process.stdout.write(`${renderTable(result)}\n`);
if (settings.record) {
  await mkdir(path.join(import.meta.dirname, 'results'), { recursive: true });
  const jsonFile = path.join(import.meta.dirname, 'results', 'latest.json');
  const recorded = settings.partial ? mergeIntoLatest(jsonFile, result) : result;
  await writeFile(jsonFile, `${JSON.stringify(recorded, null, 2)}\n`);
  await writeFile(path.join(repoRoot, 'BENCHMARKS.md'), renderMarkdown(recorded));
  log(`wrote ${path.relative(repoRoot, jsonFile)} and BENCHMARKS.md`);
  await rm(work, { recursive: true, force: true });
} else {
  const jsonFile = path.join(work, 'result.json');
  await rm(path.join(work, 'fixtures'), { recursive: true, force: true });
  await writeFile(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
  log(`not recorded (quick or partial run); result in ${jsonFile}`);
}

/**
 * A partial run with --record: its figures replace theirs in the last recorded result, the others
 * stay, and the run is listed under `partialRuns` (BENCHMARKS.md says which figures came from when).
 */
function mergeIntoLatest(jsonFile: string, partial: Record<string, unknown>): Record<string, unknown> {
  if (!existsSync(jsonFile)) throw new Error(`--record with --only needs a full run's ${jsonFile} to update`);
  const latest = JSON.parse(readFileSync(jsonFile, 'utf8')) as Record<string, unknown>;
  const figures = [...settings.figures];
  for (const name of figures) {
    const { key } = FIGURES[name as FigureName];
    latest[key] = partial[key];
  }
  // An earlier partial run keeps only the figures this one did not measure again.
  const runs = ((latest.partialRuns as { figures: string[] }[] | undefined) ?? [])
    .map((run) => ({ ...run, figures: run.figures.filter((name) => !figures.includes(name)) }))
    .filter((run) => run.figures.length > 0);
  latest.partialRuns = [
    ...runs,
    {
      figures,
      date: partial.date,
      settings: partial.settings,
      machine: partial.machine,
      node: partial.node,
      kubernetes: partial.kubernetes,
      goVersion: partial.goVersion,
      elapsedSeconds: partial.elapsedSeconds,
    },
  ];
  return latest;
}

function safeExec(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unavailable';
  }
}
