// Figure 2: the initial sync of many objects in the real API server.
// - Time to "synced": kubediff's ClusterWatcher (discovery, the streaming list, normalization, the
//   store), exactly what `kubediff watch` awaits before it prints "watching N resource types",
//   against a raw paged LIST of the same objects (undici, each page read and parsed), pair by pair;
//   and the same with kubediff's paged LIST (KUBEDIFF_INITIAL_SYNC=list), its fallback.
// - Retained heap per cached object against its JSON size, measured in a child process with
//   `--expose-gc`:  node --expose-gc bench/sync.ts --heap --cluster <file> --namespace <ns> --empty <ns>

import { ClusterWatcher } from '../src/informer/cluster-watcher.ts';
import { KubeClient } from '../src/kube/client.ts';
import { Discovery } from '../src/kube/discovery.ts';
import { loadKubeconfig } from '../src/kube/kubeconfig.ts';
import { parseResourceName } from '../src/kube/resource-names.ts';
import type { KubeObject } from '../src/kube/types.ts';
import { silentLogger } from '../src/util/log.ts';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { configmaps } from '../test/helpers/resource-types.ts';
import { configMap, inParallel } from './lib/objects.ts';
import { rawAgent, rawPagedList } from './lib/raw.ts';
import { paired, type Spread, spread } from './lib/stats.ts';
import { benchPipeline, normalizer } from './pipeline.ts';

/** kubediff's default LIST page size; the raw LIST uses the same. */
const PAGE_SIZE = 500;

/** Creates `count` ConfigMaps in `ns` (server-side apply, so they carry managedFields). */
export async function populate(
  admin: KubeAdmin,
  ns: string,
  count: number,
  log: (m: string) => void,
): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `cfg-${i}`);
  let done = 0;
  await inParallel(names, 16, async (name, i) => {
    await admin.send('PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, {
      body: configMap(name, 4 + (i % 6), 200 + (i % 7) * 100),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'argocd' },
    });
    if (++done % 2000 === 0) log(`sync: ${done} of ${count} ConfigMaps created`);
  });
}

/**
 * A ClusterWatcher as `kubediff watch -r configmaps -n <ns> -o json` builds it; `fieldManagers: false`
 * without who-changed-it (no managedFields signature per object), for the memory it costs.
 */
export function configMapWatcher(
  client: KubeClient,
  ns: string,
  options: { initialSync?: 'stream' | 'list'; fieldManagers?: boolean } = {},
): ClusterWatcher {
  const { initialSync = 'stream', fieldManagers = true } = options;
  const pipeline = benchPipeline(() => {});
  return new ClusterWatcher({
    client,
    discovery: new Discovery(client),
    selection: { include: [parseResourceName('configmaps')], exclude: [], namespaceScoped: true },
    namespaces: [ns],
    excludeNamespaces: [],
    normalize: (type, object) => pipeline.normalize(type, object),
    initial: false,
    fieldManagers,
    handler: pipeline.source('bench'),
    log: silentLogger,
    // Long watches and no periodic re-discovery while measuring.
    timing: { minWatchTimeoutSeconds: 3600, initialSync },
    rediscoveryIntervalMs: 3_600_000,
  });
}

/** Milliseconds from nothing (a new client) to a synced watcher of `ns`'s ConfigMaps. */
export async function kubediffSync(
  info: ClusterInfo,
  ns: string,
  expected: number,
  initialSync: 'stream' | 'list',
): Promise<number> {
  const started = performance.now();
  const client = await KubeClient.create(loadKubeconfig({ kubeconfig: info.kubeconfigPath }));
  const watcher = configMapWatcher(client, ns, { initialSync });
  await watcher.start();
  const elapsed = performance.now() - started;
  const count = watcher.allInformers().reduce((sum, informer) => sum + informer.objectCount, 0);
  await watcher.stop();
  await client.close();
  if (count !== expected) throw new Error(`kubediff synced ${count} objects, expected ${expected}`);
  return elapsed;
}

/** Milliseconds from nothing (a new connection pool) to the last page read and parsed. */
async function rawSync(info: ClusterInfo, ns: string, expected: number): Promise<number> {
  const started = performance.now();
  const agent = rawAgent(info);
  const { items } = await rawPagedList(info, agent, `/api/v1/namespaces/${ns}/configmaps`, PAGE_SIZE);
  const elapsed = performance.now() - started;
  await agent.close();
  if (items !== expected) throw new Error(`the raw LIST returned ${items} objects, expected ${expected}`);
  return elapsed;
}

export interface SyncTimeFigures {
  objects: number;
  /** By streaming list (the default). */
  kubediffMs: Spread;
  rawListMs: Spread;
  /** kubediff / raw LIST, pair by pair. */
  ratio: Spread;
  /** By paged LIST (KUBEDIFF_INITIAL_SYNC=list), against the raw LIST of its own pairs. */
  paged: { kubediffMs: Spread; rawListMs: Spread; ratio: Spread };
}

