// Figure 6: connections to the API server. The real CLI watches every resource type of a cluster
// that serves 64 of them (the API server's own, plus CRDs made for the purpose), once over HTTP/2
// (the default: one connection carries everything) and once over HTTP/1.1 (KUBEDIFF_HTTP_VERSION=1.1:
// one connection per watch), pair by pair. Per run: the TCP connections the process holds (from
// /proc, at their peak during start-up and once settled), the time from starting the process to its
// "watching N resource types" line, the CPU seconds until then and over a settled window with a
// trickle of changes, and the resident memory at the end of that window.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { establishedConnections } from '../test/helpers/sockets.ts';
import { cpuSeconds, memory, startChild } from './lib/processes.ts';
import { round, type Spread, spread } from './lib/stats.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const TARGET_TYPES = 64;
const SAMPLE_MS = 20;

interface Run {
  startupMs: number;
  peakConnections: number;
  settledConnections: number;
  startupCpuSeconds: number;
  windowCpuSeconds: number;
  rssBytes: number;
}

export interface ProtocolFigures {
  startupMs: Spread;
  peakConnections: Spread;
  settledConnections: Spread;
  startupCpuSeconds: Spread;
  windowCpuSeconds: Spread;
  rssBytes: Spread;
}

export interface ConnectionFigures {
  date: string;
  /** Resource types watched, and the CRDs created to reach that many. */
  types: number;
  crds: number;
  pairs: number;
  windowSeconds: number;
  writesPerSecond: number;
  http2: ProtocolFigures;
  http1: ProtocolFigures;
  /** HTTP/2 over HTTP/1.1, pair by pair. */
  ratios: { startupMs: Spread; startupCpuSeconds: Spread; windowCpuSeconds: Spread; rssBytes: Spread };
}

export async function measureConnections(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: { pairs: number; windowSeconds: number; writesPerSecond: number; log: (m: string) => void },
): Promise<ConnectionFigures> {
  const apiPort = Number(new URL(info.server).port);
  const served = await watchedTypes(info);
  const crds = Math.max(0, TARGET_TYPES - served);
  const crdNames: string[] = [];
  for (let index = 0; index < crds; index++) {
    const crd = await admin.createCRD('bench.kubediff.dev', `Thing${index}`, `things${index}`);
    crdNames.push(crd.metadata.name);
  }
  const ns = await admin.createNamespace('bench-connections');
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  for (let index = 0; index < 10; index++) {
    await admin.create(collection, { metadata: { name: `cm-${index}` }, data: { k: '0' } });
  }
  const types = await watchedTypes(info);
  options.log(`7. connections: ${types} resource types (${crds} CRDs made for it)`);

  const once = async (protocol: '2' | '1.1'): Promise<Run> => {
    const started = performance.now();
    // --debug: each connection opened and given up is a debug line, quoted when HTTP/2 needed more than one.
    const child = startChild(
      process.execPath,
      [KUBEDIFF, 'watch', '--kubeconfig', info.kubeconfigPath, '-o', 'json', '--debug'],
      {
        env: { ...process.env, KUBEDIFF_HTTP_VERSION: protocol, KUBEDIFF_LOG_FORMAT: 'text' },
        onLine: () => {},
      },
    );
    let peak = 0;
    let watching = false;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, establishedConnections(child.pid, apiPort));
      } catch {
        // The process is gone: the wait below says why.
      }
    }, SAMPLE_MS);
    try {
      await child.waitForStderr(new RegExp(`watching ${types} resource types`), 120_000);
      watching = true;
      const startupMs = performance.now() - started;
      const startupCpuSeconds = cpuSeconds(child.pid);
      // A trickle of changes over the settled window, the same for both protocols.
      const windowStart = cpuSeconds(child.pid);
      const writes = options.windowSeconds * options.writesPerSecond;
      for (let index = 0; index < writes; index++) {
        await admin.patch(`${collection}/cm-${index % 10}`, { data: { k: String(index + 1) } });
        await sleep(1000 / options.writesPerSecond);
      }
      const windowCpuSeconds = cpuSeconds(child.pid) - windowStart;
      if (protocol === '2' && peak > 1) {
        const lines = child
          .stderr()
          .split('\n')
          .filter((line) => /HTTP\/2 connection|went silent|broke|refused/.test(line));
        options.log(`7. connections: HTTP/2 held ${peak} at once: ${lines.join(' | ')}`);
      }
      return {
        startupMs,
        peakConnections: peak,
        settledConnections: establishedConnections(child.pid, apiPort),
        startupCpuSeconds,
        windowCpuSeconds,
        rssBytes: memory(child.pid).rss,
      };
    } finally {
      clearInterval(sampler);
      await child.stop();
      if (!watching) options.log(child.stderr().slice(-2000));
    }
  };

  const runs = { http2: [] as Run[], http1: [] as Run[] };
  // One unrecorded pair first (warm caches, on both sides), then alternate which protocol goes first.
  for (let index = 0; index < options.pairs + 1; index++) {
    const order: ('2' | '1.1')[] = index % 2 === 0 ? ['2', '1.1'] : ['1.1', '2'];
    for (const protocol of order) {
      const run = await once(protocol);
      options.log(
        `7. connections: HTTP/${protocol}: ${run.peakConnections} connections at the peak, ${run.settledConnections} settled, watching after ${Math.round(run.startupMs)} ms`,
      );
      if (index > 0) (protocol === '2' ? runs.http2 : runs.http1).push(run);
    }
  }
  await admin.deleteNamespace(ns);
  for (const name of crdNames) await admin.deleteCRD(name);

  const figures = (list: Run[]): ProtocolFigures => ({
    startupMs: spread(list.map((run) => run.startupMs)),
    peakConnections: spread(list.map((run) => run.peakConnections)),
    settledConnections: spread(list.map((run) => run.settledConnections)),
    startupCpuSeconds: spread(list.map((run) => run.startupCpuSeconds)),
    windowCpuSeconds: spread(list.map((run) => run.windowCpuSeconds)),
    rssBytes: spread(list.map((run) => run.rssBytes)),
  });
  const ratio = (key: keyof Run) =>
    spread(runs.http2.map((run, index) => round(run[key] / (runs.http1[index]?.[key] ?? Number.NaN))));
  return {
    date: new Date().toISOString(),
    types,
    crds,
    pairs: options.pairs,
    windowSeconds: options.windowSeconds,
    writesPerSecond: options.writesPerSecond,
    http2: figures(runs.http2),
    http1: figures(runs.http1),
    ratios: {
      startupMs: ratio('startupMs'),
      startupCpuSeconds: ratio('startupCpuSeconds'),
      windowCpuSeconds: ratio('windowCpuSeconds'),
      rssBytes: ratio('rssBytes'),
    },
  };
}

/** How many types `kubediff watch` watches by default on this cluster (from `kubediff resources`). */
async function watchedTypes(info: ClusterInfo): Promise<number> {
  let count = 0;
  const child = startChild(
    process.execPath,
    [KUBEDIFF, 'resources', '-o', 'json', '--kubeconfig', info.kubeconfigPath],
    {
      onLine: (line) => {
        if ((JSON.parse(line) as { watched: boolean }).watched) count++;
      },
    },
  );
  await new Promise<void>((resolve) => child.process.once('close', () => resolve()));
  return count;
}
