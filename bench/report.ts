// Renders a bench result (bench/run.ts) as a console table and as BENCHMARKS.md.

//   node bench/report.ts    writes BENCHMARKS.md again from bench/results/latest.json
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AdmissionFigures } from './admission.ts';
import { admissionLoadRows, admissionRow, admissionSection } from './admission-report.ts';
import type { AuditFigures } from './audit.ts';
import type { ConnectionFigures, ProtocolFigures } from './connections.ts';
import type { FleetFigures } from './fleet.ts';
import { fleetRows, fleetSection } from './fleet-report.ts';
import type { GoOriginalBuild } from './go-original.ts';
import { historySection } from './history-report.ts';
import type { KafkaFigures } from './kafka.ts';
import type { LatencyFigures } from './latency.ts';
import { markdownTable } from './lib/markdown.ts';
import { round, type Spread } from './lib/stats.ts';
import type { LogSinkFigures } from './log-sinks.ts';
import type { OutcomeFigures } from './outcomes.ts';
import { outcomeRows, outcomeSection } from './outcomes-report.ts';
import type { StreamFigures } from './pipeline.ts';
import type { SideBySideFigures } from './side-by-side.ts';
import type { SizingFigures } from './sizing.ts';
import type { SoakFigures } from './soak.ts';
import type { StartupComparison, StartupFigures } from './startup.ts';
import { stateSection } from './state-report.ts';
import type { StoryFigures } from './stories.ts';
import type { HeapFigures, SyncTimeFigures } from './sync.ts';
import type { LargeSyncFigures } from './sync-large.ts';
import { largeSyncRows, largeSyncSection } from './sync-large-report.ts';
import type { UiObjectFigures } from './ui-object.ts';
import { uiSection } from './ui-report.ts';
import { searchSection } from './ui-search-report.ts';
import type { UsedByFigures } from './used-by.ts';

type Result = Record<string, unknown>;

/**
 * The figures bench/run.ts measures: by their name for --only, their number in BENCHMARKS.md and in
 * its progress lines, and their key in the result. (10 and 11, the UI and the state stores, have
 * benches of their own.)
 */
export const FIGURES = {
  pipeline: { number: 1, key: 'pipeline' },
  sync: { number: 2, key: 'sync' },
  latency: { number: 3, key: 'latency' },
  soak: { number: 4, key: 'soak' },
  'go-original': { number: 5, key: 'goOriginal' },
  startup: { number: 6, key: 'startup' },
  connections: { number: 7, key: 'connections' },
  audit: { number: 8, key: 'audit' },
  kafka: { number: 9, key: 'kafka' },
  stories: { number: 12, key: 'stories' },
  admission: { number: 13, key: 'admission' },
  'log-sinks': { number: 15, key: 'logSinks' },
  'ui-object': { number: 16, key: 'uiObject' },
  sizing: { number: 17, key: 'sizing' },
  'used-by': { number: 18, key: 'usedBy' },
  outcomes: { number: 19, key: 'outcomes' },
  'sync-large': { number: 22, key: 'syncLarge' },
  fleet: { number: 21, key: 'fleet' },
} as const;
export type FigureName = keyof typeof FIGURES;

