// The bounded backlog of a sink that delivers events one by one or in
// batches (webhooks, Kafka): its EventQueue, what happens when the queue is
// full (further events folded into a digest, those the digest does not keep
// written to the dead-letter file as they are folded, one warning per
// overflow episode and one line when it has caught up), and the accounting
// of events that will not be delivered (dead-letter file, else lost).
import type { KubediffEvent } from '../../events/event.ts';
import { plural } from '../../util/count-text.ts';
import { SINK_SPLIT } from '../../util/memory-budget.ts';
import { formatSize } from '../../util/size.ts';
import type { DeadLetterFile } from './dead-letter.ts';
import { abandonDigest, type TroubleReport } from './delivery.ts';
import type { Digest } from './digest.ts';
import { EventQueue, type QueueEntry } from './event-queue.ts';
import type { SinkStats } from './sink.ts';

export interface BacklogOptions {
  /** Events waiting individually before new ones are folded into a digest. Default 10,000… */
  capacity?: number;
  /** …or this many bytes of them (as JSON), whichever comes first. Default 64 MiB (the settings give each sink its share of the heap). */
  maxBytes?: number;
  /** Events a digest carries in full (the most recent). Default 20. */
  digestRetain?: number;
}

const BACKLOG_DEFAULTS = { capacity: 10_000, maxBytes: SINK_SPLIT.queue.maxBytes, digestRetain: 20 };

export class SinkBacklog {
  readonly queue: EventQueue;
  /** Events waiting individually before new ones are folded into a digest. */
  readonly capacity: number;
  private readonly sink: string;
  private readonly counters: SinkStats;
  private readonly trouble: TroubleReport;
  private readonly deadLetter: DeadLetterFile | undefined;
  /** Events folded into each digest that were written to the dead-letter file when evicted from it. */
  private readonly evictedWritten = new WeakMap<Digest<KubediffEvent>, number>();
  private overflowing = false;

  constructor(
    sink: string,
    options: BacklogOptions | undefined,
    shared: { counters: SinkStats; trouble: TroubleReport; deadLetter: DeadLetterFile | undefined },
  ) {
    this.sink = sink;
    this.counters = shared.counters;
    this.trouble = shared.trouble;
    this.deadLetter = shared.deadLetter;
    let currentDigest: Digest<KubediffEvent> | undefined;
    this.capacity = Math.max(1, options?.capacity ?? BACKLOG_DEFAULTS.capacity);
    this.queue = new EventQueue({
      capacity: this.capacity,
      maxBytes: options?.maxBytes ?? BACKLOG_DEFAULTS.maxBytes,
      digestRetain: options?.digestRetain ?? BACKLOG_DEFAULTS.digestRetain,
      onOverflow: (digest) => {
        currentDigest = digest;
        this.startOverflow();
      },
      onEvict: (event) => {
        if (!this.deadLetter || !currentDigest) return;
        const written = this.deadLetter.writeEvents(
          this.sink,
          `queue full: summarized in digest ${currentDigest.id}, not delivered individually`,
          [event],
        );
        if (written)
          this.evictedWritten.set(currentDigest, (this.evictedWritten.get(currentDigest) ?? 0) + 1);
      },
    });
  }

  /** Queues an event (counted lost, and the error rethrown, when it cannot be serialized). */
  push(event: KubediffEvent): void {
    try {
      this.queue.push(event);
    } catch (error) {
      // The router reports it (src/util/event-failures.ts).
      this.counters.lost++;
      throw error;
    }
  }

  /** After a delivery: the end of an overflow episode is said once. */
  settled(): void {
    if (this.overflowing && this.queue.length === 0) {
      this.overflowing = false;
      this.trouble.info('caught up with the backlog.');
    }
  }

  /** Events that will not be delivered: to the dead-letter file, else counted lost. */
  abandon(events: readonly KubediffEvent[], reason: string): void {
    if (this.deadLetter?.writeEvents(this.sink, reason, events)) this.counters.deadLettered += events.length;
    else this.counters.lost += events.length;
  }

  abandonDigest(digest: Digest<KubediffEvent>, reason: string): void {
    const written = this.evictedWritten.get(digest) ?? 0;
    abandonDigest(this.counters, this.deadLetter, this.sink, reason, digest, written);
  }

  /** Everything still queued, at shutdown. */
  abandonAll(reason: string): void {
    for (const entry of this.queue.drain()) this.abandonEntry(entry, reason);
  }

  private abandonEntry(entry: QueueEntry, reason: string): void {
    if (entry.kind === 'event') this.abandon([entry.event], reason);
    else this.abandonDigest(entry.digest, reason);
  }

  private startOverflow(): void {
    this.counters.overflows++;
    if (this.overflowing) return;
    this.overflowing = true;
    const file = this.deadLetter;
    this.trouble.warn(
      `${plural(this.queue.individualEvents, 'event')} (${formatSize(this.queue.individualBytes)}) waiting (the receiver is slower than the cluster, or failing); ` +
        `further events are summarized in a digest${file ? ` and written in full to ${file.path}` : ''} until it catches up.`,
    );
  }
}
