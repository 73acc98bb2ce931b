// The sinks' metrics: what became of the events each was handed (from Sink.stats() at each scrape), its
// queue, the dead-letter files, the HTTP requests and retries (told as they happen through the
// DeliveryObserver the sinks are given, src/sinks/core/delivery.ts), and the stories of the sinks that tell
// them.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { DeadLetterFile } from '../../sinks/core/dead-letter.ts';
import type { DeliveryObserver } from '../../sinks/core/delivery.ts';
import type { Sink, SinkStats } from '../../sinks/core/sink.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

export interface SinkSources {
  /** The sinks (read on each scrape). */
  sinks?: (() => readonly Sink[]) | undefined;
  /** The dead-letter files (read on each scrape). */
  deadLetterFiles?: (() => readonly DeadLetterFile[]) | undefined;
}

const SINK_OUTCOMES: readonly [keyof SinkStats, string][] = [
  ['accepted', 'accepted'],
  ['delivered', 'delivered'],
  ['summarized', 'summarized'],
  ['deadLettered', 'dead_lettered'],
  ['lost', 'lost'],
];

/** Registers the sinks' series; returns the observer their HTTP deliveries report to. */
export function registerSinkMetrics(
  registration: MetricsRegistration,
  sources: () => SinkSources,
): DeliveryObserver {
  const { registers } = registration;
  const sinks = () => sources().sinks?.() ?? [];
  new Counter({
    name: 'kubediff_sink_events_total',
    help: 'Events handed to each sink (accepted) and what became of them (delivered, summarized in a digest, dead_lettered, lost).',
    labelNames: ['sink', 'outcome'],
    registers,
    collect() {
      for (const sink of sinks()) {
        const stats = sink.stats();
        for (const [field, outcome] of SINK_OUTCOMES)
          registration.incrementTo(
            this,
            { sink: sink.name, outcome },
            stats[field],
            `sink\u0000${sink.name}\u0000${outcome}`,
          );
      }
    },
  });
  new Counter({
    name: 'kubediff_sink_overflows_total',
    help: "Times a sink's queue reached its bound and began summarizing further events in a digest (their events written in full to the dead-letter file); each is logged once.",
    labelNames: ['sink'],
    registers,
    collect() {
      for (const sink of sinks())
        registration.incrementTo(
          this,
          { sink: sink.name },
          sink.stats().overflows,
          `overflows\u0000${sink.name}`,
        );
    },
  });
  new Gauge({
    name: 'kubediff_sink_queue_depth',
    help: 'Events queued or in flight in each sink.',
    labelNames: ['sink'],
    registers,
    collect() {
      this.reset();
      for (const sink of sinks()) this.set({ sink: sink.name }, sink.stats().pending);
    },
  });
  registerDeadLetterMetrics(registration, () => sources().deadLetterFiles?.() ?? []);
  registerFileMetrics(registration, sinks);
  registerStoryMetrics(registration, sinks);
  return registerDeliveryMetrics(registration);
}

function registerDeadLetterMetrics(
  registration: MetricsRegistration,
  files: () => readonly DeadLetterFile[],
): void {
  const { registers } = registration;
  new Gauge({
    name: 'kubediff_dead_letter_bytes',
    help: 'Bytes in each dead-letter file and its rotated files (capped at --dead-letter-max-files × --dead-letter-max-size).',
    labelNames: ['file'],
    registers,
    collect() {
      this.reset();
      for (const file of files()) this.set({ file: file.path }, file.stats().bytes);
    },
  });
  new Counter({
    name: 'kubediff_dead_letter_dropped_total',
    help: 'Dead letters deleted with the oldest rotated file when a dead-letter file reached its cap.',
    labelNames: ['file'],
    registers,
    collect() {
      for (const file of files()) {
        registration.incrementTo(
          this,
          { file: file.path },
          file.stats().droppedRecords,
          `dead-letter\u0000${file.path}`,
        );
      }
    },
  });
}

