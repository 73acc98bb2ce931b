// Figure 1: pipeline throughput. Replays recorded watch streams (see record.ts) through kubediff's
// own path, byte chunks in: the reflector's line splitting and parsing, the informer's
// normalization and store, the diff and the event builder (kubediff's Pipeline, with no rules
// configured) and the JSON line rendering. The baseline
// is JSON.parse + JSON.stringify of the same lines. Figures are watch events (input lines) per
// second, measured pair by pair in one process.
//
//   node bench/pipeline.ts --fixtures <folder> [--pairs 7] [--stream pods]   (prints JSON)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../src/diff/ignore.ts';
import { Normalizer } from '../src/diff/normalize.ts';
import { Redactor } from '../src/diff/redact.ts';
import { type ChangeEvent, isChange } from '../src/events/event.ts';
import { type EventStage, Pipeline } from '../src/events/pipeline.ts';
import { Informer } from '../src/informer/informer.ts';
import type { KubeClient } from '../src/kube/client.ts';
import { listerWatcherFor } from '../src/kube/lister-watcher.ts';
import type { ResourceType } from '../src/kube/types.ts';
import { renderJsonLine } from '../src/sinks/core/stream-output.ts';
import { EventFailures } from '../src/util/event-failures.ts';
import { silentLogger } from '../src/util/log.ts';
import { paired, type Spread, spread } from './lib/stats.ts';

export const STREAMS: Record<
  string,
  Omit<ResourceType, 'verbs' | 'shortNames' | 'singularName' | 'categories'>
> = {
  pods: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
  deployments: {
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    namespaced: true,
  },
  configmaps: { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true },
  widgets: {
    group: 'bench.kubediff.io',
    version: 'v1',
    resource: 'widgets',
    kind: 'Widget',
    namespaced: true,
  },
};

/** The size of the chunks a socket hands over (undici reads up to 64 KiB at a time). */
const CHUNK_BYTES = 64 * 1024;
/** Each timed run replays its stream this long at least, so that timer resolution does not matter. */
const MIN_RUN_MS = 400;

export interface StreamFigures {
  stream: string;
  lines: number;
  bytes: number;
  /** Events emitted by one replay (ADDED, UPDATED with changes, DELETED). */
  eventsOut: number;
  pipelineEventsPerSecond: Spread;
  baselineEventsPerSecond: Spread;
  /** pipeline / baseline events per second, pair by pair. */
  ratio: Spread;
  /** The pipeline without who-changed-it (no managedFields read) / with it, pair by pair: its cost. */
  withoutManagersRatio: Spread;
}

export interface Fixture {
  stream: string;
  type: ResourceType;
  lines: string[];
  chunks: Buffer[];
  bytes: number;
}

export function loadFixture(dir: string, stream: string): Fixture {
  const buffer = readFileSync(path.join(dir, `${stream}.jsonl`));
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < buffer.length; offset += CHUNK_BYTES) {
    chunks.push(buffer.subarray(offset, offset + CHUNK_BYTES));
  }
  const lines = buffer
    .toString('utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  const type: ResourceType = {
    ...STREAMS[stream]!,
    verbs: ['list', 'watch'],
    shortNames: [],
    singularName: '',
    categories: [],
  };
  return { stream, type, lines, chunks, bytes: buffer.length };
}

/**
 * A client that answers the reflector's LIST with an empty list and its first WATCH with the
 * recorded bytes; the second WATCH (the reflector resuming after the stream ended) marks the end
 * of the replay and waits for stop().
 */
function replayClient(chunks: Buffer[], onReplayed: () => void): KubeClient {
  let watches = 0;
  const client = {
    server: 'https://replay.invalid',
    getJSON: async () => ({
      notModified: false,
      body: { metadata: { resourceVersion: '1' }, items: [] },
      etag: undefined,
    }),
    openStream: async (_path: string, options: { signal?: AbortSignal }) => {
      watches++;
      if (watches === 1) return Readable.from(chunks, { objectMode: false });
      onReplayed();
      const idle = new Readable({ read() {} });
      options.signal?.addEventListener('abort', () => idle.destroy(), { once: true });
      return idle;
    },
  };
  return client as unknown as KubeClient;
}

/** How both replays (figures 1 and 12) normalize: the default ignored paths, Secrets hashed. */
export const normalizer = new Normalizer({
  ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
  redactor: new Redactor(),
});
let sink = 0;

/**
 * kubediff's pipeline (src/events/pipeline.ts) as `kubediff watch` runs it, with `stages` as its rules
 * and a sink that hands each delivered event to `deliver`.
 */
