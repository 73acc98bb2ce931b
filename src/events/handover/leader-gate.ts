// Under --leader-elect, what a replica does with its events (docs/deploy.md, "High availability"): the
// leader delivers them and writes, on every Lease renewal and at release, a checkpoint (each informer's
// resourceVersion, annotation kubediff.io/checkpoint) up to which every event reached its sinks; a
// standby watches too and holds its events back, trimmed by the checkpoints its own watches have passed.
// At a takeover it delivers what the old leader did not reach and drops what it did. Promises: a clean
// handover loses and repeats nothing; after a crash, events of the last renewal period come again with
// the same id, and events still queued in the dead leader's sinks are lost. A floor above what the API
// server has handed out is refused (duplicates, never loss). Bounded: maxBuffered events, maxBufferedBytes;
// drops and refused or applied floors are logged once and counted. Tells a takeover observer what it hands on.

import type { Informer } from '../../informer/informer.ts';
import type { Lease } from '../../kube/leader-election.ts';
import { qualifiedName } from '../../kube/types.ts';
import { groupedCount } from '../../util/count-text.ts';
import type { Logger } from '../../util/log.ts';
import { MEMORY_SHARES } from '../../util/memory-budget.ts';
import { formatSize } from '../../util/size.ts';
import { type KubediffEvent, qualifiedResource } from '../event.ts';
import type { EventStage, Handover } from '../pipeline.ts';

export const CHECKPOINT_ANNOTATION = 'kubediff.io/checkpoint';
/** A standby never holds more than this many events (a leader that writes no checkpoint, say)… */
const DEFAULT_MAX_BUFFERED = 100_000;
/** …nor more than this many bytes of them (without a bound from the settings: the largest). */
const DEFAULT_MAX_BUFFERED_BYTES = MEMORY_SHARES.standbyBuffer.maxBytes;
/** Per event, besides its JSON (the event object, its entry): an estimate, on the high side. */
const ENTRY_OVERHEAD_BYTES = 200;
/**
 * How long a standby that records the history keeps the events a checkpoint covered: longer than a
 * leader's commits can lag behind its deliveries short of a stuck sink (whose events it loses anyway).
 */
const HISTORY_TRAIL_MS = 60_000;

export type Checkpoint = Map<string, bigint>;

function parseResourceVersion(text: string | undefined): bigint | undefined {
  return text !== undefined && /^\d{1,30}$/.test(text) ? BigInt(text) : undefined;
}

/** The checkpoint of a Lease, or an empty one (no annotation, or one we cannot read). */
export function checkpointOf(lease: Lease | undefined): Checkpoint {
  const checkpoint: Checkpoint = new Map();
  const text = lease?.metadata.annotations?.[CHECKPOINT_ANNOTATION];
  if (!text) return checkpoint;
  try {
    const parsed = JSON.parse(text) as { rv?: Record<string, unknown> };
    for (const [resource, value] of Object.entries(parsed.rv ?? {})) {
      const rv = typeof value === 'string' ? parseResourceVersion(value) : undefined;
      if (rv !== undefined) checkpoint.set(resource, rv);
    }
  } catch {
    // A checkpoint from a future version, or damaged: deliver everything (duplicates rather than loss).
  }
  return checkpoint;
}

/**
 * Where the informers are: per resource, the lowest resourceVersion among its informers (several with
 * -n), so that everything at or below it has been processed by all of them.
 */
export function checkpointAnnotation(informers: readonly Informer[]): string {
  const lowest = new Map<string, bigint | null>();
  for (const informer of informers) {
    const resource = qualifiedName(informer.type);
    const rv = informer.hasSynced ? parseResourceVersion(informer.resourceVersion) : undefined;
    const known = lowest.get(resource);
    if (rv === undefined || known === null) lowest.set(resource, null);
    else if (known === undefined || rv < known) lowest.set(resource, rv);
  }
  const rv: Record<string, string> = {};
  for (const [resource, value] of [...lowest].sort(([a], [b]) => a.localeCompare(b))) {
    if (value !== null) rv[resource] = value.toString();
  }
  return JSON.stringify({ v: 1, rv });
}

/**
 * True when `checkpoint` says this event's change was already processed by the leader that wrote it. An
 * OUTCOME never is: a checkpoint counts changes, and a verdict comes later than its change (after a
 * takeover an OUTCOME may be delivered twice, with the same id; never lost).
 */
function coveredBy(checkpoint: Checkpoint, event: KubediffEvent): boolean {
  if (event.type === 'OUTCOME') return false;
  const limit = checkpoint.get(qualifiedResource(event));
  if (limit === undefined) return false;
  const rv = parseResourceVersion(event.object.resourceVersion);
  return rv !== undefined && rv <= limit;
}

interface Held {
  event: KubediffEvent;
  bytes: number;
}

/** An event a checkpoint covered, kept for the history (see the top), and since when. */
interface Covered extends Held {
  at: number;
}

