// Figure 5: kubediff and the Go original side by side on one stream. Both processes watch the
// ConfigMaps of one namespace (`objects` of them) of the test API server at the same time, while
// `writes` merge patches arrive at `writesPerSecond`, spread over the objects in turn. Each round
// starts both processes afresh; CPU seconds (from process start, and during the stream alone) and
// peak RSS come from /proc once both have reported every write, and a write counts as seen by a
// process when it reports an update carrying that write's resourceVersion.
//
// Readiness: kubediff prints "watching N resource types"; the Go original prints nothing when it
// has synced, so one object is patched until both have reported the same patch. Those patches are
// not part of the stream.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import type { KubeAdmin } from '../test/helpers/kube-admin.ts';
import { type GoOriginalBuild, startGoOriginal } from './go-original.ts';
import { cpuSeconds, memory, startChild } from './lib/processes.ts';
import { type Spread, spread } from './lib/stats.ts';
import { populate } from './sync.ts';

const KUBEDIFF = path.resolve(import.meta.dirname, '../bin/kubediff.js');
/** How long after the last write both processes have to report everything. */
const DRAIN_MS = 60_000;

export interface ProcessFigures {
  /** CPU seconds from process start to the end of the stream. */
  cpuSeconds: number;
  /** CPU seconds from the first write of the stream to its end. */
  streamCpuSeconds: number;
  peakRss: number;
  /** Writes of the stream it reported. */
  updatesSeen: number;
  /** Reports that are neither a write of the stream nor a readiness patch (should be none). */
  otherReports: number;
}

export interface SideBySideRound {
  kubediff: ProcessFigures;
  goOriginal: ProcessFigures;
  writesFailed: number;
}

export interface SideBySideFigures {
  objects: number;
  writes: number;
  writesPerSecond: number;
  rounds: SideBySideRound[];
  kubediff: { cpuSeconds: Spread; streamCpuSeconds: Spread; peakRss: Spread };
  goOriginal: { cpuSeconds: Spread; streamCpuSeconds: Spread; peakRss: Spread };
  /** kubediff / Go original, round by round. */
  cpuRatio: Spread;
  streamCpuRatio: Spread;
  peakRssRatio: Spread;
  /** Both reported every write in every round. */
  allSeen: boolean;
}

/** Creates the namespace and its objects, runs the rounds, deletes the namespace. */
export async function measureSideBySide(
  info: ClusterInfo,
  admin: KubeAdmin,
  build: GoOriginalBuild,
  options: {
    objects: number;
    writes: number;
    writesPerSecond: number;
    rounds: number;
    log: (message: string) => void;
    /** Node options for kubediff's process (for measuring flags by hand; the bench runs it as users do). */
    kubediffNodeArgs?: string[];
    /** Another kubediff's launcher (for measuring a change against a checkout of main by hand). */
    kubediffScript?: string;
  },
): Promise<SideBySideFigures> {
  const ns = await admin.createNamespace('bench-side');
  try {
    options.log(`5. side by side: creating ${options.objects} ConfigMaps`);
    await populate(admin, ns, options.objects, options.log);
    const rounds: SideBySideRound[] = [];
    for (let round = 0; round < options.rounds; round++) {
      options.log(
        `5. side by side, ${options.objects} objects, round ${round + 1} of ${options.rounds}: ` +
          `${options.writes} writes at ${options.writesPerSecond}/s`,
      );
      rounds.push(await runRound(info, admin, build, ns, round, options));
    }
    const side = (pick: (r: SideBySideRound) => ProcessFigures) => ({
      cpuSeconds: spread(rounds.map((r) => pick(r).cpuSeconds)),
      streamCpuSeconds: spread(rounds.map((r) => pick(r).streamCpuSeconds)),
      peakRss: spread(rounds.map((r) => pick(r).peakRss)),
    });
    const ratio = (pick: (p: ProcessFigures) => number) =>
      spread(rounds.map((r) => pick(r.kubediff) / pick(r.goOriginal)));
    return {
      objects: options.objects,
      writes: options.writes,
      writesPerSecond: options.writesPerSecond,
      rounds,
      kubediff: side((r) => r.kubediff),
      goOriginal: side((r) => r.goOriginal),
      cpuRatio: ratio((p) => p.cpuSeconds),
      streamCpuRatio: ratio((p) => p.streamCpuSeconds),
      peakRssRatio: ratio((p) => p.peakRss),
      allSeen: rounds.every(
        (r) =>
          r.writesFailed === 0 &&
          r.kubediff.updatesSeen === options.writes &&
          r.goOriginal.updatesSeen === options.writes,
      ),
    };
  } finally {
    await admin.deleteNamespace(ns);
  }
}

/** Resource versions reported by one process, split into the stream's and the rest. */
class Reports {
  readonly seen = new Set<string>();
  other = 0;
  private readonly stream: Set<string>;
  private readonly readinessWrites: Set<string>;
  constructor(stream: Set<string>, readinessWrites: Set<string>) {
    this.stream = stream;
    this.readinessWrites = readinessWrites;
  }
  /** A report may arrive before the write's response: unknown versions are sorted out at the end. */
  add(resourceVersion: string | undefined): void {
    if (resourceVersion === undefined) this.other++;
    else this.seen.add(resourceVersion);
  }
  has(resourceVersion: string): boolean {
    return this.seen.has(resourceVersion);
  }
  streamSeen(): number {
    let count = 0;
    for (const rv of this.stream) if (this.seen.has(rv)) count++;
    return count;
  }
  otherReports(): number {
    let count = this.other;
    for (const rv of this.seen) if (!this.stream.has(rv) && !this.readinessWrites.has(rv)) count++;
    return count;
  }
}

