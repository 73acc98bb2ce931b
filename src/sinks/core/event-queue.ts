// A sink's bounded queue. Up to `capacity` events (and `maxBytes` of them,
// serialized) wait individually, in the order they came. When the queue is
// full, further events are folded into a digest at its tail instead of being
// dropped; the digest keeps absorbing events until the queue has drained to
// half its limits (so a sink that is just keeping up does not alternate
// between single events and tiny digests). Order is kept: a digest stands
// where its events would have been. Each event is serialized once, here: the
// sink sends that text.
import type { KubediffEvent } from '../../events/event.ts';
import { eventJson, eventJsonBytes } from '../../events/event-json.ts';
import { Digest } from './digest.ts';

export type QueueEntry =
  /** `bytes`: the JSON's UTF-8 size, for the queue's byte budget and a batch's. */
  | { kind: 'event'; event: KubediffEvent; json: string; bytes: number; queuedAt: number }
  | { kind: 'digest'; digest: Digest<KubediffEvent>; queuedAt: number };

export interface EventQueueOptions {
  /** Events held individually before folding into a digest. */
  capacity: number;
  /** …and at most this many bytes of them (as JSON). Default: no limit. */
  maxBytes?: number;
  /** Events an overflow digest keeps in full (the most recent). */
  digestRetain: number;
  /** An overflow begins: the first event is folded into a new digest. */
  onOverflow?: (digest: Digest<KubediffEvent>) => void;
  /** An event folded into a digest that does not keep it in full (write it to the dead-letter file). */
  onEvict?: (event: KubediffEvent) => void;
  now?: () => number;
}

export class EventQueue {
  private readonly options: EventQueueOptions;
  private readonly now: () => number;
  private entries: QueueEntry[] = [];
  private head = 0;
  private individual = 0;
  private bytes = 0;
  private folded = 0;
  /** The digest at the tail that still absorbs events, if any. */
  private open: Digest<KubediffEvent> | undefined;

  constructor(options: EventQueueOptions) {
    this.options = { ...options, capacity: Math.max(1, options.capacity) };
    this.now = options.now ?? Date.now;
  }

  /** Entries waiting (an event or a digest each). */
  get length(): number {
    return this.entries.length - this.head;
  }

  /** Events waiting, whether individually or in a digest. */
  get pendingEvents(): number {
    return this.individual + this.folded;
  }

  /** Events waiting individually. */
  get individualEvents(): number {
    return this.individual;
  }

  /** Bytes (JSON) of the events waiting individually. */
  get individualBytes(): number {
    return this.bytes;
  }

  /** Returns 'folded' when the event went into a digest rather than its own slot. */
  push(event: KubediffEvent): 'queued' | 'folded' {
    const { capacity } = this.options;
    const maxBytes = this.options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (this.open && (this.individual > capacity / 2 || this.bytes > maxBytes / 2)) {
      this.open.add(event);
      this.folded++;
      return 'folded';
    }
    const json = eventJson(event);
    const bytes = eventJsonBytes(event);
    // One event larger than the whole budget still goes through on its own when the queue is empty.
    const fits = this.bytes + bytes <= maxBytes || this.individual === 0;
    if (this.individual < capacity && fits) {
      this.open = undefined;
      this.entries.push({ kind: 'event', event, json, bytes, queuedAt: this.now() });
      this.individual++;
      this.bytes += bytes;
      return 'queued';
    }
    const digest = new Digest<KubediffEvent>({
      retain: this.options.digestRetain,
      ...(this.options.onEvict ? { onEvict: this.options.onEvict } : {}),
    });
    this.entries.push({ kind: 'digest', digest, queuedAt: this.now() });
    this.open = digest;
    this.options.onOverflow?.(digest);
    digest.add(event);
    this.folded++;
    return 'folded';
  }

  peek(): QueueEntry | undefined {
    return this.entries[this.head];
  }

  shift(): QueueEntry | undefined {
    const entry = this.entries[this.head];
    if (entry === undefined) return undefined;
    this.entries[this.head] = undefined as unknown as QueueEntry;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    if (entry.kind === 'event') {
      this.individual--;
      this.bytes -= entry.bytes;
    } else {
      this.folded -= entry.digest.count;
      if (entry.digest === this.open) this.open = undefined;
    }
    return entry;
  }

  /**
   * Up to `max` events from the head, stopping at a digest, whose JSON takes at most `maxBytes` bytes
   * (UTF-8) together; always at least one, however large: one event alone is the receiver's to judge.
   */
  takeEvents(max: number, maxBytes = Number.POSITIVE_INFINITY): Extract<QueueEntry, { kind: 'event' }>[] {
    const events: Extract<QueueEntry, { kind: 'event' }>[] = [];
    let bytes = 0;
    while (events.length < max) {
      const entry = this.peek();
      if (entry?.kind !== 'event') break;
      if (events.length > 0 && bytes + entry.bytes > maxBytes) break;
      bytes += entry.bytes;
      this.shift();
      events.push(entry);
    }
    return events;
  }

  /** Everything still waiting, emptying the queue. */
  drain(): QueueEntry[] {
    const rest = this.entries.slice(this.head);
    this.entries = [];
    this.head = 0;
    this.individual = 0;
    this.bytes = 0;
    this.folded = 0;
    this.open = undefined;
    return rest;
  }
}
