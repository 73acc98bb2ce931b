// The recorder's queue of writes: every store change and reported event, serialized, in order, each with
// the delivery mark the pipeline gave it. What may be committed is the longest prefix whose marks every
// sink has reached, so the store never records as reported what a kill -9 could still keep from a sink;
// a baseline's object waits for no sink and may pass entries that do, unless one before it must be
// applied first. Per type it knows whether the first LIST's objects are all committed (a complete
// inventory).
import type { DeliveryMark } from '../events/pipeline.ts';
import type { SerializedWrite } from './store.ts';

/** Per sink, in the router's order: events finished with so far (accepted − pending). */
export interface DeliveryProgress {
  finished(): number[];
  /** Per sink, events accepted so far (the mark of events handed over outside a change). */
  accepted?(): number[];
  /** The sinks' names, in the same order (for the log). */
  names?(): string[];
}

/** Sinks' progress from their counters (src/sinks/core/sink.ts), in the router's order. */
export function sinkProgress(
  sinks: () => readonly { name: string; stats(): { accepted: number; pending: number } }[],
): DeliveryProgress {
  return {
    finished: () =>
      sinks().map((sink) => {
        const stats = sink.stats();
        return stats.accepted - stats.pending;
      }),
    accepted: () => sinks().map((sink) => sink.stats().accepted),
    names: () => sinks().map((sink) => sink.name),
  };
}

export interface QueuedWrite {
  write: SerializedWrite;
  /** Per sink, the accepted count that must be finished before this entry may be committed. */
  mark: DeliveryMark;
  /** What the entry costs in memory, as the backlog bound accounts for it. */
  bytes: number;
  /** Its place in the sequence of entries ever queued. */
  seq: number;
  /** An object of a baseline (no event): it waits for no sink, and may be committed past those that do. */
  baseline: boolean;
  /** When it was queued (Date.now()): how long the oldest has waited is a fleet's lag. */
  at: number;
  /** The last entry of a change read in its stream's order: where it was read (followed-versions.ts). */
  followed?: FollowedAt | undefined;
}

/** Where in a type's stream a change was read: its namespace (for -n) and resourceVersion. */
export interface FollowedAt {
  namespace: string | undefined;
  resourceVersion: string;
}

/** At most this many entries per transaction, so that a huge baseline does not stall the event loop at once. */
export const MAX_BATCH = 5_000;

/** Per entry, besides its JSON: the entry, its mark and its keys (an estimate, on the high side). */
const ENTRY_OVERHEAD_BYTES = 200;

export class WriteQueue {
  private queued: QueuedWrite[] = [];
  private totalBytes = 0;
  private nextSeq = 0;
  private baselines = 0;
  /** Entries waiting, per resource type. */
  private readonly perResource = new Map<string, number>();
  /** Per type whose first LIST ended: the seq it ended before, and how many of its entries still wait. */
  private readonly firstLists = new Map<string, { until: number; left: number }>();
  /**
   * Types an entry of whose first LIST left the queue without being committed (dropped at the backlog
   * bound, or left at exit): their recorded objects are not a complete inventory, whatever comes after.
   */
  private readonly incompleteFirstLists = new Set<string>();

  /** The entries waiting, oldest first. */
  get entries(): readonly QueuedWrite[] {
    return this.queued;
  }

  get length(): number {
    return this.queued.length;
  }

  /** What the entries waiting cost in memory. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** When the oldest entry waiting was queued (Date.now()); undefined when none waits. */
  get oldestAt(): number | undefined {
    return this.queued[0]?.at;
  }

  /** Baseline entries waiting. */
  get baselinesWaiting(): number {
    return this.baselines;
  }

  push(write: SerializedWrite, mark: DeliveryMark, baseline = false, followed?: FollowedAt): void {
    const bytes = ENTRY_OVERHEAD_BYTES + sizeOf(write);
    this.queued.push({ write, mark, bytes, seq: this.nextSeq++, baseline, at: Date.now(), followed });
    this.totalBytes += bytes;
    if (baseline) this.baselines++;
    const resource = resourceOf(write);
    if (resource !== undefined) this.perResource.set(resource, (this.perResource.get(resource) ?? 0) + 1);
  }