export function benchPipeline(deliver: (event: ChangeEvent) => void, stages: EventStage[] = []): Pipeline {
  return new Pipeline({
    normalizer,
    rules: stages,
    handover: [],
    delivery: {
      deliver: (event) => {
        if (isChange(event)) deliver(event);
        return [];
      },
      accepted: () => [],
    },
    observers: [],
    failures: new EventFailures(silentLogger),
  });
}

/** One replay of the fixture through kubediff, each event rendered as its JSON line; returns the events. */
async function replayOnce(fixture: Fixture, fieldManagers = true): Promise<number> {
  let events = 0;
  const pipeline = benchPipeline((event) => {
    events++;
    sink += renderJsonLine(event).length;
  });
  await replayInto(fixture, pipeline, { fieldManagers });
  return events;
}

/**
 * Replays the fixture through one informer into `pipeline`; `started` sees the informer (a lookup into
 * its store) before the replay begins; `fieldManagers: false` leaves who-changed-it out (its cost,
 * figure 1).
 */
export async function replayInto(
  fixture: Fixture,
  pipeline: Pipeline,
  options: { started?: (informer: Informer) => void; fieldManagers?: boolean } = {},
): Promise<void> {
  const { started, fieldManagers = true } = options;
  let replayed!: () => void;
  const done = new Promise<void>((resolve) => {
    replayed = resolve;
  });
  const informer = new Informer(
    listerWatcherFor(
      replayClient(fixture.chunks, () => replayed()),
      fixture.type,
    ),
    {
      type: fixture.type,
      normalize: (type, object) => pipeline.normalize(type, object),
      initialList: 'silent',
      fieldManagers,
      // The replay client serves a LIST and then a plain WATCH (the recording has no initial-events-end
      // bookmark): a streaming list would take the recording for its initial events and fail at its
      // first MODIFIED, replaying nothing.
      timing: { minWatchTimeoutSeconds: 3600, idleTimeoutMs: 3_600_000, initialSync: 'list' },
    },
    pipeline.source('bench'),
  );
  started?.(informer);
  informer.start();
  await done;
  await informer.stop();
}

function baselineOnce(fixture: Fixture): number {
  for (const line of fixture.lines) sink += JSON.stringify(JSON.parse(line)).length;
  return fixture.lines.length;
}

/** Events (input lines) per second of `once`, repeated for at least MIN_RUN_MS. */
export async function rate(fixture: Fixture, once: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  let replays = 0;
  let elapsed = 0;
  do {
    await once();
    replays++;
    elapsed = performance.now() - started;
  } while (elapsed < MIN_RUN_MS);
  return (replays * fixture.lines.length) / (elapsed / 1000);
}

export async function measureStream(
  dir: string,
  stream: string,
  pairs: number,
): Promise<StreamFigures | undefined> {
  const fixture = loadFixture(dir, stream);
  // A cluster without the deployment and ReplicaSet controllers (--cluster) records no Pods.
  if (fixture.lines.length === 0) return undefined;
  const eventsOut = await replayOnce(fixture);
  // Every recording holds changes: a replay that reports none measures nothing (a broken replay).
  if (eventsOut === 0) throw new Error(`pipeline: replaying ${stream} reported no event`);
  const result = await paired(
    pairs,
    2,
    () => rate(fixture, () => replayOnce(fixture)),
    () => rate(fixture, () => baselineOnce(fixture)),
  );
  const cost = await paired(
    pairs,
    1,
    () => rate(fixture, () => replayOnce(fixture, false)),
    () => rate(fixture, () => replayOnce(fixture)),
  );
  return {
    stream,
    lines: fixture.lines.length,
    bytes: fixture.bytes,
    eventsOut,
    pipelineEventsPerSecond: spread(result.a),
    baselineEventsPerSecond: spread(result.b),
    ratio: spread(result.ratios),
    withoutManagersRatio: spread(cost.ratios),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { fixtures: { type: 'string' }, pairs: { type: 'string' }, stream: { type: 'string' } },
  });
  const dir = values.fixtures;
  if (!dir) throw new Error('usage: node bench/pipeline.ts --fixtures <folder> [--pairs N] [--stream name]');
  const pairs = Number(values.pairs ?? 7);
  const only = values.stream;
  const results: StreamFigures[] = [];
  for (const stream of only ? [only] : Object.keys(STREAMS)) {
    const figures = await measureStream(dir, stream, pairs);
    if (!figures) {
      process.stderr.write(`pipeline: ${stream}: nothing was recorded, skipped\n`);
      continue;
    }
    results.push(figures);
    process.stderr.write(
      `pipeline: ${stream} ratio ${figures.ratio.median.toFixed(3)}, without who-changed-it ${figures.withoutManagersRatio.median.toFixed(3)}× as fast\n`,
    );
  }
  process.stdout.write(`${JSON.stringify({ streams: results, sink: sink > 0 })}\n`);
}
