// Figure 4: a churn soak. The real CLI watches ConfigMaps while they are created, updated and
// deleted at a steady rate for a set time; its resident memory is sampled from /proc, and every
// write the API server acknowledged must come out as exactly one event (ADDED for a create, with
// the create's uid:resourceVersion as id; UPDATED for an update, likewise; DELETED for a delete).
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin, KubeObject } from '../test/helpers/kube-admin.ts';
import { seededRandom } from '../test/helpers/random-json.ts';
import { configMap } from './lib/objects.ts';
import { memory, startChild } from './lib/processes.ts';
import { median, round } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const SAMPLE_MS = 2_000;
const LIVE_TARGET = 300;

export interface SoakFigures {
  durationSeconds: number;
  writesPerSecond: number;
  writes: { creates: number; updates: number; deletes: number; failed: number };
  events: { added: number; updated: number; deleted: number; other: number; duplicates: number };
  /** Acknowledged writes with no matching event. */
  lost: number;
  warmupSeconds: number;
  /** Median RSS of the first tenth after warm-up, and of the last tenth (bytes). */
  rssAfterWarmup: number;
  rssAtEnd: number;
  rssGrowth: number;
  rssSamples: { t: number; rss: number }[];
}

export async function runSoak(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: { seconds: number; writesPerSecond: number; log: (m: string) => void },
): Promise<SoakFigures> {
  const ns = await admin.createNamespace('bench-soak');
  const collection = `/api/v1/namespaces/${ns}/configmaps`;

  const events = new Map<string, string>(); // id → type
  const seen = { added: new Set<string>(), updated: new Set<string>(), deletedUids: new Set<string>() };
  const counts = { added: 0, updated: 0, deleted: 0, other: 0, duplicates: 0 };
  const kubediff = startChild(
    process.execPath,
    [KUBEDIFF, 'watch', '--kubeconfig', info.kubeconfigPath, '-o', 'json', '-r', 'configmaps', '-n', ns],
    {
      onLine: (line) => {
        const event = JSON.parse(line) as { id: string; type: string; object: { uid: string } };
        if (events.has(event.id)) counts.duplicates++;
        events.set(event.id, event.type);
        if (event.type === 'ADDED') {
          counts.added++;
          seen.added.add(event.id);
        } else if (event.type === 'UPDATED') {
          counts.updated++;
          seen.updated.add(event.id);
        } else if (event.type === 'DELETED') {
          counts.deleted++;
          seen.deletedUids.add(event.object.uid);
        } else counts.other++;
      },
    },
  );
  const expected = { created: [] as string[], updated: [] as string[], deletedUids: [] as string[] };
  const writes = { creates: 0, updates: 0, deletes: 0, failed: 0 };
  const samples: { t: number; rss: number }[] = [];
  try {
    await kubediff.waitForStderr(/watching \d+ resource type/, 60_000);
    options.log(`soak: ${options.seconds} s of churn at ${options.writesPerSecond} writes/s`);
    const live = new Map<string, string>(); // name → uid, objects whose create completed
    const busy = new Set<string>();
    let serial = 0;
    const started = performance.now();
    const sampler = setInterval(() => {
      samples.push({ t: (performance.now() - started) / 1000, rss: memory(kubediff.pid).rss });
    }, SAMPLE_MS);
    const interval = 1000 / options.writesPerSecond;
    const inFlight = new Set<Promise<void>>();
    const random = seededRandom(7);
    try {
      for (let tick = 0; ; tick++) {
        const due = started + tick * interval;
        if (due - started >= options.seconds * 1000) break;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const idle = [...live.keys()].filter((name) => !busy.has(name));
        const roll = random();
        const op =
          live.size < LIVE_TARGET * 0.8 || idle.length === 0
            ? 'create'
            : live.size > LIVE_TARGET * 1.2
              ? 'delete'
              : roll < 0.6
                ? 'update'
                : roll < 0.8
                  ? 'create'
                  : 'delete';
        const seq = serial++;
        const name = op === 'create' ? `churn-${seq}` : idle[Math.floor(random() * idle.length)]!;
        busy.add(name);
        const write = (async () => {
          try {
            if (op === 'create') {
              const created = await admin.create(collection, configMap(name, 6, 800, seq));
              live.set(name, created.metadata.uid);
              expected.created.push(`${created.metadata.uid}:${created.metadata.resourceVersion}`);
              writes.creates++;
            } else if (op === 'update') {
              const updated: KubeObject = await admin.patch(`${collection}/${name}`, {
                data: { setting_0: `value-${seq}` },
                metadata: { annotations: { 'bench/seq': String(seq) } },
              });
              expected.updated.push(`${updated.metadata.uid}:${updated.metadata.resourceVersion}`);
              writes.updates++;
            } else {
              const uid = live.get(name)!;
              live.delete(name);
              await admin.delete(`${collection}/${name}`);
              expected.deletedUids.push(uid);
              writes.deletes++;
            }
          } catch {
            writes.failed++;
          } finally {
            busy.delete(name);
          }
        })();
        inFlight.add(write);
        void write.then(() => inFlight.delete(write));
      }
      await Promise.all(inFlight);
    } finally {
      clearInterval(sampler);
    }
    // Every acknowledged write must come out; give the last ones a moment.
    const total = () => expected.created.length + expected.updated.length + expected.deletedUids.length;
    const deadline = performance.now() + 30_000;
    while (counts.added + counts.updated + counts.deleted < total() && performance.now() < deadline)
      await sleep(200);
    await sleep(1_000);
  } finally {
    await kubediff.stop();
    await admin.deleteNamespace(ns);
  }

  const lost =
    expected.created.filter((id) => !seen.added.has(id)).length +
    expected.updated.filter((id) => !seen.updated.has(id)).length +
    expected.deletedUids.filter((uid) => !seen.deletedUids.has(uid)).length;
  const warmupSeconds = Math.min(120, Math.max(10, options.seconds * 0.2));
  const afterWarmup = samples.filter((s) => s.t >= warmupSeconds);
  const window = Math.max(3, Math.round(afterWarmup.length / 10));
  const rssAfterWarmup = median(afterWarmup.slice(0, window).map((s) => s.rss));
  const rssAtEnd = median(afterWarmup.slice(-window).map((s) => s.rss));
  return {
    durationSeconds: options.seconds,
    writesPerSecond: options.writesPerSecond,
    writes,
    events: counts,
    lost,
    warmupSeconds,
    rssAfterWarmup,
    rssAtEnd,
    rssGrowth: rssAtEnd / rssAfterWarmup - 1,
    rssSamples: samples.map((s) => ({ t: round(s.t), rss: s.rss })),
  };
}
