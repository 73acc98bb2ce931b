// Figure 22: the initial sync of one cluster of 100,000 objects (issue 40), what a fleet's replica pays
// to take a big cluster over. kubediff's ClusterWatcher (discovery, the streaming list, normalization,
// the store), exactly what `kubediff watch` awaits before it prints "watching N resource types",
// against ONE unpaged raw LIST of the same objects (undici, read and parsed), pair by pair; and the
// same by kubediff's paged LIST (KUBEDIFF_INITIAL_SYNC=list), against the unpaged LIST of its own pairs.
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { rawAgent, rawList } from './lib/raw.ts';
import { paired, type Spread, spread } from './lib/stats.ts';
import { kubediffSync, populate } from './sync.ts';

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
    const stream = await paired(
      pairs,
      1,
      () => kubediffSync(info, ns, objects, 'stream'),
      () => rawUnpagedSync(info, ns, objects, bytes),
    );
    log(`sync-large: timing ${pairs} pairs by paged LIST`);
    const paged = await paired(
      pairs,
      0,
      () => kubediffSync(info, ns, objects, 'list'),
      () => rawUnpagedSync(info, ns, objects, bytes),
    );
    return {
      objects,
      pairs,
      kubediffMs: spread(stream.a),
      rawListMs: spread(stream.b),
      ratio: spread(stream.ratios),
      paged: { kubediffMs: spread(paged.a), rawListMs: spread(paged.b), ratio: spread(paged.ratios) },
      listBytes: bytes.value,
    };
  } finally {
    await admin.deleteNamespace(ns, { wait: false }).catch(() => undefined);
  }
}