/** How a checkpoint's floors are checked against what the API server says (see the top). */
export interface CheckpointCheck {
  /** The highest resourceVersion of `resource` this replica's own watches have seen, if any. */
  seen(resource: string): bigint | undefined;
  /** The list resourceVersion of `resource` now (a LIST of one object); undefined when it cannot be had. */
  current(resource: string): Promise<bigint | undefined>;
}

/** Who records the leader's history (the state recorder): told when this replica leads and stops. */
export interface TakeoverObserver {
  /** Started leading; `events` (oldest first) were held back and are delivered now or were covered. */
  startedLeading(events: readonly KubediffEvent[]): void;
  stoppedLeading(): void;
}

/** The pipeline's handover stage under --leader-elect: delivers as the leader, holds back as a standby. */
export class LeaderGate implements EventStage<KubediffEvent> {
  readonly name = 'leader gate';
  /** Hands a held event to the rest of the pipeline (set when the pipeline is built). */
  private deliver: (event: KubediffEvent) => void = () => {};
  private readonly log: Logger;
  private readonly maxBuffered: number;
  private readonly maxBufferedBytes: number;
  private leading = false;
  /** Held back, oldest first, from `head` on (dropping the oldest does not copy the rest). */
  private buffer: Held[] = [];
  private head = 0;
  private bytes = 0;
  /** The previous leader's last checkpoint: what it already delivered. */
  private floor: Checkpoint = new Map();
  /** The history trail, oldest first: handed to the takeover observer if this replica takes over. */
  private covered: Covered[] = [];
  private coveredBytes = 0;
  private dropped = 0;
  private refused = 0;
  private skipped = 0;
  /** Each takeover and each loss of the Lease: a takeover still checking its floor checks this. */
  private generation = 0;
  private readonly takeover: TakeoverObserver | undefined;
  private readonly check: CheckpointCheck | undefined;
  private readonly now: () => number;

