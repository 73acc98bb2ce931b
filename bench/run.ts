// npm run bench: kubediff's benchmarks (issue 7), each figure a ratio against a baseline measured in
// the same run, on a control plane of its own. Prints a table; a full run also writes
// bench/results/latest.json and BENCHMARKS.md. Numbers are recorded, never asserted.
//
//   npm run bench                      the recorded run (about 15 minutes, 10-minute soak)
//   npm run bench -- --quick           a development run (under 3 minutes); results in a temp folder
//   options: --soak-seconds N, --cluster <ClusterInfo.json> (reuse a running cluster; without the
//            deployment and ReplicaSet controllers it records no Pods, and figure 1 skips them),
//            --only pipeline,sync,latency,soak,go,connections (a subset; nothing recorded)
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeCluster } from '../test/helpers/cluster.ts';
import { measureConnections } from './connections.ts';
import { buildGoOriginal } from './go-original.ts';
import { measureLatency } from './latency.ts';
import { benchCluster } from './lib/cluster.ts';
import type { StreamFigures } from './pipeline.ts';
import { recordStreams } from './record.ts';
import { renderMarkdown, renderTable } from './report.ts';
import { runSoak } from './soak.ts';
import { measureSyncTime, populate } from './sync.ts';

const FIGURES = ['pipeline', 'sync', 'latency', 'soak', 'go', 'connections'] as const;
const repoRoot = path.resolve(import.meta.dirname, '..');

function parseArgs(argv: string[]) {
  const option = (name: string) => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const quick = argv.includes('--quick');
  const only = option('--only')?.split(',');
  for (const name of only ?? []) {
    if (!(FIGURES as readonly string[]).includes(name)) throw new Error(`--only: unknown figure ${name}`);
  }
  const soakSeconds = Number(option('--soak-seconds') ?? (quick ? 45 : 600));
  return {
    quick,
    figures: new Set<string>(only ?? FIGURES),
    cluster: option('--cluster'),
    record: !quick && !only,
    pipelinePairs: quick ? 3 : 9,
    recordScale: quick ? 0.5 : 1,
    syncObjects: quick ? 2_000 : 10_000,
    syncPairs: quick ? 3 : 9,
    latencyWrites: quick ? 300 : 1_200,
    latencyRate: 20,
    soakSeconds,
    soakRate: 40,
    connectionPairs: quick ? 1 : 2,
    // Long enough for HTTP/1.1's idle LIST connections to close (30 s keep-alive): "settled" is then what stays.
    connectionWindowSeconds: quick ? 5 : 35,
  };
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
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
const started = Date.now();
const work = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-'));
const result: Record<string, unknown> = {
  date: new Date().toISOString(),
  mode: settings.quick ? 'quick' : 'full',
  machine: machine(),
  node: process.version,
  settings: { ...settings, figures: [...settings.figures] },
};
log(`${settings.quick ? 'quick' : 'full'} run; working in ${work}`);
const cluster = await benchCluster({ existing: settings.cluster, log });
result.kubernetes = cluster.kubernetesVersion;
const clusterFile = path.join(work, 'cluster.json');
await writeFile(clusterFile, JSON.stringify(describeCluster(cluster.info)), { mode: 0o600 });
try {
  if (settings.figures.has('pipeline')) {
    log('1. pipeline throughput: recording watch streams from the API server');
    const fixtures = path.join(work, 'fixtures');
    const streams = await recordStreams(cluster.info, cluster.admin, fixtures, {
      scale: settings.recordScale,
      log,
    });
    log('1. pipeline throughput: replaying');
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
  if (settings.figures.has('sync')) {
    log(`2. initial sync: creating ${settings.syncObjects} ConfigMaps`);
    const ns = await cluster.admin.createNamespace('bench-sync');
    const emptyNs = await cluster.admin.createNamespace('bench-sync-empty');
    await populate(cluster.admin, ns, settings.syncObjects, log);
    log('2. initial sync: timing');
    const time = await measureSyncTime(cluster.info, ns, settings.syncObjects, settings.syncPairs);
    log('2. initial sync: retained heap');
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
  if (settings.figures.has('latency')) {
    log('3. latency');
    result.latency = await measureLatency(cluster.info, clusterFile, cluster.admin, {
      writes: settings.latencyWrites,
      writesPerSecond: settings.latencyRate,
      log,
    });
  }
  if (settings.figures.has('soak')) {
    log(`4. churn soak (${settings.soakSeconds} s)`);
    result.soak = await runSoak(cluster.info, cluster.admin, {
      seconds: settings.soakSeconds,
      writesPerSecond: settings.soakRate,
      log,
    });
  }
  if (settings.figures.has('connections')) {
    log('6. connections: HTTP/2 against HTTP/1.1, 64 resource types');
    result.connections = await measureConnections(cluster.info, cluster.admin, {
      pairs: settings.connectionPairs,
      windowSeconds: settings.connectionWindowSeconds,
      writesPerSecond: 5,
      log,
    });
  }
  if (settings.figures.has('go')) {
    log('5. the Go original: go install from the module proxy');
    const build = await buildGoOriginal();
    const { cleanup, binary, ...rest } = build;
    result.goOriginal = {
      ...rest,
      built: binary !== undefined,
      ...(binary
        ? { reason: 'it built, but this benchmark has no runner for its configuration yet: not compared' }
        : {}),
    };
    await cleanup();
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
  await writeFile(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(path.join(repoRoot, 'BENCHMARKS.md'), renderMarkdown(result));
  log(`wrote ${path.relative(repoRoot, jsonFile)} and BENCHMARKS.md`);
  await rm(work, { recursive: true, force: true });
} else {
  const jsonFile = path.join(work, 'result.json');
  await rm(path.join(work, 'fixtures'), { recursive: true, force: true });
  await writeFile(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
  log(`not recorded (quick or partial run); result in ${jsonFile}`);
}

function safeExec(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unavailable';
  }
}