async function runRound(
  info: ClusterInfo,
  admin: KubeAdmin,
  build: GoOriginalBuild,
  ns: string,
  round: number,
  options: {
    objects: number;
    writes: number;
    writesPerSecond: number;
    kubediffNodeArgs?: string[];
    kubediffScript?: string;
  },
): Promise<SideBySideRound> {
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  const stream = new Set<string>();
  const readinessWrites = new Set<string>();
  const kubediffReports = new Reports(stream, readinessWrites);
  const goReports = new Reports(stream, readinessWrites);
  let kubediffOther = 0;
  const startKubediff = () =>
    startChild(
      process.execPath,
      [
        ...(options.kubediffNodeArgs ?? []),
        options.kubediffScript ?? KUBEDIFF,
        'watch',
        '--kubeconfig',
        info.kubeconfigPath,
        '-o',
        'json',
        '-r',
        'configmaps',
        '-n',
        ns,
      ],
      {
        onLine: (line) => {
          const event = JSON.parse(line) as { type: string; id: string };
          if (event.type !== 'UPDATED') kubediffOther++;
          // The id is uid:resourceVersion.
          else kubediffReports.add(event.id.slice(event.id.lastIndexOf(':') + 1));
        },
      },
    );
  const startGo = () =>
    startGoOriginal(build, {
      kubeconfig: info.kubeconfigPath,
      namespace: ns,
      onUpdate: (rv) => goReports.add(rv),
    });
  // Which one starts first alternates from round to round.
  let kubediff: ReturnType<typeof startKubediff> | undefined;
  let go: Awaited<ReturnType<typeof startGo>> | undefined;
  let writesFailed = 0;
  try {
    if (round % 2 === 0) {
      kubediff = startKubediff();
      go = await startGo();
    } else {
      go = await startGo();
      kubediff = startKubediff();
    }
    await kubediff.waitForStderr(/watching \d+ resource type/, 120_000);
    await waitUntilBothReport(admin, `${collection}/cfg-0`, round, readinessWrites, [
      kubediffReports,
      goReports,
    ]);

    const kubediffPid = kubediff.pid;
    const goPid = go.child.pid;
    const cpuAtStart = { kubediff: cpuSeconds(kubediffPid), go: cpuSeconds(goPid) };
    const interval = 1000 / options.writesPerSecond;
    const started = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let seq = 0; seq < options.writes; seq++) {
      const wait = started + seq * interval - performance.now();
      if (wait > 0) await sleep(wait);
      const value = `round-${round}-write-${seq}`;
      inFlight.push(
        admin
          .patch(`${collection}/cfg-${seq % options.objects}`, {
            data: { setting_0: value },
            metadata: { annotations: { 'bench.kubediff.io/write': value } },
          })
          .then(
            (updated) => void stream.add(updated.metadata.resourceVersion),
            () => void writesFailed++,
          ),
      );
    }
    await Promise.all(inFlight);
    const deadline = performance.now() + DRAIN_MS;
    while (
      (kubediffReports.streamSeen() < stream.size || goReports.streamSeen() < stream.size) &&
      performance.now() < deadline
    )
      await sleep(100);
    // Both read at the same moment, while both processes are alive.
    const figures = (pid: number, cpuStart: number, reports: Reports, extra: number): ProcessFigures => {
      const cpu = cpuSeconds(pid);
      return {
        cpuSeconds: cpu,
        // /proc counts in clock ticks (10 ms): keep the difference to that precision.
        streamCpuSeconds: Math.round((cpu - cpuStart) * 100) / 100,
        peakRss: memory(pid).peakRss,
        updatesSeen: reports.streamSeen(),
        otherReports: reports.otherReports() + extra,
      };
    };
    return {
      kubediff: figures(kubediffPid, cpuAtStart.kubediff, kubediffReports, kubediffOther),
      goOriginal: figures(goPid, cpuAtStart.go, goReports, go.otherBlocks),
      writesFailed,
    };
  } finally {
    await kubediff?.stop();
    await go?.stop();
  }
}

/**
 * Patches one object until a single patch has been reported by every process: from then on, each
 * is watching, past its initial LIST (a patch made before a process's LIST only shows in that LIST).
 */
async function waitUntilBothReport(
  admin: KubeAdmin,
  objectPath: string,
  round: number,
  readinessWrites: Set<string>,
  reporters: Reports[],
): Promise<void> {
  const deadline = performance.now() + 120_000;
  for (let attempt = 0; performance.now() < deadline; attempt++) {
    const updated = await admin.patch(objectPath, {
      metadata: { annotations: { 'bench.kubediff.io/ready': `round-${round}-attempt-${attempt}` } },
    });
    const rv = updated.metadata.resourceVersion;
    readinessWrites.add(rv);
    const waitUntil = performance.now() + 2_000;
    while (performance.now() < waitUntil) {
      if (reporters.every((r) => r.has(rv))) return;
      await sleep(50);
    }
  }
  throw new Error('side by side: the processes did not both report a readiness patch within 120 s');
}
