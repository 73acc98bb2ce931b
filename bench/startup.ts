// Figure 6: start-up in a user's terms, each against kubectl in the same run, pair by pair
// (A, B, A, B …, one unrecorded warm-up pair):
// - `kubediff version` and `kubediff --help` against `kubectl version --client`: wall time from the
//   spawn to the exit, and peak RSS (GNU time);
// - `kubediff watch -n <small namespace>`: from the spawn to its "watching N resource types" line,
//   against `kubectl get configmaps -n <that namespace>` to its exit;
// - `kubediff watch --initial -r configmaps -n <namespace>` with 3,000 existing ConfigMaps: from the
//   spawn to the ADDED line of the last of them, against `kubectl get configmaps -o json
//   --chunk-size=500` of the same objects to its exit.
// kubectl runs as a user who has used it before has it: its discovery cache (a folder of its own
// for this run, filled by the warm-up pair) is warm. kubediff keeps no such cache.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type ClusterInfo, resolveBinaries } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { configMap, inParallel } from './lib/objects.ts';
import { memory, startChild, timedRun } from './lib/processes.ts';
import { pairedSamples, pairedSpread, type Spread } from './lib/stats.ts';
import { populate } from './sync.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
const SMALL_NAMESPACE_OBJECTS = 5;

interface Sample {
  ms: number;
  peakRss: number;
}

export interface StartupComparison {
  /** The command measured, as a user types it. */
  command: string;
  baselineCommand: string;
  kubediff: { ms: Spread; peakRss: Spread };
  baseline: { ms: Spread; peakRss: Spread };
  msRatio: Spread;
  peakRssRatio: Spread;
}

export interface StartupFigures {
  pairs: number;
  kubectlVersion: string;
  version: StartupComparison;
  help: StartupComparison;
  ready: StartupComparison & { resourceTypes: number; namespaceObjects: number };
  initial: StartupComparison & { objects: number };
}

function compare(
  command: string,
  baselineCommand: string,
  samples: { a: Sample[]; b: Sample[] },
): StartupComparison {
  const ms = pairedSpread(samples, (s) => s.ms);
  const peakRss = pairedSpread(samples, (s) => s.peakRss);
  return {
    command,
    baselineCommand,
    kubediff: { ms: ms.a, peakRss: peakRss.a },
    baseline: { ms: ms.b, peakRss: peakRss.b },
    msRatio: ms.ratio,
    peakRssRatio: peakRss.ratio,
  };
}

