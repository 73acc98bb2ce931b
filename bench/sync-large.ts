// Figure 22: the initial sync of one cluster of 100,000 objects (issue 40), what a fleet's replica pays
// to take a big cluster over. kubediff's ClusterWatcher (discovery, the streaming list, normalization,
// the store), exactly what `kubediff watch` awaits before it prints "watching N resource types",
// against ONE unpaged raw LIST of the same objects (undici, read and parsed), pair by pair; and the
// same by kubediff's paged LIST (KUBEDIFF_INITIAL_SYNC=list), against the unpaged LIST of its own pairs.
// Each run's CPU seconds too, the client's (this process: kubediff, or undici and JSON.parse) and the
// API server's with etcd's: where the time goes, and what the machine's load cannot blur.
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { cpuSeconds } from './lib/processes.ts';
import { rawAgent, rawList } from './lib/raw.ts';
import { pairedSamples, pairedSpread, type Spread, spread } from './lib/stats.ts';
import { kubediffSync, populate } from './sync.ts';

/** One timed run: its wall time and the CPU it cost on each side. */
interface RunCost {
  ms: number;
  /** This process's CPU seconds (user + system). */
  clientCpuS: number;
  /** The API server's and etcd's CPU seconds; NaN for a cluster whose processes are not ours to read. */
  serverCpuS: number;
}

/** CPU seconds of the control plane's API server and etcd so far; NaN without their process ids. */
function serverCpuSeconds(info: ClusterInfo): number {
  const apiserver = info.pids?.['kube-apiserver'];
  const etcd = info.pids?.etcd;
  if (apiserver === undefined || etcd === undefined) return Number.NaN;
  return cpuSeconds(apiserver) + cpuSeconds(etcd);
}

/** `run`'s milliseconds, with the CPU both sides spent meanwhile. */
async function costOf(info: ClusterInfo, run: () => Promise<number>): Promise<RunCost> {
  const server = serverCpuSeconds(info);
  const client = process.cpuUsage();
  const ms = await run();
  const used = process.cpuUsage(client);
  return {
    ms,
    clientCpuS: (used.user + used.system) / 1e6,
    serverCpuS: serverCpuSeconds(info) - server,
  };
}

/** CPU seconds of one side of the pairs, client and server. */
export interface CpuFigures {
  clientS: Spread;
  serverS: Spread;
}

export interface LargeSyncFigures {
  objects: number;
  pairs: number;
  /** By streaming list (the default). */
  kubediffMs: Spread;
  rawListMs: Spread;
  /** kubediff / the unpaged raw LIST, pair by pair. */
  ratio: Spread;
  /** By paged LIST (KUBEDIFF_INITIAL_SYNC=list), against the unpaged raw LIST of its own pairs. */
  paged: { kubediffMs: Spread; rawListMs: Spread; ratio: Spread };
  /** Bytes of the unpaged LIST's body. */
  listBytes: number;
  /** CPU seconds per run: kubediff by streaming list, by paged LIST, and the unpaged raw LIST (all its pairs). */
  cpu?: { stream: CpuFigures; paged: CpuFigures; rawList: CpuFigures };
}

function cpuFigures(runs: RunCost[]): CpuFigures {
  return {
    clientS: spread(runs.map((run) => run.clientCpuS)),
    serverS: spread(runs.map((run) => run.serverCpuS)),
  };
}

/** Milliseconds from nothing (a new connection pool) to the one LIST's body read and parsed. */
async function rawUnpagedSync(
  info: ClusterInfo,
  ns: string,
  expected: number,
  bytes: { value: number },
): Promise<number> {
  const started = performance.now();
  const agent = rawAgent(info);
  const result = await rawList(info, agent, `/api/v1/namespaces/${ns}/configmaps`);
  const elapsed = performance.now() - started;
  await agent.close();
  bytes.value = result.bytes;
  if (result.items !== expected)
    throw new Error(`the raw LIST returned ${result.items} objects, expected ${expected}`);
  return elapsed;
}

export async function measureLargeSync(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: { objects: number; pairs: number; log: (message: string) => void },
): Promise<LargeSyncFigures> {
  const { objects, pairs, log } = options;
  const ns = await admin.createNamespace('bench-sync-large');
  try {
    await populate(admin, ns, objects, log);
    const bytes = { value: 0 };
    log(`sync-large: timing ${pairs} pairs by streaming list`);
    const raw = () => costOf(info, () => rawUnpagedSync(info, ns, objects, bytes));
    const stream = await pairedSamples(
      pairs,
      1,
      () => costOf(info, () => kubediffSync(info, ns, objects, 'stream')),
      raw,
    );
    log(`sync-large: timing ${pairs} pairs by paged LIST`);
    const paged = await pairedSamples(
      pairs,
      0,
      () => costOf(info, () => kubediffSync(info, ns, objects, 'list')),
      raw,
    );
    const ms = (run: RunCost) => run.ms;
    const streamMs = pairedSpread(stream, ms);
    const pagedMs = pairedSpread(paged, ms);
    return {
      objects,
      pairs,
      kubediffMs: streamMs.a,
      rawListMs: streamMs.b,
      ratio: streamMs.ratio,
      paged: { kubediffMs: pagedMs.a, rawListMs: pagedMs.b, ratio: pagedMs.ratio },
      listBytes: bytes.value,
      cpu: {
        stream: cpuFigures(stream.a),
        paged: cpuFigures(paged.a),
        rawList: cpuFigures([...stream.b, ...paged.b]),
      },
    };
  } finally {
    await admin.deleteNamespace(ns, { wait: false }).catch(() => undefined);
  }
}