  /**
   * What a commit may take now, in queue order, at most `limit` entries: the longest prefix whose marks
   * every sink has reached in `finished`, then the baseline entries past it that nothing waiting must
   * precede: none past a discovery's note that waits, none for an object with an entry waiting before it.
   */
  committable(finished: readonly number[], limit: number): QueuedWrite[] {
    const taken: QueuedWrite[] = [];
    let left = this.baselines;
    let index = 0;
    for (; index < this.queued.length && taken.length < limit; index++) {
      const entry = this.queued[index] as QueuedWrite;
      if (!reached(finished, entry.mark)) break;
      taken.push(entry);
      if (entry.baseline) left--;
    }
    const waiting = new Set<string>();
    for (; index < this.queued.length && taken.length < limit && left > 0; index++) {
      const entry = this.queued[index] as QueuedWrite;
      const { write } = entry;
      if (write.kind === 'resources' || write.kind === 'forget') break;
      if (write.kind === 'event') continue;
      const key = `${write.resource}/${write.key}`;
      if (entry.baseline && !waiting.has(key)) {
        taken.push(entry);
        left--;
      } else waiting.add(key);
    }
    return taken;
  }

  /** The oldest `count` entries, whatever their marks. */
  oldest(count: number): QueuedWrite[] {
    return this.queued.slice(0, count);
  }

  /** Takes committed entries out: a prefix, or a prefix and baseline entries past it. */
  remove(batch: readonly QueuedWrite[]): void {
    if (batch.length === 0) return;
    if (this.queued[batch.length - 1] === batch.at(-1)) this.queued.splice(0, batch.length);
    else {
      const taken = new Set(batch);
      this.queued = this.queued.filter((entry) => !taken.has(entry));
    }
    this.settled(batch, true);
  }

  /** Takes out, oldest first, the entries `drop` chooses (it sees each in turn); returns them. */
  dropWhere(drop: (entry: QueuedWrite) => boolean): QueuedWrite[] {
    const dropped: QueuedWrite[] = [];
    this.queued = this.queued.filter((entry) => {
      if (!drop(entry)) return true;
      dropped.push(entry);
      return false;
    });
    this.settled(dropped, false);
    return dropped;
  }

  /** Empties the queue; returns what it held. */
  clear(): QueuedWrite[] {
    const left = this.queued;
    this.queued = [];
    this.settled(left, false);
    return left;
  }

  /** A first LIST of `resource` ended (of its last informer so far): every entry of it is queued by now. */
  firstListEnded(resource: string): void {
    this.firstLists.set(resource, { until: this.nextSeq, left: this.perResource.get(resource) ?? 0 });
  }

  /**
   * Whether every entry of `resource`'s first LIST is committed once `batch` is; never when one of them
   * left the queue uncommitted (dropped, or left at exit).
   */
  firstListDone(resource: string, batch: readonly QueuedWrite[]): boolean {
    const firstList = this.firstLists.get(resource);
    if (!firstList || this.incompleteFirstLists.has(resource)) return false;
    let left = firstList.left;
    for (const entry of batch)
      if (entry.seq < firstList.until && resourceOf(entry.write) === resource) left--;
    return left <= 0;
  }

  /** Entries out of the queue: `committed`, or not (dropped, left). */
  private settled(entries: readonly QueuedWrite[], committed: boolean): void {
    for (const entry of entries) {
      this.totalBytes -= entry.bytes;
      if (entry.baseline) this.baselines--;
      const resource = resourceOf(entry.write);
      if (resource === undefined) continue;
      this.perResource.set(resource, (this.perResource.get(resource) ?? 1) - 1);
      const firstList = this.firstLists.get(resource);
      // An entry queued before its type's first LIST ended (or before it ends) is one of that LIST's.
      const ofFirstList = firstList === undefined || entry.seq < firstList.until;
      if (firstList && ofFirstList) firstList.left--;
      if (!committed && ofFirstList) this.incompleteFirstLists.add(resource);
    }
  }
}

/** Whether every sink has finished what `mark` says it had accepted. */
export function reached(finished: readonly number[], mark: DeliveryMark): boolean {
  for (let i = 0; i < mark.length; i++) if ((finished[i] ?? 0) < (mark[i] ?? 0)) return false;
  return true;
}

/** The sinks (indices) that have not finished up to `mark`. */
export function lagging(finished: readonly number[], mark: DeliveryMark): number[] {
  return mark.flatMap((needed, index) => ((finished[index] ?? 0) < needed ? [index] : []));
}

/** The resource type a write is about; none for a discovery's note. */
/** The resource type a write is about; undefined for a discovery's note of every type. */
export function resourceOf(write: SerializedWrite): string | undefined {
  return write.kind === 'resources' ? undefined : write.resource;
}

/** What an entry's JSON costs in memory. */
function sizeOf(write: SerializedWrite): number {
  switch (write.kind) {
    case 'delete':
    case 'forget':
      return write.resource.length;
    case 'resources':
      return write.entries.reduce((sum, entry) => sum + entry.json.length + entry.resource.length, 0);
    case 'event':
      return write.json.length + write.search.length;
    default:
      return write.json.length;
  }
}