export async function measureStartup(
  info: ClusterInfo,
  admin: KubeAdmin,
  options: { pairs: number; initialObjects: number; log: (message: string) => void },
): Promise<StartupFigures> {
  const kubectl = resolveBinaries().kubectl.path;
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-bench-kubectl-cache-'));
  const kubectlArgs = (...args: string[]) => [
    '--kubeconfig',
    info.kubeconfigPath,
    '--cache-dir',
    cacheDir,
    ...args,
  ];
  const kubediffRun =
    (...args: string[]) =>
    () =>
      timedRun(process.execPath, [KUBEDIFF, ...args]);
  const kubectlRun =
    (...args: string[]) =>
    () =>
      timedRun(kubectl, kubectlArgs(...args));
  const small = await admin.createNamespace('bench-startup');
  const large = await admin.createNamespace('bench-initial');
  try {
    const kubectlVersion = (
      JSON.parse((await timedRun(kubectl, ['version', '--client', '-o', 'json'])).stdout) as {
        clientVersion: { gitVersion: string };
      }
    ).clientVersion.gitVersion;

    options.log('6. start-up: kubediff version, kubediff --help');
    const version = compare(
      'kubediff version',
      'kubectl version --client',
      await pairedSamples(options.pairs, 1, kubediffRun('version'), kubectlRun('version', '--client')),
    );
    const help = compare(
      'kubediff --help',
      'kubectl version --client',
      await pairedSamples(options.pairs, 1, kubediffRun('--help'), kubectlRun('version', '--client')),
    );

    options.log(
      `6. start-up: kubediff watch -n <a namespace of ${SMALL_NAMESPACE_OBJECTS} ConfigMaps> until ready`,
    );
    const names = Array.from({ length: SMALL_NAMESPACE_OBJECTS }, (_, i) => `small-${i}`);
    await inParallel(names, 4, (name, i) =>
      admin.create(`/api/v1/namespaces/${small}/configmaps`, configMap(name, 4, 400, i)),
    );
    let resourceTypes = 0;
    const ready = compare(
      `kubediff watch -n <namespace>`,
      `kubectl get configmaps -n <namespace>`,
      await pairedSamples(
        options.pairs,
        1,
        async (): Promise<Sample> => {
          const { resourceTypes: types, ...sample } = await untilReady(info, small);
          resourceTypes = types;
          return sample;
        },
        kubectlRun('get', 'configmaps', '-n', small),
      ),
    );

    options.log(`6. start-up: creating ${options.initialObjects} ConfigMaps for kubediff watch --initial`);
    await populate(admin, large, options.initialObjects, options.log);
    // The namespace's own ConfigMap (kube-root-ca.crt) comes with it: count what is there.
    const objects = (await admin.list(`/api/v1/namespaces/${large}/configmaps`)).items.length;
    options.log(`6. start-up: kubediff watch --initial of ${objects} ConfigMaps`);
    const initial = compare(
      'kubediff watch --initial -r configmaps -n <namespace> -o json',
      'kubectl get configmaps -n <namespace> -o json --chunk-size=500',
      await pairedSamples(
        options.pairs,
        1,
        () => untilAllAdded(info, large, objects),
        async () => {
          const run = await kubectlRun('get', 'configmaps', '-n', large, '-o', 'json', '--chunk-size=500')();
          const items = (JSON.parse(run.stdout) as { items: unknown[] }).items.length;
          if (items !== objects)
            throw new Error(`kubectl get returned ${items} ConfigMaps, expected ${objects}`);
          return run;
        },
      ),
    );
    return {
      pairs: options.pairs,
      kubectlVersion,
      version,
      help,
      ready: { ...ready, resourceTypes, namespaceObjects: SMALL_NAMESPACE_OBJECTS },
      initial: { ...initial, objects },
    };
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
    await admin.deleteNamespace(small);
    await admin.deleteNamespace(large);
  }
}

/** `kubediff watch -n <ns>` from the spawn to its "watching N resource types" line. */
async function untilReady(info: ClusterInfo, ns: string): Promise<Sample & { resourceTypes: number }> {
  const started = performance.now();
  const child = startChild(process.execPath, [
    KUBEDIFF,
    'watch',
    '--kubeconfig',
    info.kubeconfigPath,
    '-n',
    ns,
    '-o',
    'json',
  ]);
  try {
    await child.waitForStderr(/watching \d+ resource type/, 60_000);
    const ms = performance.now() - started;
    const resourceTypes = Number(/watching (\d+) resource type/.exec(child.stderr())![1]);
    return { ms, peakRss: memory(child.pid).peakRss, resourceTypes };
  } finally {
    await child.stop();
  }
}

/** `kubediff watch --initial` from the spawn to the ADDED line of the last of `objects`. */
async function untilAllAdded(info: ClusterInfo, ns: string, objects: number): Promise<Sample> {
  const started = performance.now();
  const added = new Set<string>();
  let resolveAll: (at: number) => void;
  const all = new Promise<number>((resolve) => (resolveAll = resolve));
  const child = startChild(
    process.execPath,
    [
      KUBEDIFF,
      'watch',
      '--initial',
      '--kubeconfig',
      info.kubeconfigPath,
      '-r',
      'configmaps',
      '-n',
      ns,
      '-o',
      'json',
    ],
    {
      onLine: (line, at) => {
        const event = JSON.parse(line) as { type: string; object: { name: string } };
        if (event.type !== 'ADDED') return;
        added.add(event.object.name);
        if (added.size === objects) resolveAll(at);
      },
    },
  );
  try {
    const exited = new Promise<never>((_, reject) =>
      child.process.once('exit', () =>
        reject(
          new Error(
            `kubediff watch --initial exited after ${added.size} of ${objects} ADDED: ${child.stderr()}`,
          ),
        ),
      ),
    );
    exited.catch(() => undefined); // it exits when stopped below, after the figure is taken
    const at = await Promise.race([all, exited]);
    return { ms: at - started, peakRss: memory(child.pid).peakRss };
  } finally {
    await child.stop();
  }
}
