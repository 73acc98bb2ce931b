// Figure 3: latency from an API write to the event line on stdout, at a steady write rate.
// The real CLI (`kubediff watch -o json`) and a raw watch stream (bench/raw-watch.ts, a process that
// only copies the watch lines to stdout) watch the same ConfigMaps at the same time; each write
// puts its sequence number in the object, and each side's latency is the time from just before the
// write request to the line carrying that number, read from the process's stdout.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { inParallel } from './lib/objects.ts';
import { startChild } from './lib/processes.ts';
import { quantile, round } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const RAW_WATCH = path.resolve(import.meta.dirname, 'raw-watch.ts');
const OBJECTS = 20;

export interface LatencyFigures {
  writes: number;
  writesPerSecond: number;
  kubediff: { p50Ms: number; p99Ms: number; received: number };
  rawWatch: { p50Ms: number; p99Ms: number; received: number };
  p50Ratio: number;
  p99Ratio: number;
}

/**
 * Patches `names` in turn, `writes` times at `writesPerSecond`, each with its sequence number in
 * `/data/seq` (noted in `sentAt` just before the request); then waits (at most 15 s) until every
 * reader's `arrivals` has every sequence number.
 */
export async function writeAtRate(
  admin: KubeAdmin,
  collection: string,
  names: readonly string[],
  options: { writes: number; writesPerSecond: number },
  sentAt: Map<number, number>,
  arrivals: readonly Map<number, number>[],
): Promise<void> {
  const interval = 1000 / options.writesPerSecond;
  const started = performance.now();
  const inFlight: Promise<unknown>[] = [];
  for (let seq = 0; seq < options.writes; seq++) {
    const due = started + seq * interval;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    sentAt.set(seq, performance.now());
    inFlight.push(
      admin.patch(`${collection}/${names[seq % names.length]}`, { data: { seq: String(seq) } }, 'merge'),
    );
  }
  await Promise.all(inFlight);
  const deadline = performance.now() + 15_000;
  while (arrivals.some((arrived) => arrived.size < options.writes) && performance.now() < deadline) {
    await sleep(100);
  }
}

/** Per write that arrived: the time from just before its request to its line. */
export function latencies(sentAt: Map<number, number>, arrivals: Map<number, number>): number[] {
  return [...arrivals].filter(([seq]) => sentAt.has(seq)).map(([seq, at]) => at - sentAt.get(seq)!);
}

/** The sequence number a kubediff event line carries (`/data/seq`), if any. */
export function sequenceOf(line: string): number | undefined {
  const event = JSON.parse(line) as { changes?: { path: string; to?: unknown }[] };
  const seq = event.changes?.find((change) => change.path === '/data/seq')?.to;
  return typeof seq === 'string' ? Number(seq) : undefined;
}

export async function measureLatency(
  info: ClusterInfo,
  clusterFile: string,
  admin: KubeAdmin,
  options: { writes: number; writesPerSecond: number; log: (m: string) => void },
): Promise<LatencyFigures> {
  const ns = await admin.createNamespace('bench-latency');
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  const names = Array.from({ length: OBJECTS }, (_, i) => `lat-${i}`);
  await inParallel(names, 4, (name) =>
    admin.create(collection, {
      metadata: { name, labels: { app: 'latency' } },
      data: { seq: '-1', payload: 'x'.repeat(1500) },
    }),
  );

  const sentAt = new Map<number, number>();
  const kubediffAt = new Map<number, number>();
  const rawAt = new Map<number, number>();
  const kubediff = startChild(
    process.execPath,
    [KUBEDIFF, 'watch', '--kubeconfig', info.kubeconfigPath, '-o', 'json', '-r', 'configmaps', '-n', ns],
    {
      onLine: (line, at) => {
        const seq = sequenceOf(line);
        if (seq !== undefined && !kubediffAt.has(seq)) kubediffAt.set(seq, at);
      },
    },
  );
  const raw = startChild(process.execPath, [RAW_WATCH, '--cluster', clusterFile, '--path', collection], {
    onLine: (line, at) => {
      const seq = (JSON.parse(line) as { object?: { data?: { seq?: string } } }).object?.data?.seq;
      if (seq !== undefined && !rawAt.has(Number(seq))) rawAt.set(Number(seq), at);
    },
  });
  try {
    await kubediff.waitForStderr(/watching \d+ resource type/, 60_000);
    await raw.waitForStderr(/ready/, 60_000);
    await sleep(1_000);
    options.log(`latency: ${options.writes} writes at ${options.writesPerSecond}/s`);
    await writeAtRate(admin, collection, names, options, sentAt, [kubediffAt, rawAt]);
  } finally {
    await kubediff.stop();
    await raw.stop();
    await admin.deleteNamespace(ns);
  }
  const kd = latencies(sentAt, kubediffAt);
  const rw = latencies(sentAt, rawAt);
  const figures = {
    kubediff: { p50Ms: quantile(kd, 0.5), p99Ms: quantile(kd, 0.99), received: kd.length },
    rawWatch: { p50Ms: quantile(rw, 0.5), p99Ms: quantile(rw, 0.99), received: rw.length },
  };
  return {
    writes: options.writes,
    writesPerSecond: options.writesPerSecond,
    kubediff: {
      p50Ms: round(figures.kubediff.p50Ms),
      p99Ms: round(figures.kubediff.p99Ms),
      received: kd.length,
    },
    rawWatch: {
      p50Ms: round(figures.rawWatch.p50Ms),
      p99Ms: round(figures.rawWatch.p99Ms),
      received: rw.length,
    },
    p50Ratio: figures.kubediff.p50Ms / figures.rawWatch.p50Ms,
    p99Ratio: figures.kubediff.p99Ms / figures.rawWatch.p99Ms,
  };
}
