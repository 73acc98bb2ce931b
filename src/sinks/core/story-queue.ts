// The closed stories of a chat sink waiting for their message (chat.ts), bounded. A platform that answers
// "later" (429 with a long Retry-After) for hours must not make them pile up: at most `capacity` events
// and `capacityBytes` of them (as JSON) wait in stories of their own (or one story alone, however large:
// the story builder bounds a story); beyond that, further stories are
// folded into one digest at the tail (counts by kind, namespace and type, and the most recent events in
// full), and the events the digest does not keep are written to the dead-letter file as they are
// folded, as the webhook and Kafka backlogs do (backlog.ts). Each overflow is said once (and counted:
// kubediff_sink_overflows_total); the digest is told as one message when its turn comes, so every event
// is delivered, summarized, dead-lettered or counted lost, never dropped in silence.
import type { Story } from '../../events/story.ts';
import { plural } from '../../util/count-text.ts';
import { formatSize } from '../../util/size.ts';
import type { DeadLetterFile } from './dead-letter.ts';
import { abandonDigest, type TroubleReport } from './delivery.ts';
import { Digest } from './digest.ts';
import type { SinkStats } from './sink.ts';

/** One message's worth: a story (its events as a batch, for the accounting), or a digest of several. */
export interface WaitingMessage {
  story?: Story;
  batch: Digest;
}

export interface StoryQueueOptions {
  sink: string;
  /** Events held in full, in stories and in each digest. */
  capacity: number;
  /** …and at most this many bytes of them (as JSON). */
  capacityBytes: number;
  counters: SinkStats;
  trouble: TroubleReport;
  deadLetter: DeadLetterFile | undefined;
}

export class StoryQueue {
  private readonly options: StoryQueueOptions;
  private entries: WaitingMessage[] = [];
  /** Events and bytes held by the stories waiting on their own (the digest at the tail aside). */
  private storyEvents = 0;
  private storyBytes = 0;
  /** The digest at the tail that absorbs stories while the queue is at its bound. */
  private overflow: Digest | undefined;
  private overflowing = false;
  /** Events of each digest written to the dead-letter file when they dropped out of it. */
  private readonly written = new WeakMap<Digest, number>();

  constructor(options: StoryQueueOptions) {
    this.options = options;
  }

  /** Messages waiting. */
  get length(): number {
    return this.entries.length;
  }

  /** Events waiting, in stories or in a digest (the digest's count, not only what it holds in full). */
  get pendingEvents(): number {
    return this.entries.reduce((sum, entry) => sum + entry.batch.count, 0);
  }

  /**
   * A bounded batch: events that drop out of it in full go to the dead-letter file (and are counted as
   * written there, for abandon()).
   */
  newBatch(): Digest {
    const digest: Digest = new Digest({
      retain: this.options.capacity,
      retainBytes: this.options.capacityBytes,
      onEvict: (event) => {
        const file = this.options.deadLetter;
        if (
          file?.writeEvents(
            this.options.sink,
            `queue full: summarized in digest ${digest.id}, not delivered individually`,
            [event],
          )
        )
          this.written.set(digest, (this.written.get(digest) ?? 0) + 1);
      },
    });
    return digest;
  }

  /** A closed story joins the queue: on its own while it fits, else folded into the digest at the tail. */
  push(story: Story): void {
    const batch = this.newBatch();
    for (const event of story.events) batch.add(event);
    const { capacity, capacityBytes } = this.options;
    const fits = this.storyEvents + batch.count <= capacity && this.storyBytes + batch.bytes <= capacityBytes;
    // A story larger than the whole bound still waits on its own when no other does (the story builder
    // bounds one story: stories.maxOpenEvents, stories.maxOpenSize).
    if (this.overflow === undefined && (fits || this.storyEvents === 0)) {
      this.entries.push({ story, batch });
      this.storyEvents += batch.count;
      this.storyBytes += batch.bytes;
      return;
    }
    if (this.overflow === undefined) {
      this.overflow = this.newBatch();
      this.entries.push({ batch: this.overflow });
      this.startOverflow();
    }
    this.merge(this.overflow, batch);
  }

  /**
   * The next message: the oldest story, or, when more than `backlog` messages wait, everything as one
   * digest (the platform's pace would take too long otherwise).
   */
  next(backlog: number): WaitingMessage | undefined {
    if (this.entries.length > backlog) {
      const batch = this.newBatch();
      for (const entry of this.entries) this.merge(batch, entry.batch);
      this.clear();
      return { batch };
    }
    const entry = this.entries.shift();
    if (entry === undefined) return undefined;
    if (entry.story) {
      this.storyEvents -= entry.batch.count;
      this.storyBytes -= entry.batch.bytes;
    }
    if (entry.batch === this.overflow) this.overflow = undefined;
    if (this.entries.length === 0) this.caughtUp();
    return entry;
  }

  /**
   * A batch that will not be delivered: the events it holds to the dead-letter file, with those written
   * there when they dropped out of it; the rest counted lost.
   */
  abandon(batch: Digest, reason: string): void {
    if (batch.isEmpty) return;
    const { counters, deadLetter, sink } = this.options;
    abandonDigest(counters, deadLetter, sink, reason, batch, this.written.get(batch) ?? 0);
  }

  /** Everything still waiting, at shutdown. */
  abandonAll(reason: string): void {
    const entries = this.entries;
    this.clear();
    for (const entry of entries) this.abandon(entry.batch, reason);
  }

  /** Folds `from` into `into`, carrying over the count of its events already in the dead-letter file. */
  merge(into: Digest, from: Digest): void {
    into.merge(from);
    const carried = this.written.get(from) ?? 0;
    if (carried > 0) this.written.set(into, (this.written.get(into) ?? 0) + carried);
  }

  private clear(): void {
    this.entries = [];
    this.storyEvents = 0;
    this.storyBytes = 0;
    this.overflow = undefined;
    this.caughtUp();
  }

  private startOverflow(): void {
    this.options.counters.overflows++;
    if (this.overflowing) return;
    this.overflowing = true;
    const file = this.options.deadLetter;
    this.options.trouble.warn(
      `${plural(this.storyEvents, 'event')} (${formatSize(this.storyBytes)}) of closed stories are waiting for their messages (the platform asks to wait, or fails); ` +
        `further stories are summarized in one digest${file ? ` and their events written in full to ${file.path}` : ''} until it catches up.`,
    );
  }

  private caughtUp(): void {
    if (!this.overflowing) return;
    this.overflowing = false;
    this.options.trouble.info('caught up with the waiting stories.');
  }
}