export async function measureSyncTime(
  info: ClusterInfo,
  ns: string,
  objects: number,
  pairs: number,
): Promise<SyncTimeFigures> {
  const result = await paired(
    pairs,
    1,
    () => kubediffSync(info, ns, objects, 'stream'),
    () => rawSync(info, ns, objects),
  );
  const paged = await paired(
    pairs,
    1,
    () => kubediffSync(info, ns, objects, 'list'),
    () => rawSync(info, ns, objects),
  );
  return {
    objects,
    kubediffMs: spread(result.a),
    rawListMs: spread(result.b),
    ratio: spread(result.ratios),
    paged: { kubediffMs: spread(paged.a), rawListMs: spread(paged.b), ratio: spread(paged.ratios) },
  };
}

export interface HeapFigures {
  objects: number;
  /** Retained heap per cached object (bytes), the watcher's fixed cost taken out. */
  retainedBytesPerObject: number;
  /** The same without who-changed-it (no managedFields signature kept per object). */
  retainedBytesPerObjectWithoutManagers: number;
  /** Mean JSON size of an object as the API server sends it (managedFields included). */
  jsonBytesPerObject: number;
  /** Mean JSON size of an object as kubediff stores it (ignored paths dropped). */
  storedJsonBytesPerObject: number;
  /** retainedBytesPerObject / jsonBytesPerObject. */
  ratio: number;
  /** retainedBytesPerObject / storedJsonBytesPerObject. */
  ratioToStoredJson: number;
}

function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** What a synced watcher retains per object, its fixed cost taken out. */
async function retainedPerObject(
  info: ClusterInfo,
  ns: string,
  emptyNs: string,
  fieldManagers: boolean,
): Promise<{ objects: number; perObject: number }> {
  const identity = loadKubeconfig({ kubeconfig: info.kubeconfigPath });
  const before = settledHeap();
  // A watcher of an empty namespace: the fixed cost (client, discovery, informers), taken out below.
  const emptyClient = await KubeClient.create(identity);
  const empty = configMapWatcher(emptyClient, emptyNs, { fieldManagers });
  await empty.start();
  const withEmpty = settledHeap();
  const client = await KubeClient.create(identity);
  const watcher = configMapWatcher(client, ns, { fieldManagers });
  await watcher.start();
  const withFull = settledHeap();
  const objects = watcher.allInformers().reduce((sum, informer) => sum + informer.objectCount, 0);
  const fixed = withEmpty - before;
  const retained = withFull - withEmpty - fixed;
  await watcher.stop();
  await empty.stop();
  await client.close();
  await emptyClient.close();
  return { objects, perObject: retained / objects };
}

/** In a child process: what a synced watcher retains per object, with and without who-changed-it. */
async function measureHeap(info: ClusterInfo, ns: string, emptyNs: string): Promise<HeapFigures> {
  const without = await retainedPerObject(info, ns, emptyNs, false);
  const { objects, perObject } = await retainedPerObject(info, ns, emptyNs, true);

  // The same objects as sent (a raw LIST) and as stored.
  const agent = rawAgent(info);
  const { request } = await import('undici');
  let json = 0;
  let stored = 0;
  let count = 0;
  let continueToken: string | undefined;
  do {
    const url = new URL(`/api/v1/namespaces/${ns}/configmaps`, info.server);
    url.searchParams.set('limit', String(PAGE_SIZE));
    if (continueToken) url.searchParams.set('continue', continueToken);
    const response = await request(url, {
      dispatcher: agent,
      headers: { accept: 'application/json', authorization: `Bearer ${info.adminToken}` },
    });
    const page = (await response.body.json()) as { metadata: { continue?: string }; items: KubeObject[] };
    for (const item of page.items) {
      item.apiVersion = 'v1';
      item.kind = 'ConfigMap';
      json += JSON.stringify(item).length;
      stored += JSON.stringify(normalizer.normalize(configmaps, item)).length;
      count++;
    }
    continueToken = page.metadata.continue || undefined;
  } while (continueToken);
  await agent.close();
  return {
    objects,
    retainedBytesPerObject: perObject,
    retainedBytesPerObjectWithoutManagers: without.perObject,
    jsonBytesPerObject: json / count,
    storedJsonBytesPerObject: stored / count,
    ratio: perObject / (json / count),
    ratioToStoredJson: perObject / (stored / count),
  };
}

if (import.meta.main && process.argv.includes('--heap')) {
  const args = process.argv.slice(2);
  const option = (name: string) => args[args.indexOf(name) + 1]!;
  const { readFileSync } = await import('node:fs');
  const info = JSON.parse(readFileSync(option('--cluster'), 'utf8')) as ClusterInfo;
  process.stdout.write(
    `${JSON.stringify(await measureHeap(info, option('--namespace'), option('--empty')))}\n`,
  );
}
