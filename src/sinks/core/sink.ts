// Where events go. Data flows one way: event builder → router → each sink's
// own bounded queue → delivery. A sink never blocks and never throws into
// the watch: it queues, delivers on its own schedule and accounts for every
// event it accepted (delivered, summarized in a digest, dead-lettered or
// reported as not delivered).
import type { ChangeEvent, OutcomeEvent } from '../../events/event.ts';
import type { StoryStats } from '../../events/story.ts';

export interface Sink {
  /** For logs and the shutdown report; never contains a secret (URLs are elided). */
  readonly name: string;
  /** Accepts one event. Returns at once; never throws. */
  deliver(event: ChangeEvent): void;
  /**
   * Accepts one OUTCOME (docs/outcomes.md), counted like an event. Returns at once; never throws. A sink
   * without it is not offered OUTCOMEs.
   */
  deliverOutcome?(event: OutcomeEvent): void;
  /**
   * Stops accepting events, delivers what is queued or in flight within `timeoutMs`, then releases
   * every socket, timer and file it holds. Resolves (never rejects) with what became of the events.
   */
  close(timeoutMs: number): Promise<SinkReport>;
  /** The counters so far. */
  stats(): SinkStats;
  /** With stories on (docs/stories.md): what its story builder has done. */
  storyStats?(): StoryStats | undefined;
  /** A sink that writes rotated files (docs/sinks.md#file): what they take on disk and what rotation did. */
  fileStats?(): SinkFileStats;
  /**
   * A sink that neither queues nor drops (the watch's own stdout): undefined while its reader keeps up,
   * else a promise, resolved once it has drained, that the informers await before reading on.
   */
  flowControl?(): Promise<void> | undefined;
}

/** What a sink's rotated files take, for the metrics; counters since start. */
export interface SinkFileStats {
  /** The live file. */
  path: string;
  /** Bytes of the live file and its rotated (maybe compressed) files. */
  bytes: number;
  rotations: number;
  /** Rotated files deleted to keep maxFiles. */
  deleted: number;
  /** Rotated files left uncompressed because gzip failed (said once each). */
  compressionFailures: number;
}

/** Every event a sink accepted ends in exactly one of these counters (or is still pending). */
export interface SinkStats {
  /** Events handed to the sink. */
  accepted: number;
  /** Delivered on their own (alone, in a batch or in a multi-event message). */
  delivered: number;
  /** Delivered as part of a digest (counted, maybe not shown in full). */
  summarized: number;
  /** Not delivered; written to the dead-letter file. */
  deadLettered: number;
  /** Not delivered and not written anywhere (no dead-letter file, or writing it failed). */
  lost: number;
  /** Still queued or in flight. */
  pending: number;
  /** Digests sent. */
  digests: number;
  /** Times a queue reached its bound and began folding events into a digest (each said once in the log). */
  overflows: number;
}

export interface SinkReport {
  name: string;
  stats: SinkStats;
  /** Where dead letters went, if anywhere. */
  deadLetterFile?: string;
}

export function emptyStats(): SinkStats {
  return {
    accepted: 0,
    delivered: 0,
    summarized: 0,
    deadLettered: 0,
    lost: 0,
    pending: 0,
    digests: 0,
    overflows: 0,
  };
}

/** Events that were not delivered, in full or in a digest. */
export function undelivered(stats: SinkStats): number {
  return stats.deadLettered + stats.lost + stats.pending;
}