interface Row {
  figure: string;
  kubediff: string;
  baseline: string;
  ratio: string;
  target: string;
  met: boolean | undefined;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const ms = (value: number) => `${round(value)} ms`;
const ratio = (value: number) => `${round(value).toFixed(2)}×`;
const spreadRatio = (s: Spread) =>
  `${ratio(s.median)} (${round(s.min).toFixed(2)}–${round(s.max).toFixed(2)})`;
const spreadOf = (s: Spread, format: (value: number) => string) =>
  `${format(s.median)} (${format(s.min)}–${format(s.max)})`;
const cpu = (seconds: number) => `${round(seconds).toFixed(2)} s`;
const count = (value: number) => value.toLocaleString('en-US');
const duration = (seconds: number) => (seconds >= 120 ? `${round(seconds / 60)} min` : `${seconds} s`);
const perSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')} events/s`;

/** Σlines / Σ(lines / rate): the rate of replaying every stream once, from each stream's median. */
function combinedRate(streams: StreamFigures[], pick: (s: StreamFigures) => number): number {
  const lines = streams.reduce((sum, s) => sum + s.lines, 0);
  return lines / streams.reduce((sum, s) => sum + s.lines / pick(s), 0);
}

export function rows(result: Result): Row[] {
  const out: Row[] = [];
  const pipeline = result.pipeline as { streams: StreamFigures[] } | undefined;
  if (pipeline) {
    for (const s of pipeline.streams) {
      out.push({
        figure: `1. pipeline throughput, ${s.stream}`,
        kubediff: perSecond(s.pipelineEventsPerSecond.median),
        baseline: perSecond(s.baselineEventsPerSecond.median),
        ratio: spreadRatio(s.ratio),
        target: '≥ 0.5×',
        met: s.ratio.median >= 0.5,
      });
      if (s.withoutManagersRatio) {
        out.push({
          figure: `1. … ${s.stream} without who-changed-it, vs with it`,
          kubediff: 'without',
          baseline: 'with',
          ratio: spreadRatio(s.withoutManagersRatio),
          target: 'measured',
          met: undefined,
        });
      }
    }
    const kd = combinedRate(pipeline.streams, (s) => s.pipelineEventsPerSecond.median);
    const base = combinedRate(pipeline.streams, (s) => s.baselineEventsPerSecond.median);
    out.push({
      figure: '1. pipeline throughput, all four streams',
      kubediff: perSecond(kd),
      baseline: perSecond(base),
      ratio: ratio(kd / base),
      target: '≥ 0.5×',
      met: kd / base >= 0.5,
    });
  }
  const sync = result.sync as { time: SyncTimeFigures; heap: HeapFigures } | undefined;
  if (sync) {
    out.push({
      figure: `2. time to synced, ${sync.time.objects.toLocaleString('en-US')} objects, by streaming list`,
      kubediff: ms(sync.time.kubediffMs.median),
      baseline: `${ms(sync.time.rawListMs.median)} (raw paged LIST)`,
      ratio: spreadRatio(sync.time.ratio),
      target: '≤ 1.5×',
      met: sync.time.ratio.median <= 1.5,
    });
    // Results recorded before streaming lists have no paged figure of their own.
    if (sync.time.paged) {
      out.push({
        figure: '2. … by paged LIST (KUBEDIFF_INITIAL_SYNC=list)',
        kubediff: ms(sync.time.paged.kubediffMs.median),
        baseline: `${ms(sync.time.paged.rawListMs.median)} (raw paged LIST)`,
        ratio: spreadRatio(sync.time.paged.ratio),
        target: '≤ 1.5×',
        met: sync.time.paged.ratio.median <= 1.5,
      });
    }
    out.push({
      figure: '2. retained heap per cached object',
      kubediff: `${Math.round(sync.heap.retainedBytesPerObject)} B`,
      baseline: `${Math.round(sync.heap.jsonBytesPerObject)} B (its JSON as sent)`,
      ratio: ratio(sync.heap.ratio),
      target: '≤ 2×',
      met: sync.heap.ratio <= 2,
    });
    if (sync.heap.retainedBytesPerObjectWithoutManagers !== undefined) {
      out.push({
        figure: '2. … of which who-changed-it (the managedFields signature)',
        kubediff: `${Math.round(sync.heap.retainedBytesPerObject)} B`,
        baseline: `${Math.round(sync.heap.retainedBytesPerObjectWithoutManagers)} B (without it)`,
        ratio: ratio(sync.heap.retainedBytesPerObject / sync.heap.retainedBytesPerObjectWithoutManagers),
        target: 'measured',
        met: undefined,
      });
    }
  }
  const latency = result.latency as LatencyFigures | undefined;
  if (latency) {
    out.push({
      figure: `3. write → event line, p50 (${latency.writesPerSecond} writes/s)`,
      kubediff: ms(latency.kubediff.p50Ms),
      baseline: `${ms(latency.rawWatch.p50Ms)} (raw watch)`,
      ratio: ratio(latency.p50Ratio),
      target: '—',
      met: undefined,
    });
    out.push({
      figure: `3. write → event line, p99 (${latency.writesPerSecond} writes/s)`,
      kubediff: ms(latency.kubediff.p99Ms),
      baseline: `${ms(latency.rawWatch.p99Ms)} (raw watch)`,
      ratio: ratio(latency.p99Ratio),
      target: '≤ 2×',
      met: latency.p99Ratio <= 2 && latency.kubediff.received === latency.writes,
    });
  }
  const soak = result.soak as SoakFigures | undefined;
  if (soak) {
    const acknowledged = soak.writes.creates + soak.writes.updates + soak.writes.deletes;
    out.push({
      figure: `4. soak ${duration(soak.durationSeconds)}: RSS growth after warm-up`,
      kubediff: `${mib(soak.rssAfterWarmup)} → ${mib(soak.rssAtEnd)}`,
      baseline: `after ${soak.warmupSeconds} s warm-up`,
      ratio: `${(soak.rssGrowth * 100).toFixed(1)} %`,
      target: '< 10 %',
      met: soak.rssGrowth < 0.1,
    });
    out.push({
      figure: '4. soak: events lost',
      kubediff: `${soak.events.added + soak.events.updated + soak.events.deleted} events`,
      baseline: `${acknowledged} acknowledged writes`,
      ratio: `${soak.lost} lost, ${soak.events.duplicates} duplicated`,
      target: '0 lost',
      met: soak.lost === 0 && soak.events.duplicates === 0,
    });
  }
  const go = result.goOriginal as GoOriginalFigures | undefined;
  for (const stream of go?.streams ?? []) {
    const at = `5. vs the Go original, ${count(stream.objects)} objects`;
    const rssTarget = rssTargetFor(stream.objects);
    out.push({
      figure: `${at}: CPU seconds`,
      kubediff: cpu(stream.kubediff.cpuSeconds.median),
      baseline: `${cpu(stream.goOriginal.cpuSeconds.median)} (Go original)`,
      ratio: spreadRatio(stream.cpuRatio),
      target: '≤ 1×',
      met: stream.cpuRatio.median <= 1,
    });
    out.push({
      figure: `${at}: peak RSS`,
      kubediff: mib(stream.kubediff.peakRss.median),
      baseline: `${mib(stream.goOriginal.peakRss.median)} (Go original)`,
      ratio: spreadRatio(stream.peakRssRatio),
      target: `≤ ${rssTarget}×`,
      met: stream.peakRssRatio.median <= rssTarget,
    });
    out.push({
      figure: `${at}: updates seen`,
      kubediff: seenOf(stream, (r) => r.kubediff.updatesSeen),
      baseline: `${seenOf(stream, (r) => r.goOriginal.updatesSeen)} (Go original)`,
      ratio: '—',
      target: `all ${count(stream.writes)}, both`,
      met: stream.allSeen,
    });
  }
  const startup = result.startup as StartupFigures | undefined;
  if (startup) {
    const startupRow = (figure: string, c: StartupComparison, target: string, met: boolean): Row => ({
      figure,
      kubediff: `${ms(c.kubediff.ms.median)}, ${mib(c.kubediff.peakRss.median)}`,
      baseline: `${ms(c.baseline.ms.median)}, ${mib(c.baseline.peakRss.median)} (${c.baselineCommand.replace(/ -n <namespace>/, '')})`,
      ratio: `${spreadRatio(c.msRatio)} time, ${ratio(c.peakRssRatio.median)} RSS`,
      target,
      met,
    });
    out.push(
      startupRow(
        '6. start-up: `kubediff version`',
        startup.version,
        '≤ 0.15 s',
        startup.version.kubediff.ms.median <= 150,
      ),
    );
    out.push(
      startupRow(
        '6. start-up: `kubediff --help`',
        startup.help,
        '≤ 0.15 s',
        startup.help.kubediff.ms.median <= 150,
      ),
    );
    out.push(
      startupRow(
        `6. start-up: \`kubediff watch -n\` to ready (${startup.ready.resourceTypes} types)`,
        startup.ready,
        '≤ 0.5 s',
        startup.ready.kubediff.ms.median <= 500,
      ),
    );
    out.push(
      startupRow(
        `6. start-up: \`kubediff watch --initial\`, ${count(startup.initial.objects)} objects`,
        startup.initial,
        '≤ 1.1×',
        startup.initial.msRatio.median <= 1.1,
      ),
    );
  }
  const connections = result.connections as ConnectionFigures | undefined;
  if (connections) {
    const { http2, http1, ratios } = connections;
    out.push({
      figure: `7. connections, ${connections.types} resource types (peak / settled)`,
      kubediff: `${http2.peakConnections.max} / ${http2.settledConnections.max} (HTTP/2, at most)`,
      baseline: `${Math.round(http1.peakConnections.median)} / ${Math.round(http1.settledConnections.median)} (HTTP/1.1)`,
      ratio: '—',
      target: '1 (2 while replacing one)',
      met: http2.peakConnections.max <= 2 && http2.settledConnections.max === 1,
    });
    out.push({
      figure: `7. time to "watching ${connections.types} resource types"`,
      kubediff: ms(http2.startupMs.median),
      baseline: `${ms(http1.startupMs.median)} (HTTP/1.1)`,
      ratio: spreadRatio(ratios.startupMs),
      target: '—',
      met: undefined,
    });
    out.push({
      figure: '7. … RSS, settled',
      kubediff: mib(http2.rssBytes.median),
      baseline: `${mib(http1.rssBytes.median)} (HTTP/1.1)`,
      ratio: spreadRatio(ratios.rssBytes),
      target: '—',
      met: undefined,
    });
    out.push({
      figure: `7. … CPU, ${connections.windowSeconds} s settled (${connections.writesPerSecond} writes/s)`,
      kubediff: `${http2.windowCpuSeconds.median.toFixed(2)} CPU s`,
      baseline: `${http1.windowCpuSeconds.median.toFixed(2)} CPU s (HTTP/1.1)`,
      ratio: spreadRatio(ratios.windowCpuSeconds),
      target: '—',
      met: undefined,
    });
  }
  const audit = result.audit as AuditFigures | undefined;
  if (audit) {
    out.push({
      figure: `8. write → event line, p99, audit webhook on (${audit.writesPerSecond} writes/s)`,
      kubediff: `${ms(audit.audited.p99Ms)} (+${ms(audit.addedP99Ms)}); ${audit.audited.withUser} of ${audit.writes} named their user`,
      baseline: `${ms(audit.plain.p99Ms)} (no audit webhook)`,
      ratio: ratio(audit.p99Ratio),
      target: 'added p99 < 1 s',
      met: audit.addedP99Ms < 1_000 && audit.audited.received === audit.writes,
    });
  }
  const admission = result.admission as AdmissionFigures | undefined;
  if (admission) {
    out.push(admissionRow(admission));
    if (admission.load) out.push(...admissionLoadRows(admission.load));
  }
  const syncLarge = result.syncLarge as LargeSyncFigures | undefined;
  if (syncLarge) out.push(...largeSyncRows(syncLarge));
  const fleet = result.fleet as FleetFigures | undefined;
  if (fleet) out.push(...fleetRows(fleet));
  const kafka = result.kafka as KafkaFigures | undefined;
  if (kafka) {
    out.push({
      figure: `9. Kafka sink, sustained (${count(kafka.events)} events of ${kafka.eventBytes} B, acks=all)`,
      kubediff: perSecond(kafka.sink.median),
      baseline: `${perSecond(kafka.raw.median)} (raw producer, same library)`,
      ratio: spreadRatio(kafka.ratio),
      target: '—',
      met: kafka.undelivered === 0 ? undefined : false,
    });
  }
  const logSinks = result.logSinks as LogSinkFigures | undefined;
  for (const pair of logSinks?.results ?? []) {
    out.push({
      figure: `15. ${pair.sink} (${count(pair.events)} events)`,
      kubediff: perSecond(pair.sinkRate.median),
      baseline: `${perSecond(pair.baselineRate.median)} (${pair.baseline})`,
      ratio: spreadRatio(pair.ratio),
      target: '—',
      met: pair.undelivered === 0 ? undefined : false,
    });
  }
  const uiObject = result.uiObject as UiObjectFigures | undefined;
  if (uiObject) {
    out.push({
      figure: `16. write → event line, p99, while the UI builds a huge object's answer (${uiObject.writesPerSecond} writes/s)`,
      kubediff: `${ms(uiObject.loaded.eventP99Ms)} (${uiObject.eventAddedP99Ms >= 0 ? '+' : ''}${ms(uiObject.eventAddedP99Ms)})`,
      baseline: `${ms(uiObject.idle.eventP99Ms)} (nobody on the page)`,
      ratio: ratio(uiObject.eventP99Ratio),
      target: `added p99 ≤ ${UI_OBJECT_BOUND_MS} ms`,
      met: uiObject.eventAddedP99Ms <= UI_OBJECT_BOUND_MS && uiObject.loaded.received === uiObject.writes,
    });
    out.push({
      figure: "16. /healthz, p99, while the UI builds a huge object's answer",
      kubediff: `${ms(uiObject.loaded.healthzP99Ms)} (${uiObject.healthzAddedP99Ms >= 0 ? '+' : ''}${ms(uiObject.healthzAddedP99Ms)})`,
      baseline: `${ms(uiObject.idle.healthzP99Ms)} (nobody on the page)`,
      ratio: ratio(uiObject.healthzP99Ratio),
      target: `added p99 ≤ ${UI_OBJECT_BOUND_MS} ms`,
      met: uiObject.healthzAddedP99Ms <= UI_OBJECT_BOUND_MS,
    });
  }
  const usedBy = result.usedBy as UsedByFigures | undefined;
  if (usedBy) {
    for (const s of usedBy.streams) {
      out.push({
        figure: `18. usedBy on vs off, ${s.stream === 'configmaps' ? 'ConfigMap updates' : 'pod status updates'} (${count(usedBy.workloads)} workloads, ${count(usedBy.configMaps)} ConfigMaps, CPU time)`,
        kubediff: `${perSecond(s.onEventsPerSecond.median)} (+${s.addedMicroseconds} µs/event)`,
        baseline: `${perSecond(s.offEventsPerSecond.median)} (--no-used-by)`,
        ratio: spreadRatio(s.ratio),
        target: `≤ ${s.stream === 'configmaps' ? 100 : 20} µs/event added`,
        met: s.addedMicroseconds <= (s.stream === 'configmaps' ? 100 : 20),
      });
    }
    if (usedBy.heap) {
      out.push({
        figure: `18. the "used by" index: retained heap per object (${count(usedBy.heap.objects)} pods, Deployments, ReplicaSets)`,
        kubediff: `${count(usedBy.heap.bytesPerObject)} B`,
        baseline: '—',
        ratio: '—',
        target: '≤ 2 KiB',
        met: usedBy.heap.bytesPerObject <= 2048,
      });
    }
  }
  const outcomes = result.outcomes as OutcomeFigures | undefined;
  if (outcomes) out.push(...outcomeRows(outcomes));
  const stories = result.stories as StoryFigures | undefined;
  if (stories) {
    for (const s of stories.streams) {
      out.push({
        figure: `12. stories on vs off, ${s.stream} (${s.events.toLocaleString('en-US')} events, ${s.stories.toLocaleString('en-US')} stories)`,
        kubediff: perSecond(s.onEventsPerSecond.median),
        baseline: `${perSecond(s.offEventsPerSecond.median)} (stories off)`,
        ratio: spreadRatio(s.ratio),
        target: '≥ 0.7×',
        met: s.ratio.median >= 0.7,
      });
    }
    if (stories.heap) {
      out.push({
        figure: `12. open stories: retained heap per event held (${stories.heap.events.toLocaleString('en-US')} events)`,
        kubediff: `${stories.heap.bytesPerEvent.toLocaleString('en-US')} B`,
        baseline: `${stories.heap.jsonBytesPerEvent.toLocaleString('en-US')} B (its JSON)`,
        ratio: ratio(stories.heap.ratio),
        target: '≤ 3×',
        met: stories.heap.ratio <= 3,
      });
    }
  }
  return out;
}

interface GoOriginalFigures {
  build: Omit<GoOriginalBuild, 'binary' | 'source'>;
  streams: SideBySideFigures[];
}

/** The issue's targets: ≤ 2× the Go original's peak RSS at 300 objects, ≤ 1× at 10,000. */
function rssTargetFor(objects: number): number {
  return objects >= 10_000 ? 1 : 2;
}

/** "3,000 of 3,000", or the fewest of any round. */
function seenOf(stream: SideBySideFigures, pick: (r: SideBySideFigures['rounds'][number]) => number): string {
  const fewest = Math.min(...stream.rounds.map(pick));
  return `${count(fewest)} of ${count(stream.writes)}`;
}

const verdict = (met: boolean | undefined) => (met === undefined ? '—' : met ? 'met' : 'NOT met');

export function renderTable(result: Result): string {
  const table = rows(result).map((row) => [
    row.figure,
    row.kubediff,
    row.baseline,
    row.ratio,
    row.target,
    verdict(row.met),
  ]);
  const header = ['figure', 'kubediff', 'baseline', 'ratio', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  return [line(header), ...table.map(line)].join('\n');
}

export function renderMarkdown(result: Result): string {
  const machine = result.machine as {
    cpu: string;
    cores: number;
    memoryGiB: number;
    os: string;
    loadAverageAtStart: number[];
  };
  const parts: string[] = [];
  parts.push(`# Benchmarks

Written by \`npm run bench\` (bench/run.ts) on ${String(result.date).slice(0, 10)}; the raw figures are in
[bench/results/latest.json](bench/results/latest.json). Every figure is a ratio against a baseline measured in the
same run, pair by pair (A, B, A, B …, medians quoted, min–max in brackets), because the machine is shared and noisy.
Nothing here is asserted by \`npm test\`.

- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os} (load average ${machine.loadAverageAtStart.join(' ')} at the start: other work ran alongside)
- Node ${result.node}; Kubernetes ${result.kubernetes} (the test control plane: kube-apiserver, etcd and kube-controller-manager built from the Kubernetes Go modules, started by the bench); ${result.goVersion}
- Run: ${result.mode}, ${result.elapsedSeconds} s in all${partialRuns(result)}

## Summary

${markdownTable(
  ['figure', 'kubediff', 'baseline', 'ratio', 'target', ''],
  rows(result).map((row) => [
    row.figure,
    row.kubediff,
    row.baseline,
    row.ratio,
    row.target,
    verdict(row.met),
  ]),
)}
`);
  const pipeline = result.pipeline as
    | { recorded: { name: string; lines: number; bytes: number }[]; streams: StreamFigures[] }
    | undefined;
  if (pipeline) {
    parts.push(`## 1. Pipeline throughput

Watch streams recorded at bench time from the API server (as it sends them: managedFields, defaults, statuses),
replayed in 64 KiB chunks through kubediff's own path: the reflector's line splitting and JSON parsing, the informer
(normalization: ignored paths dropped, then the store), the diff, the event builder and the JSON line rendering. The
baseline is \`JSON.parse\` + \`JSON.stringify\` of the same lines. Events/s counts input lines (watch events).
The ratio is the median of the pairs' ratios, which need not equal the quotient of the two medians beside it.

${markdownTable(
  ['stream', 'lines', 'mean line', 'events out', 'kubediff', 'baseline', 'ratio'],
  pipeline.streams.map((s) => [
    s.stream,
    String(s.lines),
    `${(s.bytes / s.lines / 1024).toFixed(1)} KiB`,
    String(s.eventsOut),
    perSecond(s.pipelineEventsPerSecond.median),
    perSecond(s.baselineEventsPerSecond.median),
    spreadRatio(s.ratio),
  ]),
)}

- pods: the Pods of 10 Deployments through 4 rounds of rollouts and scaling (ReplicaSet controller), each given a
  Running status by a stand-in kubelet; deployments: those Deployments (helm, kubectl-scale, kubectl-edit and the
  controller's status writes); configmaps: 60 ConfigMaps, server-side applied by one manager and annotated by another;
  widgets: a custom resource of about 100 KiB (400 routes) with a status subresource.
- "events out" is what one replay emits: updates that only touch ignored paths (status, managedFields,
  resourceVersion, generation) emit nothing.
`);
  }
  const sync = result.sync as { time: SyncTimeFigures; heap: HeapFigures } | undefined;
  if (sync) {
    parts.push(`## 2. Initial sync

${sync.time.objects.toLocaleString('en-US')} ConfigMaps (server-side applied, so with managedFields) in one namespace of the real API server.

- Time to synced: a new client, discovery, the streaming list (a WATCH with sendInitialEvents, its objects
  handed on 500 at a time), normalization and the store, until \`ClusterWatcher.start()\` resolves, which is when
  \`kubediff watch\` prints "watching N resource types": median
  ${ms(sync.time.kubediffMs.median)} (${ms(sync.time.kubediffMs.min)}–${ms(sync.time.kubediffMs.max)}). Baseline: a new connection pool and a paged
  LIST (500 a page), every page read and parsed: ${ms(sync.time.rawListMs.median)} (${ms(sync.time.rawListMs.min)}–${ms(sync.time.rawListMs.max)}). Ratio ${spreadRatio(sync.time.ratio)}.${
    sync.time.paged
      ? `
- The same by kubediff's paged LIST (\`KUBEDIFF_INITIAL_SYNC=list\`, what a server without streaming lists gets),
  against the raw LIST of its own pairs: ${ms(sync.time.paged.kubediffMs.median)} (${ms(sync.time.paged.kubediffMs.min)}–${ms(sync.time.paged.kubediffMs.max)}) vs ${ms(sync.time.paged.rawListMs.median)}, ratio ${spreadRatio(sync.time.paged.ratio)}.`
      : ''
  } Both are dominated by the API server's own work; kubediff's processing of an object is small beside serving it.
- Retained heap (\`--expose-gc\`, heapUsed after full GCs, the fixed cost of a watcher of an empty namespace taken
  out): ${Math.round(sync.heap.retainedBytesPerObject)} B per object, against ${Math.round(sync.heap.jsonBytesPerObject)} B of JSON as the API server sends it
  (${ratio(sync.heap.ratio)}) and ${Math.round(sync.heap.storedJsonBytesPerObject)} B of JSON as kubediff stores it, without the ignored paths
  (${ratio(sync.heap.ratioToStoredJson)}).${
    sync.heap.retainedBytesPerObjectWithoutManagers === undefined
      ? ''
      : ` Without who-changed-it (no signature of the managedFields entries kept per object):
  ${Math.round(sync.heap.retainedBytesPerObjectWithoutManagers)} B per object; the signature costs ${Math.round(sync.heap.retainedBytesPerObject - sync.heap.retainedBytesPerObjectWithoutManagers)} B.`
  }
`);
  }
  const latency = result.latency as LatencyFigures | undefined;
  if (latency) {
    parts.push(`## 3. Latency

${latency.writes} merge patches of 20 ConfigMaps at ${latency.writesPerSecond} writes/s. The real CLI (\`kubediff watch -o json -r configmaps -n …\`)
and a raw watch process (undici, copies each watch line to stdout) watch the same objects at the same time; each
latency runs from just before the write request to the line carrying that write, read from the process's stdout.

${markdownTable(
  ['', 'p50', 'p99', 'lines received'],
  [
    [
      'kubediff',
      ms(latency.kubediff.p50Ms),
      ms(latency.kubediff.p99Ms),
      `${latency.kubediff.received} of ${latency.writes}`,
    ],
    [
      'raw watch',
      ms(latency.rawWatch.p50Ms),
      ms(latency.rawWatch.p99Ms),
      `${latency.rawWatch.received} of ${latency.writes}`,
    ],
    ['ratio', ratio(latency.p50Ratio), ratio(latency.p99Ratio), ''],
  ],
)}
`);
  }
  const soak = result.soak as SoakFigures | undefined;
  if (soak) {
    const samples = soak.rssSamples;
    const step = Math.max(1, Math.floor(samples.length / 12));
    const picked = samples.filter((_, i) => i % step === 0 || i === samples.length - 1);
    parts.push(`## 4. Churn soak

${duration(soak.durationSeconds)} (\`--soak-seconds ${soak.durationSeconds}\`) of ConfigMap churn at ${soak.writesPerSecond} writes/s around 300 live objects (60 %
updates, 20 % creates, 20 % deletes) under the real CLI. Every acknowledged write must come out as one event: a
create as ADDED with the create's \`uid:resourceVersion\` as id, an update as UPDATED likewise, a delete as DELETED of
that uid.

- Writes acknowledged: ${soak.writes.creates} creates, ${soak.writes.updates} updates, ${soak.writes.deletes} deletes (${soak.writes.failed} failed).
- Events: ${soak.events.added} ADDED, ${soak.events.updated} UPDATED, ${soak.events.deleted} DELETED, ${soak.events.other} other; ${soak.events.duplicates} duplicate ids; **${soak.lost} lost**.
- RSS (from /proc every 2 s; median of the first tenth after a ${soak.warmupSeconds} s warm-up against the median of the last
  tenth): ${mib(soak.rssAfterWarmup)} → ${mib(soak.rssAtEnd)}, **${(soak.rssGrowth * 100).toFixed(1)} %**.
- RSS over time (s: MiB): ${picked.map((s) => `${Math.round(s.t)}: ${(s.rss / 2 ** 20).toFixed(0)}`).join(', ')}.
`);
  }
  const go = result.goOriginal as GoOriginalFigures | undefined;
  if (go) {
    const first = go.streams[0];
    parts.push(`## 5. The Go original, side by side

The Go original (github.com/arriqaaq/kubediff, last commit a9d1958, MIT), built by the bench from its published
source (${go.build.goVersion}, its dependencies through the Go module proxy, into .cache/go-original, rebuilt when a
stamp of its sources changes), and kubediff (\`kubediff watch -o json -r configmaps -n <ns>\`, through its launcher, so
with the Node options a watch runs with) watch the ConfigMaps of
one namespace of the test API server at the same time, while ${first ? count(first.writes) : '—'} merge patches arrive at ${first?.writesPerSecond ?? '—'}/s, spread over
the namespace's objects in turn (each changes one key of \`data\` and one annotation). The Go original runs as its
README says: \`mode: diff\`, the one resource \`v1/configmaps\`, the namespace, the \`noop\` notifier, a kubeconfig in
\`$KUBECONFIG\`; it logs each update as a pretty-printed JSON block on stdout ("update event", with a go-test/deep diff)
and, through the noop notifier, one more line on stderr. Each round starts both processes afresh; the figures are
read from /proc for both at the same moment, once both have reported every write (medians over the rounds, min–max
in brackets; ratios round by round).

- Updates seen: a write counts for a process when it reports an update carrying that write's resourceVersion
  (kubediff: the \`uid:resourceVersion\` id of an UPDATED event; the Go original: the resourceVersion line of the
  block's diff). The Go original resyncs every minute, so every round of a minute or more includes one: in diff mode
  it logs an update only when the old and new objects differ, and a resync hands it the same object twice, so it
  logs nothing; any report of neither a stream write nor a readiness patch is counted as "other" below.
- Readiness: the Go original prints nothing when it has synced, so before the stream one object is patched until
  both processes have reported the same patch; those patches are not counted.
- CPU seconds are from process start (what the process costs, its start-up and initial LIST included); the stream
  alone (from its first write to the moment of reading) is shown too.

${go.streams
  .map(
    (
      stream,
    ) => `### ${count(stream.objects)} objects, ${count(stream.writes)} writes at ${stream.writesPerSecond}/s, ${stream.rounds.length} round${stream.rounds.length === 1 ? '' : 's'}

${markdownTable(
  ['', 'kubediff', 'Go original', 'ratio', 'target'],
  [
    [
      'CPU seconds from start',
      spreadOf(stream.kubediff.cpuSeconds, cpu),
      spreadOf(stream.goOriginal.cpuSeconds, cpu),
      spreadRatio(stream.cpuRatio),
      '≤ 1×',
    ],
    [
      'CPU seconds of the stream alone',
      spreadOf(stream.kubediff.streamCpuSeconds, cpu),
      spreadOf(stream.goOriginal.streamCpuSeconds, cpu),
      spreadRatio(stream.streamCpuRatio),
      '',
    ],
    [
      'peak RSS',
      spreadOf(stream.kubediff.peakRss, mib),
      spreadOf(stream.goOriginal.peakRss, mib),
      spreadRatio(stream.peakRssRatio),
      `≤ ${rssTargetFor(stream.objects)}×`,
    ],
    [
      'updates seen (fewest in a round)',
      seenOf(stream, (r) => r.kubediff.updatesSeen),
      seenOf(stream, (r) => r.goOriginal.updatesSeen),
      '',
      'all, both',
    ],
    [
      'other reports (all rounds)',
      count(stream.rounds.reduce((sum, r) => sum + r.kubediff.otherReports, 0)),
      count(stream.rounds.reduce((sum, r) => sum + r.goOriginal.otherReports, 0)),
      '',
      '0',
    ],
  ],
)}
`,
  )
  .join('\n')}`);
  }
  const startup = result.startup as StartupFigures | undefined;
  if (startup) {
    const line = (c: StartupComparison, target: string) => [
      `\`${c.command}\``,
      `${spreadOf(c.kubediff.ms, ms)}; ${mib(c.kubediff.peakRss.median)}`,
      `\`${c.baselineCommand}\`: ${spreadOf(c.baseline.ms, ms)}; ${mib(c.baseline.peakRss.median)}`,
      spreadRatio(c.msRatio),
      spreadRatio(c.peakRssRatio),
      target,
    ];
    parts.push(`## 6. Start-up

Each command against kubectl (${startup.kubectlVersion}, the test control plane's build) in the same run, pair by pair
(${startup.pairs} pairs after a warm-up pair, medians with min–max). Wall time from the spawn as this process sees it; peak
RSS from GNU time for a command that exits, from /proc at the moment measured for a watch. kubediff runs with the
Node that runs the bench (${result.node}), as \`kubediff\` does from the PATH with Node 24.

${markdownTable(
  ['command', 'kubediff: time; peak RSS', 'baseline: time; peak RSS', 'time ratio', 'RSS ratio', 'target'],
  [
    line(startup.version, '≤ 0.15 s'),
    line(startup.help, '≤ 0.15 s'),
    line(startup.ready, '≤ 0.5 s'),
    line(startup.initial, '≤ 1.1×'),
  ],
)}

- \`kubediff watch -n\`: a namespace of ${startup.ready.namespaceObjects} ConfigMaps, every resource type (${startup.ready.resourceTypes} of them), timed to
  the "watching N resource types" line on stderr; kubectl lists one of them in that namespace.
- \`kubediff watch --initial\`: every ConfigMap of a namespace (${count(startup.initial.objects)}, made as in figure 2), timed to the
  ADDED line of the last of them on stdout; kubectl to its exit, its JSON list complete (checked).
- kubectl's discovery cache (a folder of its own for this run, filled by the warm-up pair) is warm, as a user who
  has run kubectl before has it; kubediff keeps no discovery cache and asks the API server each time.
`);
  }
  const connections = result.connections as ConnectionFigures | undefined;
  if (connections) parts.push(connectionsSection(connections));
  const audit = result.audit as AuditFigures | undefined;
  if (audit) parts.push(auditSection(audit));
  const kafka = result.kafka as KafkaFigures | undefined;
  if (kafka) {
    const rate = (s: Spread) =>
      `${perSecond(s.median)} (${count(Math.round(s.min))}–${count(Math.round(s.max))})`;
    parts.push(`## 9. The Kafka sink against a raw producer

On a Kafka ${kafka.kafkaVersion} broker of the bench's own (KRaft, one node, the test harness's), ${count(kafka.events)}
events of ${kafka.eventBytes} B (a Deployment update of three changes, 200 objects) to a 3-partition topic, ${kafka.pairs} pairs
after one unrecorded pair, both with the same library (@platformatic/kafka) and settings (idempotent, acks=all, no
compression). The sink: every event handed to \`deliver()\` at once (its queue sized to hold them all), timed until
\`close()\` reports them delivered. The raw producer: the same records (key, value, headers) sent in batches of 500,
each awaited. ${kafka.undelivered === 0 ? 'Every event was delivered in every run.' : `${count(kafka.undelivered)} events were not delivered.`}

${markdownTable(
  ['', 'Kafka sink', 'raw producer', 'ratio'],
  [['events/s', rate(kafka.sink), rate(kafka.raw), spreadRatio(kafka.ratio)]],
)}
`);
  }
  const ui = uiSection();
  if (ui) parts.push(ui);
  parts.push(stateSection());
  const stories = result.stories as StoryFigures | undefined;
  if (stories) parts.push(storiesSection(stories));
  const admissionFigures = result.admission as AdmissionFigures | undefined;
  if (admissionFigures) parts.push(admissionSection(admissionFigures));
  const syncLargeFigures = result.syncLarge as LargeSyncFigures | undefined;
  if (syncLargeFigures) parts.push(largeSyncSection(syncLargeFigures));
  const fleetFigures = result.fleet as FleetFigures | undefined;
  if (fleetFigures) parts.push(fleetSection(fleetFigures));
  const history = historySection();
  if (history) parts.push(history);
  const logSinks = result.logSinks as LogSinkFigures | undefined;
  if (logSinks) parts.push(logSinksSection(logSinks));
  const uiObject = result.uiObject as UiObjectFigures | undefined;
  if (uiObject) parts.push(uiObjectSection(uiObject));
  const sizing = result.sizing as SizingFigures | undefined;
  if (sizing) parts.push(sizingSection(sizing));
  const usedByFigures = result.usedBy as UsedByFigures | undefined;
  if (usedByFigures) parts.push(usedBySection(usedByFigures));
  const outcomeFigures = result.outcomes as OutcomeFigures | undefined;
  if (outcomeFigures) parts.push(outcomeSection(outcomeFigures));
  parts.push(searchSection());
  parts.push(NOTES);
  return `${parts.join('\n')}`;
}

/** Figure 15 (bench/log-sinks.ts). */
function logSinksSection(figures: LogSinkFigures): string {
  const rate = (s: Spread) =>
    `${perSecond(s.median)} (${count(Math.round(s.min))}–${count(Math.round(s.max))})`;
  const undelivered = figures.results.reduce((sum, pair) => sum + pair.undelivered, 0);
  return `## 15. The logging-stack sinks against raw clients of the same servers

Each sink gets every event at once (its queue sized to hold them all) and is timed until \`close()\` reports them
delivered; events of ${figures.eventBytes} B (a Deployment update of three changes, 200 objects), ${figures.pairs} pairs after
one unrecorded pair. OTLP: an OpenTelemetry Collector of the bench's own (OTLP receiver, file exporter); the raw
client encodes the same records with the same encoder and POSTs batches of 500, each awaited. OpenSearch: an
OpenSearch ${figures.opensearchVersion} node of the bench's own; the raw client sends _bulk requests of 500 index
actions, each awaited. Webhooks: a loopback receiver, one request per event; the baseline is the same webhook
sending the event's JSON. ${undelivered === 0 ? 'Every event was delivered in every run.' : `${count(undelivered)} events were not delivered.`}

${markdownTable(
  ['', 'events', 'sink, events/s', 'baseline, events/s', 'ratio'],
  figures.results.map((pair) => [
    pair.sink,
    count(pair.events),
    rate(pair.sinkRate),
    `${rate(pair.baselineRate)}: ${pair.baseline}`,
    spreadRatio(pair.ratio),
  ]),
)}
`;
}

/**
 * The bound docs/ui.md states: while the UI builds an object's answer, an event and /healthz are not
 * delayed more than this beyond the same watch with nobody on the page, at p99 (the answer is built in
 * a worker thread at a lower priority; this thread only moves its bytes).
 */
export const UI_OBJECT_BOUND_MS = 250;

/** Figure 17 (bench/sizing.ts): docs/deploy.md's sizing table comes from it. */
function sizingSection(figures: SizingFigures): string {
  const mib = (bytes: number) => `${Math.round((bytes / 2 ** 20) * 10) / 10}`;
  return `## 17. Memory by cluster size

Measured on ${figures.date.slice(0, 10)}. The real CLI watches every resource type (\`kubediff watch -o json\`, as the chart
runs it, with the chart's heap: \`NODE_OPTIONS=--max-old-space-size=384\`) of the bench's cluster: its own objects,
then ConfigMaps of about 1.3 KiB of JSON each (as figure 2's), then more kinds (CRDs with 20 objects each). Each size
is a new process, measured over the second half of a ${figures.windowSeconds} s settled window after its "watching" line (one
write every 2 s): resident memory from /proc, V8's heap in use from its \`/metrics\`, medians of samples every 2 s.
docs/deploy.md's sizing table and the chart's memory request come from these figures.

${markdownTable(
  [
    'objects watched',
    'resource types',
    'RSS (MiB)',
    'V8 heap in use (MiB)',
    'RSS beside the heap (MiB)',
    'to "watching" (s)',
  ],
  figures.sizes.map((size) => [
    count(size.objects),
    String(size.types),
    mib(size.rssBytes),
    mib(size.heapUsedBytes),
    mib(size.outsideHeapBytes),
    (size.startupMs / 1000).toFixed(1),
  ]),
)}
`;
}

/** Figure 16 (bench/ui-object.ts). */
function uiObjectSection(figures: UiObjectFigures): string {
  const row = (name: string, phase: UiObjectFigures['idle']) => [
    name,
    `${ms(phase.eventP50Ms)} / ${ms(phase.eventP99Ms)} / ${ms(phase.eventMaxMs)}`,
    `${phase.received} of ${figures.writes}`,
    `${ms(phase.healthzP99Ms)} / ${ms(phase.healthzMaxMs)} (${phase.healthzProbes} probes)`,
  ];
  return `## 16. The UI beside the watch: a huge object opened

\`kubediff watch --state --ui --listen\` on one namespace holding a ConfigMap of ${count(figures.keys)} keys whose every
value was replaced ${figures.replaces} times (each update ${count(figures.keys)} changes). ${figures.writes} merge patches of another
ConfigMap at ${figures.writesPerSecond} writes/s, with /healthz (on --listen) asked every 50 ms: first with nobody on the page,
then while a client asks for the huge object's history with two rebuilt versions, one request after another
(${figures.objectAnswers} answers, ${ms(figures.objectAnswerMs)} each at the median, ${figures.objectAnswerMiB} MiB, ${figures.objectEvents} events${figures.notice ? `: "${figures.notice}"` : ''}${figures.objectRefused ? `; ${figures.objectRefused} refused at the 10 s bound` : ''}).
The answer is built in a worker thread at a lower priority than the watch's; the bound docs/ui.md states is
${UI_OBJECT_BOUND_MS} ms added at p99, for an event and for /healthz, over the same watch with nobody on the page.

${markdownTable(
  ['', 'write → event line, p50 / p99 / max', 'events', '/healthz p99 / max'],
  [row('nobody on the page', figures.idle), row('the huge object opened, again and again', figures.loaded)],
)}
`;
}

/** Figure 8 (bench/audit.ts). */
function auditSection(audit: AuditFigures): string {
  return `## 8. The audit join

${audit.writes} merge patches of 20 ConfigMaps at ${audit.writesPerSecond} writes/s on a kube-apiserver with the recommended
audit policy (docs/audit.md) and its audit webhook in batch mode (\`--audit-webhook-batch-max-wait=100ms\`) pointed at
one kubediff (\`--audit-listen\`, default \`--audit-wait\` of 500 ms); a second kubediff without the webhook watches the
same objects of the same API server at the same time. Both pay the API server's own audit cost; the difference is
the join's wait for each change's audit record.

${markdownTable(
  ['', 'p50', 'p99', 'lines received', 'named their user (exact)'],
  [
    [
      'with the audit webhook',
      ms(audit.audited.p50Ms),
      ms(audit.audited.p99Ms),
      `${audit.audited.received} of ${audit.writes}`,
      `${audit.audited.withUser} (${audit.audited.exact})`,
    ],
    [
      'without',
      ms(audit.plain.p50Ms),
      ms(audit.plain.p99Ms),
      `${audit.plain.received} of ${audit.writes}`,
      '—',
    ],
    ['added', '', ms(audit.addedP99Ms), '', ''],
  ],
)}
`;
}

/** Figure 18 (bench/used-by.ts). */
function usedBySection(figures: UsedByFigures): string {
  const heap = figures.heap;
  const stream = (name: UsedByFigures['streams'][number]['stream']) =>
    name === 'configmaps' ? 'every ConfigMap updated once' : "every pod's status updated once";
  return `## 18. What a change reaches

${count(figures.workloads)} Deployments, each with a ReplicaSet of 3 running pods (${count(figures.pods)} pods), reading 2 of
${count(figures.configMaps)} ConfigMaps (one through env, one as a volume), fed to kubediff's own path in one process: the
informers of the four types (their LIST, then watch events handed on as the reflector hands them), the normalizer,
the store, the event builder, the owner stage and the JSON line rendering, with the "used by" index (an observer of
the objects as served, and its stage) and without it (\`--no-used-by\`), pair by pair. Figures are events per
second of CPU time (the process's user and system time: this machine is shared, and the wall clock counts the
others' time too). A ConfigMap update's event then names its Deployment, its 3 pods and whether they run the old
value; a pod status update reports nothing (status is ignored by default) but keeps the index's start times.

${markdownTable(
  ['stream', 'events per pass', 'usedBy on', 'off (--no-used-by)', 'on / off', 'added per event'],
  figures.streams.map((s) => [
    stream(s.stream),
    count(s.events),
    perSecond(s.onEventsPerSecond.median),
    perSecond(s.offEventsPerSecond.median),
    spreadRatio(s.ratio),
    `${s.addedMicroseconds} µs`,
  ]),
)}
${
  heap
    ? `
Memory: the index's retained heap after a full GC, for the ${count(heap.objects)} pods, Deployments and ReplicaSets
(${count(heap.references)} references, identical lists kept once): ${(heap.bytes / 2 ** 20).toFixed(1)} MiB, ${count(heap.bytesPerObject)} B per object. At the default bound of
100,000 objects per cluster (\`usedBy.maxObjects\`) that is about ${Math.round((heap.bytesPerObject * 100_000) / 2 ** 20)} MiB.
`
    : ''
}`;
}

/** Figure 12 (bench/stories.ts). */
function storiesSection(figures: StoryFigures): string {
  const heap = figures.heap;
  return `## 12. Stories

The recordings of figure 1 replayed through the pipeline with stories on (the owner stage, a story builder, each
story rendered as its chat message in Slack's Block Kit when it closes, all at the end: the window outlasts the
replay) and off (each event rendered as its JSON line), pair by pair. Each replay builds its informer and pipeline anew, so the absolute
rates are low for these short recordings; the ratio is the figure.

${markdownTable(
  ['stream', 'events', 'stories', 'on', 'off', 'on / off'],
  figures.streams.map((s) => [
    s.stream,
    String(s.events),
    String(s.stories),
    perSecond(s.onEventsPerSecond.median),
    perSecond(s.offEventsPerSecond.median),
    spreadRatio(s.ratio),
  ]),
)}
${
  heap
    ? `
Memory: open stories hold their events until they close. Retained heap after a full GC, ${heap.events.toLocaleString('en-US')} events
held (the pods recording replayed 40 times): ${heap.bytesPerEvent.toLocaleString('en-US')} B per event, against ${heap.jsonBytesPerEvent.toLocaleString('en-US')} B of its JSON
(${heap.ratio}×). At the default bound of 10,000 open events per sink that is about ${Math.round((heap.bytesPerEvent * 10_000) / 2 ** 20)} MiB per sink with stories on.
`
    : ''
}`;
}

/** Figure 7 (bench/connections.ts); also written alone, after a \`--only connections\` run. */
export function connectionsSection(figures: ConnectionFigures): string {
  const row = (label: string, pick: (side: ProtocolFigures) => Spread, format: (value: number) => string) => [
    label,
    `${format(pick(figures.http2).median)} (${format(pick(figures.http2).min)}–${format(pick(figures.http2).max)})`,
    `${format(pick(figures.http1).median)} (${format(pick(figures.http1).min)}–${format(pick(figures.http1).max)})`,
  ];
  const count = (value: number) => String(Math.round(value));
  const seconds = (value: number) => value.toFixed(2);
  return `## 7. Connections: HTTP/2 against HTTP/1.1

Measured on ${figures.date.slice(0, 10)}. The real CLI (\`kubediff watch -o json\`, everything) on a cluster serving
${figures.types} resource types (the API server's own and ${figures.crds} CRDs made for it), over HTTP/2 (the default:
one connection carries discovery, every LIST and every WATCH) and over HTTP/1.1 (\`KUBEDIFF_HTTP_VERSION=1.1\`: one
connection per watch), ${figures.pairs} pairs after one unrecorded pair. Connections are the process's ESTABLISHED TCP
connections to the API server, read from /proc every 20 ms from its start to its "watching" line (peak) and at the
end of a ${figures.windowSeconds} s settled window with ${figures.writesPerSecond} ConfigMap writes/s (settled). Medians, min–max in brackets.

${markdownTable(
  ['', 'HTTP/2', 'HTTP/1.1', 'ratio'],
  [
    [...row('connections at the peak', (side) => side.peakConnections, count), '—'],
    [...row('connections, settled', (side) => side.settledConnections, count), '—'],
    [
      ...row('time to "watching" (ms)', (side) => side.startupMs, count),
      spreadRatio(figures.ratios.startupMs),
    ],
    [
      ...row('CPU s until then', (side) => side.startupCpuSeconds, seconds),
      spreadRatio(figures.ratios.startupCpuSeconds),
    ],
    [
      ...row('CPU s, settled window', (side) => side.windowCpuSeconds, seconds),
      spreadRatio(figures.ratios.windowCpuSeconds),
    ],
    [
      ...row(
        'RSS, settled (MiB)',
        (side) => side.rssBytes,
        (value) => (value / 2 ** 20).toFixed(1),
      ),
      spreadRatio(figures.ratios.rssBytes),
    ],
  ],
)}
`;
}

/** Figures re-measured after the full run (`--only … --record`): which, when, under what load. */
function partialRuns(result: Result): string {
  const runs = (result.partialRuns ?? []) as {
    figures: string[];
    date: string;
    elapsedSeconds: number;
    machine: { cpu: string; cores: number; loadAverageAtStart: number[] };
  }[];
  return runs
    .map(
      (run) =>
        `\n- Figures ${run.figures.map((name) => FIGURES[name as FigureName]?.number ?? name).join(' and ')} (${run.figures.join(', ')}): re-measured on ${run.date.slice(0, 10)} by \`npm run bench -- --only ${run.figures.join(',')} --record\` (${run.machine.cpu}, ${run.machine.cores} cores; ${run.elapsedSeconds} s, load average ${run.machine.loadAverageAtStart.join(' ')} at its start); every other figure is from the run above`,
    )
    .join('');
}

/** What the figures do not say by themselves: kept with the generator so every run writes it. */
const NOTES = `## Notes

### What was optimized (issue 7), and what it changed

Measured with bench/pipeline.ts on recordings like the ones above, same machine, pair by pair (figure 1 ratios):

| change | pods | deployments | configmaps | widgets (100 KiB CR) |
| --- | --- | --- | --- | --- |
| before | 0.96× | 0.74× | 0.45× | 0.39× |
| 1. share equal subtrees before diffing (src/diff/share.ts) | 1.17× | 1.00× | 0.56× | 0.61× |
| 2. walk objects directly, jsondiffpatch only for changed arrays | 0.99× | 0.97× | 0.59× | 0.62× |
| 3. line splitting searches only the new chunk (reflector \`jsonLines\`) | 1.00× | 0.99× | 0.57× | 0.74× |
| 4. aligned keys read directly in the sharing walk | 1.12× | 1.06× | 0.61× | 0.83× |

(Rows 2–4 ran at a busier time than row 1; compare within a column with care.)

1. A watch update is the whole object, mostly equal to the stored one. jsondiffpatch walked all of it, with a
   context object and a filter pipeline per node. One plain walk (\`shareUnchanged\`) now finds every subtree equal
   to the one at the same place in the previous version and reuses the previous one, so an unchanged object is
   answered by that walk alone and otherwise only the changed paths are walked.
2. Objects on those paths are compared key by key directly; only an array that differs goes through jsondiffpatch,
   for its list-key matching (containers by name, ports by port and protocol, …).
3. A long line (a large object spans many 64 KiB chunks) was copied and rescanned for every chunk.

The output is unchanged: test/unit/diff/share.test.ts checks, on fixed Kubernetes-shaped cases and on 4,000 random
objects and edits (keys needing escapes, \`__proto__\`, keyed and keyless lists, moves, reordered keys), that the
changes equal those jsondiffpatch gives for the whole objects.

### Who changed it on the configmaps stream (issue 14)

With who-changed-it on, the configmaps stream (8–16 changes per update, two managers) fell to 0.29–0.46× the
baseline, 1.4–1.6× slower than without it. Each step below was measured against the others in one run: each
version of the code timed in turn on the same recording's updates (the signature of the arriving object, the
diff, the diff with attribution), in CPU time per update, load average 2.1–2.4:

| change | managers signature | diff | diff and attribution |
| --- | --- | --- | --- |
| before | 1.63 µs | 2.81 µs | 8.71 µs |
| 1. owners looked up by the change's pointer, siblings from their parent's walk; writers by whole signature lines | 1.64 µs | 2.82 µs | 6.50 µs |
| 2. the diff in one walk over both versions (only a differing array shared and handed to jsondiffpatch) | 1.63 µs | 2.06 µs | 5.54 µs |
| 3. the signature's field walk keeps its totals in one object | 1.59 µs | 2.09 µs | 5.50 µs |
| 4. writers and owners in small arrays, not three sets per update | 1.54 µs | 2.03 µs | 5.13 µs |
| 5. keys at the same place in both versions read directly by the diff | 1.58 µs | 1.59 µs | 4.81 µs |

The whole pipeline, before and after in one run on this stream (load average 2): 0.40× the baseline before,
0.52× after in wall-clock pairs (1.34× as fast); 0.45× and 0.52× in CPU time. The output is the same, event for
event. The managers signature is the one cost left as it was: a hash of every key of every managedFields entry
of every object that arrives (it is what tells a same-second write apart); on the deployments stream, whose
objects carry about 290 such keys, it is most of the 1.25× that who-changed-it costs. Filters also build their
reasons only for \`--explain\` now.

### Where the time goes now

- Figure 1, configmaps: JSON.parse of the line and JSON.stringify of the event are about two thirds of kubediff's
  time per event. An update of a ConfigMap's file reports the whole old and new file (\`from\` and \`to\`), so the
  event line is longer than the object, and rendering it costs more than the baseline's stringify of the object.
  Parsing plus rendering alone come to about 1.1 baseline units per event, so no pipeline can pass about 0.9× on this
  stream; kubediff's own work (normalize, store, diff, event) is the rest. With who-changed-it on, parsing and
  rendering are about 45 % of kubediff's CPU time on this stream; the managers signature (a hash of every
  managedFields key of every object that arrives) about 6 %, the field owners of the changes about 6 %, the diff 4 %.
- Figure 1, widgets: parsing 100 KiB dominates both sides; the sharing walk is the largest part of kubediff's own work.
- Resident memory at 300 objects is nearly all fixed cost. Read from /proc once a watch has synced
  (\`kubediff watch\` with its Node options, about 67 MiB; the stream then adds 2–4 MiB, replaced objects
  promoted into V8's old generation before its next full collection): 42.6 MiB are pages of the Node binary
  itself (a bare \`node\` touches 31 MiB; loading node:tls adds 3.5 MiB of them and node:http2 4.3 MiB more, with
  the node:http, assert and fs/promises modules it loads in turn; the rest is OpenSSL and V8's compilers at work),
  13.5 MiB V8's heap (about 4.5 MiB of it in a bare \`node\` with the same built-in modules), 4.7 MiB C heap and
  3.6 MiB shared libraries. kubediff's own modules and dependencies take about 3 MiB of it (loaded alone beside
  Node's modules: yaml 1.7, commander 1.5, jsondiffpatch 1.0 MiB). The Go original's whole process is 34–37 MiB.
  What was cut (docs/watching.md, "Memory of a long-running watch"): V8's young generation, which grew to 16 MiB
  semi-spaces under the stream (\`--max-semi-space-size=1\`: about 9 MiB), TurboFan (\`--max-opt=2\`: about 6 MiB),
  Node's bundled undici, which an ES module import of node:http loaded for its WebSocket exports (about 3 MiB),
  compilation on helper threads (\`--no-concurrent-recompilation --no-concurrent-sparkplug\`: about 3 MiB),
  Node's module compile cache, whose entries stay in memory for the life of the process (kubediff runs the
  JavaScript \`npm run build\` compiles, comments removed: about 2.7 MiB) and ICU's zone data (timestamps without
  toISOString: under 1 MiB; 8 MiB at exit, where the shutdown report's counts used toLocaleString).
- Start-up: kubediff runs the JavaScript that \`npm run build\` compiles into dist/, so \`kubediff version\` takes
  about 0.1 s with no cache to warm; \`watch\` pays one more start of Node (some tens of ms) to run with its
  options.

### Footprint, before and after (issue 13)

Issue 13 in steps: kubeconfig read by kubediff, \`@kubernetes/client-node\` loaded only for
exec plugins and auth providers, every optional module loaded only when used, Node's compile cache, streaming
lists; then \`watch\`'s own Node options and node:http without Node's bundled undici; then compiled JavaScript instead
of the compile cache.

| figure | before | after the first round | now | target |
| --- | --- | --- | --- | --- |
| 300 objects: peak RSS vs the Go original | 5.67× (202 MiB vs 36 MiB) | 2.56× (94 MiB vs 37 MiB) | 1.97× (70.5 MiB vs 35.8 MiB) | ≤ 2× |
| 300 objects: CPU from start vs the Go original | 1.26× | 0.78× | 0.91× | ≤ 1× |
| 10,000 objects: peak RSS vs the Go original | 1.08×–1.45× (237 MiB) | 0.62× (132 MiB) | 0.43× (92 MiB) | ≤ 1× |
| 10,000 objects: CPU from start vs the Go original | 0.97× | 0.66× | 0.74× | ≤ 1× |
| \`kubediff version\`: peak RSS; time vs \`kubectl version --client\` | 173 MiB; 14.7× (0.69 s) | 62 MiB; 1.76× (0.08–0.12 s alone) | 59 MiB; 1.80× (0.11 s) | ≤ 0.15 s |
| \`kubediff watch -n\` to ready: time vs \`kubectl get\` | 0.97 s | 4.0× under load; 0.18–0.22 s alone | 5.39× (0.44 s) | ≤ 0.5 s |
| \`kubediff watch --initial\`, 3,000 objects, vs kubectl | 1.06× | 0.43× | 0.50× | ≤ 1.1× |

The last step measured on its own, the stream of figure 5 at 300 objects, the previous main and this one in turn
with the Go original beside each, 3 rounds each (load average 0.9–1.7): peak RSS 95.0 MiB (94.4–96.8) → 77.5 MiB
(77.0–78.2), 2.77× → 2.21× the Go original's; CPU from start 0.91× → 0.96× (the second start of Node, about
0.05 s; the stream alone costs the same). One at a time, on that stream: \`--max-semi-space-size=1\` about −9 MiB
(1, 2, 4 and 8 MiB semi-spaces: 86, 88, 93 and 98 MiB against 95 MiB without, one round each, CPU within
the noise), \`--max-opt=2\` about −6 MiB,
node:http without undici about −3 MiB; \`--single-threaded-gc\`, \`--v8-pool-size=1\` and \`MALLOC_ARENA_MAX=1\` gained
1 MiB or less; \`--max-opt=1\` (no Maglev either) another −7 MiB but 1.18× the Go original's CPU. Then (A/B runs of
1,000 writes, 3–4 rounds, load average about 1): compiling on the main thread −3 MiB (75.8 → 72.6 MiB, CPU the
same; \`--single-threaded\` gave the same but collects garbage on the main thread too, which raised a 3,000-object
initial list's peak from 82–87 to 100 MiB: not adopted), timestamps and counts without ICU −0.7 MiB at the peak and
−8 MiB at exit (78.3 → 70.4 MiB), the pretty renderers and the audit server imported only when used −0.3 MiB;
\`--no-sparkplug\`, a higher Maglev threshold, jsondiffpatch loaded on the first changed array: −0.3 MiB or less, not
adopted. Then compiled JavaScript (\`dist/\`, see "Start-up and the build") instead of the TypeScript sources through
Node's compile cache, whose entries Node keeps in memory: 71.6 → 68.9 MiB (A/B, 1,000 writes, 2 rounds; 3,000
writes: about 70.5 MiB, the stream adding 2 MiB of promoted garbage before V8's next full collection), \`version\`
0.100 → 0.105 s, ready 0.40 → 0.42 s. Measured and not adopted: each built-in module taken without an ES module
import (no gain once node:http is), the state, UI, leader-election and audit modules loaded only when used
(−0.1 MiB), \`--heap-growing-percent\`, \`--efficiency-mode\`, \`--minor-ms\` (+9 MiB), \`--v8-pool-size=1\`,
\`MALLOC_ARENA_MAX=1\` (−0.2 MiB or less); \`--optimize-for-size\` or \`--memory-saver-mode\` −2.1 MiB on the stream
(V8 collects its old generation every 2 MiB instead of 8) but 1.00–1.05× the Go original's CPU, and a full
collection of kubediff's own every 5 s (\`--expose-gc\`) −1.7 MiB for 15–20 % more CPU (the live heap stays at 8.0 MiB
through the stream: what it adds is replaced objects awaiting collection); HTTP/1.1 (one connection per watch) 97
MiB. What remains is fixed cost, most of it Node's own: pages of the Node binary (42.6 MiB: a bare \`node\` touches
31, node:tls 3.5 more and node:http2 4.3 more with the node:http, assert and fs/promises modules it loads), V8's
heap (13.5 MiB, 4.5 of them in a bare \`node\` with the same modules), the C heap (4.7 MiB); our own modules and
dependencies about 3 MiB (yaml 1.7, commander 1.5, jsondiffpatch 1.0 MiB each, loaded alone beside Node's
modules), the API connection and its TLS about 3 MiB in any Node process.

Recorded with the figures above (2026-11-26): figure 5 is from a run of figures 5 and 6 alone (\`npm run bench -- --only go-original,startup --record\`, load
average 5.7 at its start and falling: A/B runs had just ended), figure 6 from a run of its own on a quiet machine
(\`--only startup --record\`, load average 0.03); figure 2 from one of its own (load average 3.9). This machine's
start-up is slower than the one of the previous figures: the previous main, measured beside this one the same
day, took 0.40 s to its ready line (this one 0.42 s, 9 runs each) and 0.100 s for \`version\` (this one 0.105 s).
The sync figures move by ±0.2×
from run to run with the load: both sides are mostly the API server's work.

### Installed the ways people install it (issue 31)

The npm package installed with \`npm install -g\` (run by the Node 24.21 that \`npm ci\` installs) beside the
single executable (\`npm run build:sea\`: the same Node 24.21, the same files unpacked from inside), both against
the test control plane (\`npm run cluster:up\`), on 2026-11-27 with other work alongside (load average 4.7–8.2,
2 cores). Whole-process figures from the operating system's accounting (user + system CPU, wall time, peak
RSS of the process), after a warm-up, the two in turn (A, B, A, B …), medians with min–max; \`/usr/bin/time -v\`
gives the same figures for one run.

| figure | npm install | single executable | single / npm, pair by pair |
| --- | --- | --- | --- |
| \`kubediff version\` (10 pairs): CPU; wall; peak RSS | 0.092 s; 0.158 s; 58.9 MiB | 0.107 s; 0.199 s; 70.5 MiB | CPU 1.17× (1.10–1.22), wall 1.12× (0.89–1.73) |
| \`kubediff watch -n <namespace>\` to its ready line (9 pairs) | 278 ms (222–370) | 298 ms (198–489) | 0.89× |
| \`kubediff watch -n <namespace>\`, its first 5 s (5 pairs): CPU; peak RSS | 0.320 s; 67.6 MiB | 0.273 s; 78.0 MiB | CPU 0.86× (0.78–1.03); RSS 1.15× |
| the single executable's first start: \`version\` while unpacking 3,626 files (45 MiB) into its cache folder (5 runs) | — | 1.9 s CPU (1.2–2.7), 2.2 s wall (1.5–5.2), 168 MiB peak | once per build and user |

The single executable takes about 11 MiB more at every command (the same for \`version\` and a synced watch);
its \`watch\` starts with its memory options already set, where the launcher of an npm install replaces its
process once to add them, which is probably why it reaches its ready line no later and with less CPU. Sizes: the npm
package 168 files, 0.5 MB packed; installed, 111 packages, 84 MiB (before: 408 files packed, \`dist/\` missing,
and a second Node.js of 190 MiB among the dependencies); the single executable 125 MiB (Node's 121 MiB and 4.4
MiB of brotli over the 46.5 MiB it unpacks), its krew archive 47 MiB.

### Reproducing

\`npm run bench\` (full, ~21 minutes: builds the control plane and the Go original if needed, starts its own control
plane, writes this file); \`npm run bench -- --quick\` (about 3 minutes, records nothing); \`--soak-seconds N\`;
\`--only pipeline,sync,latency,soak,go-original,startup\` for some figures (with \`--record\`, they replace theirs in
bench/results/latest.json and this file, the others are kept); \`node bench/report.ts\` writes this file again from
latest.json. Figure 5 needs Go and the Go original's source (by default in \`shared/anchors/kubediff-go\` beside the
repository's folder; \`--go-original-src <folder>\` elsewhere); figure 6 needs GNU time (\`/usr/bin/time\`, Debian
package \`time\`) for the peak RSS of a command that exits. Figure 21 (\`--only fleet\`, about 10 minutes on 2 loaded
cores; \`--fleet-kills N\` and \`--fleet-writes N\` for fewer takeovers and writes) needs PostgreSQL's server binaries,
as the tests do (CONTRIBUTING.md).
The pieces run alone too: \`node bench/pipeline.ts --fixtures <folder>\` replays recordings made by
\`node bench/record.ts --cluster <ClusterInfo.json> --out <folder>\` (with \`node --cpu-prof\` for a profile).
`;

if (import.meta.main) {
  const latest = path.join(import.meta.dirname, 'results', 'latest.json');
  const target = path.join(import.meta.dirname, '..', 'BENCHMARKS.md');
  writeFileSync(target, renderMarkdown(JSON.parse(readFileSync(latest, 'utf8')) as Result));
  process.stderr.write(
    `bench: wrote ${path.relative(process.cwd(), target)} from ${path.relative(process.cwd(), latest)}\n`,
  );
}
