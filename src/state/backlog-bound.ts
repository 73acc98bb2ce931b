// The recorder's memory bound: at most maxBytes of serialized writes wait. At the bound the oldest go,
// down to half of it: committed before every sink has finished with them (`early`: a kill -9 meanwhile
// can lose, for that sink only, changes it still had queued), or, when the store cannot take them,
// dropped (`drop`: the next start's relist finds the objects again; a discovery's note is never dropped).
// Each is counted and logged once.

import type { Logger } from '../util/log.ts';
import { MEMORY_SHARES } from '../util/memory-budget.ts';
import { formatSize } from '../util/size.ts';
import { type DeliveryProgress, lagging, type QueuedWrite, reached, type WriteQueue } from './write-queue.ts';

/** Without a bound from the settings (their share of the heap), the largest. */
export const DEFAULT_MAX_BACKLOG_BYTES = MEMORY_SHARES.stateBacklog.maxBytes;

export class BacklogBound {
  readonly maxBytes: number;
  private readonly log: Logger;
  /** Where the store is, for the log. */
  private readonly label: string;
  private unconfirmedCount = 0;
  private droppedCount = 0;

  constructor(options: { maxBytes?: number | undefined; log: Logger; label: string }) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BACKLOG_BYTES;
    this.log = options.log;
    this.label = options.label;
  }

  /** Entries committed before every sink had finished with them (kubediff_state_unconfirmed_writes_total). */
  get unconfirmed(): number {
    return this.unconfirmedCount;
  }

  /** Entries not recorded at all (kubediff_state_dropped_writes_total). */
  get dropped(): number {
    return this.droppedCount;
  }

  /** The queue holds more than the bound. */
  exceeded(queue: WriteQueue): boolean {
    return queue.bytes > this.maxBytes;
  }

  /** The queue holds more than twice the bound (a commit in flight meanwhile). */
  farExceeded(queue: WriteQueue): boolean {
    return queue.bytes > 2 * this.maxBytes;
  }

  /**
   * The oldest entries, down to half the bound, to commit now whether or not the sinks have finished with
   * them; those that a sink had not are counted, and said once, naming the sinks behind.
   */
  early(queue: WriteQueue, progress: DeliveryProgress): QueuedWrite[] {
    const finished = progress.finished();
    let count = 0;
    let bytes = queue.bytes;
    let early = 0;
    let behind: number[] = [];
    for (const entry of queue.entries) {
      if (bytes <= this.maxBytes / 2) break;
      if (!reached(finished, entry.mark)) {
        if (early === 0) behind = lagging(finished, entry.mark);
        early++;
      }
      bytes -= entry.bytes;
      count++;
    }
    if (early > 0) {
      if (this.unconfirmedCount === 0) {
        const names = progress.names?.() ?? [];
        const sinks = behind.map((index) => names[index] ?? `sink ${index + 1}`).join(', ');
        this.log.warn(
          `state: ${sinks || 'a sink'} is more than ${formatSize(this.maxBytes)} of changes behind; the state store ` +
            'records them before it has delivered them, so that memory stays bounded. A kill -9 now could lose, ' +
            'for that sink only, what it still has queued (a clean stop reports it or writes it to the dead-letter ' +
            'file, as always). Counted in kubediff_state_unconfirmed_writes_total; logged once.',
        );
      }
      this.unconfirmedCount += early;
    }
    return queue.oldest(count);
  }

  /**
   * Drops the oldest entries down to half the bound, but those being written (`inFlight`) and the
   * discovery's notes; counted, said once. Returns how many.
   */
  drop(queue: WriteQueue, inFlight: ReadonlySet<QueuedWrite>): QueuedWrite[] {
    let bytes = queue.bytes;
    const dropped = queue.dropWhere((entry) => {
      if (bytes <= this.maxBytes / 2 || inFlight.has(entry)) return false;
      if (entry.write.kind === 'resources' || entry.write.kind === 'forget') return false;
      bytes -= entry.bytes;
      return true;
    });
    if (dropped.length === 0) return dropped;
    if (this.droppedCount === 0) {
      this.log.warn(
        `state: ${this.label} has not taken the changes of the last ${formatSize(this.maxBytes)}; ` +
          'the oldest are dropped so that memory stays bounded: their history is lost, and the next start reports ' +
          'their objects again where they differ. Counted in kubediff_state_dropped_writes_total; logged once.',
      );
    }
    this.droppedCount += dropped.length;
    return dropped;
  }

  /** Entries not recorded for another reason (left at exit, or held when this replica stopped leading). */
  countDropped(count: number): void {
    this.droppedCount += count;
  }
}
