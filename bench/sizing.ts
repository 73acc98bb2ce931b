// Figure 17: memory by cluster size, for docs/deploy.md's sizing table. The real CLI watches every
// resource type (`kubediff watch -o json`, as the chart runs it, with the chart's heap:
// NODE_OPTIONS=--max-old-space-size=384) of a cluster of a given size: the API server's own objects, then
// 1,000, 10,000 and 30,000 ConfigMaps (about 1.3 KiB of JSON each, as figure 2's), then 50 more kinds
// (CRDs with 20 objects each). Each size: started anew, its "watching" line awaited, then a settled window
// with a trickle of writes; the resident memory (from /proc) and V8's heap (its /metrics) are sampled
// every 2 s over the second half of the window, medians quoted.
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { scrapeMetrics } from '../test/helpers/metrics.ts';
import { configMap, inParallel } from './lib/objects.ts';
import { memory, startChild } from './lib/processes.ts';
import { median } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const SAMPLE_MS = 2_000;
const CHART_HEAP = '--max-old-space-size=384';

export interface SizeFigures {
  /** What kubediff watches: objects it listed (its stores) and resource types. */
  objects: number;
  types: number;
  configMaps: number;
  crds: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** RSS beside V8's heap: Node's own (code, C heap, buffers). */
  outsideHeapBytes: number;
  startupMs: number;
}

export interface SizingFigures {
  date: string;
  windowSeconds: number;
  sizes: SizeFigures[];
}

export async function measureSizing(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: { configMaps: number[]; crds: number; windowSeconds: number; log: (m: string) => void },
): Promise<SizingFigures> {
  const ns = await admin.createNamespace('bench-sizing');
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  // What the settled window's trickle of writes changes.
  for (let index = 0; index < 10; index++)
    await admin.create(collection, { metadata: { name: `tick-${index}` }, data: { tick: '0' } });
  const sizes: SizeFigures[] = [];
  let made = 0;
  const crdNames: string[] = [];
  const steps = [
    ...options.configMaps.map((count) => ({ configMaps: count, crds: 0 })),
    { configMaps: options.configMaps.at(-1) ?? 0, crds: options.crds },
  ];
  for (const step of steps) {
    const wanted = Array.from({ length: step.configMaps - made }, (_, index) => made + index);
    await inParallel(wanted, 16, (index) =>
      admin.create(collection, configMap(`cm-${index}`, 5, 1024, index)),
    );
    made = step.configMaps;
    while (crdNames.length < step.crds) {
      const index = crdNames.length;
      const crd = await admin.createCRD('sizing.kubediff.dev', `Kind${index}`, `kinds${index}`);
      crdNames.push(crd.metadata.name);
      const items = `/apis/sizing.kubediff.dev/v1/namespaces/${ns}/kinds${index}`;
      await inParallel(
        Array.from({ length: 20 }, (_, item) => item),
        4,
        (item) =>
          createWhenServed(admin, items, {
            apiVersion: 'sizing.kubediff.dev/v1',
            kind: `Kind${index}`,
            metadata: { name: `item-${item}` },
            spec: { size: item, note: 'x'.repeat(200) },
          }),
      );
    }
    const size = await measureOnce(info, admin, collection, step, options);
    options.log(
      `17. sizing: ${size.objects} objects, ${size.types} types: RSS ${mib(size.rssBytes)} MiB, heap ${mib(size.heapUsedBytes)} MiB`,
    );
    sizes.push(size);
  }
  await admin.deleteNamespace(ns);
  for (const name of crdNames) await admin.deleteCRD(name);
  return { date: new Date().toISOString(), windowSeconds: options.windowSeconds, sizes };
}

async function measureOnce(
  info: ClusterInfo,
  admin: KubeAdmin,
  collection: string,
  step: { configMaps: number; crds: number },
  options: { windowSeconds: number },
): Promise<SizeFigures> {
  const port = await freePort();
  const started = performance.now();
  const child = startChild(
    process.execPath,
    [KUBEDIFF, 'watch', '--kubeconfig', info.kubeconfigPath, '-o', 'json', '--listen', `127.0.0.1:${port}`],
    { env: { ...process.env, NODE_OPTIONS: CHART_HEAP, KUBEDIFF_LOG_FORMAT: 'text' }, onLine: () => {} },
  );
  try {
    await child.waitForStderr(/watching \d+ resource types/, 300_000);
    const startupMs = performance.now() - started;
    const types = Number(/watching (\d+) resource types/.exec(child.stderr())?.[1]);
    const samples: { rss: number; heap: number; objects: number }[] = [];
    const end = Date.now() + options.windowSeconds * 1000;
    for (let tick = 0; Date.now() < end; tick++) {
      await admin.patch(`${collection}/tick-${tick % 10}`, { data: { tick: String(tick) } });
      await sleep(SAMPLE_MS);
      if (Date.now() < end - (options.windowSeconds * 1000) / 2) continue;
      const metrics = await scrapeMetrics(`http://127.0.0.1:${port}`);
      const objects = [...metrics]
        .filter(([key]) => key.startsWith('kubediff_objects{'))
        .reduce((sum, [, value]) => sum + value, 0);
      samples.push({
        rss: memory(child.pid).rss,
        heap: metrics.get('nodejs_heap_size_used_bytes') ?? Number.NaN,
        objects,
      });
    }
    const rssBytes = median(samples.map((sample) => sample.rss));
    const heapUsedBytes = median(samples.map((sample) => sample.heap));
    return {
      objects: median(samples.map((sample) => sample.objects)),
      types,
      configMaps: step.configMaps,
      crds: step.crds,
      rssBytes,
      heapUsedBytes,
      outsideHeapBytes: rssBytes - heapUsedBytes,
      startupMs,
    };
  } finally {
    await child.stop();
  }
}

/** A new CRD's collection answers 404 for a moment after it is established. */
async function createWhenServed(admin: KubeAdmin, collection: string, object: Record<string, unknown>) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await admin.create(collection, object);
    } catch (error) {
      if (attempt > 50) throw error;
      await sleep(200);
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