/** The sinks that write rotated files (docs/sinks.md#file): disk taken, rotations, deletions at maxFiles. */
function registerFileMetrics(registration: MetricsRegistration, sinks: () => readonly Sink[]): void {
  const { registers } = registration;
  const files = () =>
    sinks().flatMap((sink) => (sink.fileStats ? [{ sink: sink.name, stats: sink.fileStats() }] : []));
  new Gauge({
    name: 'kubediff_file_sink_bytes',
    help: "Bytes a file sink's live file and its rotated files take (at most about maxSize × (1 + maxFiles)).",
    labelNames: ['sink'],
    registers,
    collect() {
      this.reset();
      for (const { sink, stats } of files()) this.set({ sink }, stats.bytes);
    },
  });
  const counters = [
    [
      'rotations',
      'kubediff_file_sink_rotations_total',
      'Times a file sink rotated its live file at maxSize.',
    ],
    [
      'deleted',
      'kubediff_file_sink_deleted_files_total',
      'Rotated files a file sink deleted to keep maxFiles (the oldest first; said once).',
    ],
    [
      'compressionFailures',
      'kubediff_file_sink_compression_failures_total',
      'Rotated files a file sink left uncompressed because gzip failed (each said once).',
    ],
  ] as const;
  for (const [field, name, help] of counters)
    new Counter({
      name,
      help,
      labelNames: ['sink'],
      registers,
      collect() {
        for (const { sink, stats } of files())
          registration.incrementTo(this, { sink }, stats[field], `${name}\u0000${sink}`);
      },
    });
}

/** The HTTP sinks' requests and retries, as they happen. */
function registerDeliveryMetrics(registration: MetricsRegistration): DeliveryObserver {
  const { registers } = registration;
  const requests = new Histogram({
    name: 'kubediff_sink_request_duration_seconds',
    help: 'Deliveries of every sink but stdout (an HTTP request, a Kafka produce, a file write), by outcome (ok, error).',
    labelNames: ['sink', 'outcome'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const retries = new Counter({
    name: 'kubediff_sink_retries_total',
    help: 'Deliveries of every sink but stdout retried after a failure.',
    labelNames: ['sink'],
    registers,
  });
  return {
    request: (sink, seconds, outcome) => requests.observe({ sink, outcome }, seconds),
    retry: (sink) => retries.inc({ sink }),
  };
}

/** Stories told, closed early, and the events the open ones hold, per sink with stories on. */
function registerStoryMetrics(registration: MetricsRegistration, sinks: () => readonly Sink[]): void {
  const { registers } = registration;
  new Counter({
    name: 'kubediff_stories_total',
    help: 'Stories told by each sink with stories on (docs/stories.md).',
    labelNames: ['sink'],
    registers,
    collect() {
      for (const sink of sinks()) {
        const stories = sink.storyStats?.();
        if (stories)
          registration.incrementTo(this, { sink: sink.name }, stories.stories, `stories\u0000${sink.name}`);
      }
    },
  });
  new Counter({
    name: 'kubediff_stories_closed_early_total',
    help: 'Stories told before their owner went quiet: at their maximum length, or because the open stories reached their bound (buffer).',
    labelNames: ['sink', 'reason'],
    registers,
    collect() {
      for (const sink of sinks()) {
        const stories = sink.storyStats?.();
        if (!stories) continue;
        for (const [reason, count] of [
          ['max-length', stories.closedAtMaxLength],
          ['buffer', stories.closedAtBufferLimit],
        ] as const)
          registration.incrementTo(
            this,
            { sink: sink.name, reason },
            count,
            `stories-early\u0000${sink.name}\u0000${reason}`,
          );
      }
    },
  });
  new Gauge({
    name: 'kubediff_stories_open_events',
    help: 'Events held by the open stories of each sink (bounded by stories.maxOpenEvents).',
    labelNames: ['sink'],
    registers,
    collect() {
      this.reset();
      for (const sink of sinks()) {
        const stories = sink.storyStats?.();
        if (stories) this.set({ sink: sink.name }, stories.openEvents);
      }
    },
  });
}