  constructor(options: {
    log: Logger;
    maxBuffered?: number;
    maxBufferedBytes?: number;
    takeover?: TakeoverObserver | undefined;
    /** How floors are checked; without it a checkpoint is taken as written (tests of the rest). */
    check?: CheckpointCheck | undefined;
    /** The clock of the history trail (tests). */
    now?: () => number;
  }) {
    this.log = options.log;
    this.takeover = options.takeover;
    this.check = options.check;
    this.now = options.now ?? Date.now;
    this.maxBuffered = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Events held back (a metric). */
  get buffered(): number {
    return this.buffer.length - this.head;
  }

  /** Bytes of the events held back, as accounted against maxBufferedBytes (a metric). */
  get bufferedBytes(): number {
    return this.bytes;
  }

  /** Events dropped because the buffer was full (a metric). */
  get droppedEvents(): number {
    return this.dropped;
  }

  /** Floors of a previous leader's checkpoint refused (a metric). */
  get refusedFloors(): number {
    return this.refused;
  }

  /** Events not delivered because the previous leader's checkpoint covered them (a metric). */
  get skippedEvents(): number {
    return this.skipped;
  }

  connect(next: (handover: Handover<KubediffEvent>) => void): (handover: Handover<KubediffEvent>) => void {
    this.deliver = (event) => next({ change: undefined, event });
    return (handover) => next(handover.event ? { ...handover, event: this.admit(handover.event) } : handover);
  }

  /**
   * The event to deliver now; undefined when it is held back (a standby) or was delivered by the
   * previous leader already.
   */
  private admit(event: KubediffEvent): KubediffEvent | undefined {
    if (this.leading) {
      if (!coveredBy(this.floor, event)) return event;
      this.skipped++;
      return undefined;
    }
    const bytes = ENTRY_OVERHEAD_BYTES + jsonLength(event);
    this.buffer.push({ event, bytes });
    this.bytes += bytes;
    // The history trail gives way first.
    if (this.coveredBytes > 0) this.trimTrail(this.now() - HISTORY_TRAIL_MS);
    while (this.buffered > this.maxBuffered || (this.bytes > this.maxBufferedBytes && this.buffered > 1)) {
      this.dropOldest();
    }
    return undefined;
  }

  private dropOldest(): void {
    const oldest = this.buffer[this.head] as Held;
    this.buffer[this.head] = undefined as unknown as Held;
    this.head++;
    this.bytes -= oldest.bytes;
    if (this.head > 1024 && this.head * 2 > this.buffer.length) this.hold(this.buffer.slice(this.head));
    if (this.dropped++ === 0) {
      this.log.warn(
        `standby: more than ${groupedCount(this.maxBuffered)} events or ${formatSize(this.maxBufferedBytes)} ` +
          'held back without a checkpoint from the leader; dropping the oldest (they are lost only if the leader ' +
          'dies without delivering them). Counted in kubediff_standby_dropped_events_total; logged once.',
      );
    }
  }

  /** Replaces what is held back. */
  private hold(held: Held[]): void {
    this.buffer = held;
    this.head = 0;
    this.bytes = held.reduce((sum, entry) => sum + entry.bytes, 0);
  }

  /** What is held back, oldest first. */
  private get heldEvents(): Held[] {
    return this.buffer.slice(this.head);
  }

  /**
   * Standby: the leader's latest checkpoint; what it covers will never be needed. Only floors this
   * replica's own watches have passed count here (the others, a leader slightly ahead or a forged
   * floor, wait for the next look).
   */
  observe(lease: Lease): void {
    const checkpoint = this.passed(checkpointOf(lease));
    this.floor = checkpoint;
    if (this.buffered > 0 && checkpoint.size > 0) {
      const held = this.heldEvents;
      this.hold(held.filter((entry) => !coveredBy(checkpoint, entry.event)));
      if (this.takeover) {
        const now = this.now();
        for (const entry of held) {
          if (!coveredBy(checkpoint, entry.event)) continue;
          this.covered.push({ ...entry, at: now });
          this.coveredBytes += entry.bytes;
        }
      }
    }
    this.trimTrail(this.now() - HISTORY_TRAIL_MS);
  }

  /** Drops trail entries older than `before`, and the oldest while the standby is over its byte bound. */
  private trimTrail(before: number): void {
    let drop = 0;
    let bytes = this.coveredBytes;
    while (
      drop < this.covered.length &&
      ((this.covered[drop] as Covered).at < before || this.bytes + bytes > this.maxBufferedBytes)
    ) {
      bytes -= (this.covered[drop] as Covered).bytes;
      drop++;
    }
    if (drop === 0) return;
    this.covered = this.covered.slice(drop);
    this.coveredBytes = bytes;
  }

  /** The floors of `checkpoint` this replica's own watches have passed. */
  private passed(checkpoint: Checkpoint): Checkpoint {
    const check = this.check;
    if (!check) return checkpoint;
    return new Map(
      [...checkpoint].filter(([resource, rv]) => {
        const seen = check.seen(resource);
        return seen !== undefined && rv <= seen;
      }),
    );
  }

  /**
   * Takes over: delivers what the previous leader had not, then everything new. Its checkpoint is
   * checked first (see the top); meanwhile events are held back as on a standby.
   */
  startLeading(previous: Lease | undefined): Promise<void> {
    const generation = ++this.generation;
    const claimed = checkpointOf(previous);
    if (!this.check) {
      this.lead(claimed);
      return Promise.resolve();
    }
    return this.checked(claimed, this.check).then((floor) => {
      if (generation === this.generation) this.lead(floor);
    });
  }

  /** The floors of a previous leader's checkpoint that the API server confirms; the others refused. */
  private async checked(claimed: Checkpoint, check: CheckpointCheck): Promise<Checkpoint> {
    const floor: Checkpoint = new Map();
    for (const [resource, rv] of claimed) {
      const seen = check.seen(resource);
      if (seen !== undefined && rv <= seen) {
        floor.set(resource, rv);
        continue;
      }
      const current = await check.current(resource).catch(() => undefined);
      if (current !== undefined && rv <= current) {
        floor.set(resource, rv);
        continue;
      }
      this.refused++;
      this.log.warn(
        `took over: the previous leader's checkpoint in the Lease says ${resource} was delivered up to resourceVersion ${rv}, ` +
          (current === undefined
            ? 'which the API server could not confirm'
            : `beyond the ${current} the API server is at`) +
          `; refused (someone other than kubediff may have written it), so what this replica held back of ${resource} is delivered (repeats rather than loss). Counted in kubediff_checkpoint_refused_total.`,
      );
    }
    return floor;
  }

  private lead(floor: Checkpoint): void {
    this.floor = floor;
    const held = this.heldEvents.map((entry) => entry.event);
    const pending = held.filter((event) => !coveredBy(this.floor, event));
    const skipped = held.length - pending.length;
    this.skipped += skipped;
    const covered = this.covered.map((entry) => entry.event);
    this.hold([]);
    this.covered = [];
    this.coveredBytes = 0;
    this.leading = true;
    if (pending.length > 0 || skipped > 0) {
      this.log.info(
        `took over: delivering ${pending.length} change${pending.length === 1 ? '' : 's'} the previous leader had not processed` +
          (skipped > 0 ? ` (${skipped} it had are skipped)` : ''),
      );
    }
    for (const event of pending) this.deliver(event);
    this.takeover?.startedLeading([...covered, ...held]);
  }

  /** Lost the Lease: hold events back again until we lead. */
  stopLeading(): void {
    this.generation++;
    this.leading = false;
    this.takeover?.stoppedLeading();
  }
}

/** The size of `event` as JSON; 0 for one JSON.stringify cannot serialize (no sink could either). */
function jsonLength(event: KubediffEvent): number {
  try {
    return JSON.stringify(event).length;
  } catch {
    return 0;
  }
}
