// Commits the recorder's write queue (write-queue.ts) to the store: one transaction at a time, each of
// the entries every sink has finished with (at most MAX_BATCH), together with the types they complete
// as a listed inventory (listed-types.ts). The queue's memory is bounded (backlog-bound.ts); a store that
// cannot take writes for a while keeps the queue and is retried (store-outage.ts); any other failure
// stops recording (and the watch goes on). Leader-elected, a commit first takes the claim
// (leader-claim.ts). Retention prunes the history every pruneIntervalMs.
import type { Informer } from '../informer/informer.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { BacklogBound } from './backlog-bound.ts';
import { FollowedVersions } from './followed-versions.ts';
import type { LeaderClaim, Snapshot } from './leader-claim.ts';
import { ListedTypes } from './listed-types.ts';
import { ClaimLost, type Retention, type SerializedWrite, type StateStore } from './store.ts';
import { StoreOutage } from './store-outage.ts';
import {
  type DeliveryProgress,
  type FollowedAt,
  MAX_BATCH,
  type QueuedWrite,
  reached,
  WriteQueue,
} from './write-queue.ts';

/** What the writer reads of the recorder when it commits. */
export interface WriterContext {
  progress(): DeliveryProgress;
  informers(): readonly Informer[];
  /** What a new leader's snapshot is made from (leader-elected). */
  snapshot(): Snapshot;
  /** After each commit. */
  committed(): void;
}

export class StateWriter {
  readonly queue = new WriteQueue();
  readonly listed = new ListedTypes();
  /** How far each type is followed (what a restart replays from). */
  readonly followed = new FollowedVersions();
  readonly bound: BacklogBound;
  private readonly outage: StoreOutage;
  private readonly store: StateStore;
  private readonly log: Logger;
  private readonly retention: Retention;
  private readonly pruneIntervalMs: number;
  private readonly claim: LeaderClaim | undefined;
  private readonly context: WriterContext;
  private lastPrune = 0;
  /** The commit in progress, and the queue entries it is writing. */
  private writing: Promise<void> | undefined;
  private inFlight: ReadonlySet<QueuedWrite> = new Set();
  private relieveAfterWrite = false;
  private stopped = false;

  constructor(options: {
    store: StateStore;
    log: Logger;
    retention: Retention;
    pruneIntervalMs: number;
    maxBacklogBytes?: number | undefined;
    claim?: LeaderClaim | undefined;
    context: WriterContext;
  }) {
    this.store = options.store;
    this.log = options.log;
    this.retention = options.retention;
    this.pruneIntervalMs = options.pruneIntervalMs;
    this.claim = options.claim;
    this.context = options.context;
    this.bound = new BacklogBound({
      maxBytes: options.maxBacklogBytes,
      log: this.log,
      label: this.store.label,
    });
    this.outage = new StoreOutage({ store: this.store, log: this.log, keptBytes: this.bound.maxBytes });
  }

  /** Recording stopped for good (a failure that is not transient). */
  get failed(): boolean {
    return this.stopped;
  }

  /** The commit in progress, if any. */
  get busy(): Promise<void> | undefined {
    return this.writing;
  }

  push(write: SerializedWrite, mark: readonly number[], baseline = false, followed?: FollowedAt): void {
    if (this.stopped) return;
    this.queue.push(write, mark, baseline, followed);
    if (this.bound.exceeded(this.queue)) this.relieve();
  }

  /**
   * `informer`'s replay is over, its changes queued: it is followed from `listedAt` (its first LIST) once
   * every entry queued so far is committed or dropped.
   */
  replayEnded(informer: Informer, listedAt: string): void {
    this.followed.moveTo(informer, listedAt, this.queue.entries.at(-1)?.seq);
  }

  /**
   * Events a new leader hands over, just pushed (leader gate): the types are not followed past them
   * until they are committed.
   */
  holdFollowed(count: number): void {
    if (count <= 0) return;
    const handed = this.queue.entries.slice(-count);
    const last = handed.at(-1);
    if (last) this.followed.hold(last.seq, handed);
  }

  /**
   * Commits what every sink has finished with (`all`: everything, the last commit at the end). One
   * commit at a time: while one is writing, this waits for it.
   */
  flush(all = false): Promise<void> {
    if (this.writing) return this.writing;
    if (this.stopped || !this.outage.mayTry(all)) return Promise.resolve();
    const finished = this.context.progress().finished();
    return this.commit(
      all ? this.queue.oldest(this.queue.length) : this.queue.committable(finished, MAX_BATCH),
    );
  }

  /**
   * Commits the baseline entries waiting, and what is committable with them, in as many commits as they
   * take (MAX_BATCH each), while `recording`; stops at the first that makes no progress (the store
   * failing or down, or a discovery's note waiting for a sink ahead of them).
   */
  async commitBaselines(recording: () => boolean): Promise<void> {
    for (;;) {
      // Another commit first (it may hold none of the baseline): then one of this method's own.
      if (this.writing) {
        await this.writing;
        continue;
      }
      const before = this.queue.baselinesWaiting;
      await this.flush();
      const left = this.queue.baselinesWaiting;
      if (left === 0 || left >= before || !recording()) return;
    }
  }

  /** Commits what every sink has finished with, however much (a leader that stands down). */
  commitFinished(): Promise<void> {
    if (this.stopped || this.claim?.waiting) return Promise.resolve();
    const finished = this.context.progress().finished();
    return this.commit(this.queue.committable(finished, this.queue.length));
  }

  /** Prunes the history now (at the start, then with the commits every pruneIntervalMs). */
  async prune(): Promise<void> {
    this.lastPrune = Date.now();
    try {
      const removed = await this.store.prune(this.retention);
      if (removed > 0) this.log.debug(`state: removed ${removed} event(s) from the history (retention).`);
    } catch (error) {
      // Retention is retried at the next interval; a store that is down is reported by the writes.
      if (!this.store.isTransient(error)) this.fail(error);
    }
  }

  /** Empties the queue without recording it (a store that is down: its outage is forgotten too). */
  discard(): QueuedWrite[] {
    this.outage.forget();
    return this.queue.clear();
  }

  /**
   * The queue passed the bound: commit its oldest entries down to half of it, whether or not the sinks
   * have finished with them (backlog-bound.ts). When the store cannot take them now (down, or busy with a
   * commit), drop them instead.
   */
  private relieve(): void {
    if (this.outage.down) {
      this.followed.unconfirmed(this.bound.drop(this.queue, this.inFlight));
      return;
    }
    if (this.writing) {
      // After the commit in progress; meanwhile at most twice the bound is held, beyond it the oldest go.
      this.relieveAfterWrite = true;
      if (this.bound.farExceeded(this.queue))
        this.followed.unconfirmed(this.bound.drop(this.queue, this.inFlight));
      return;
    }
    const progress = this.context.progress();
    const early = this.bound.early(this.queue, progress);
    // Committed before every sink finished them: the type is not followed past them for the run.
    const finished = progress.finished();
    this.followed.unconfirmed(early.filter((entry) => !reached(finished, entry.mark)));
    void this.commit(early);
  }

  /** Commits `batch`, queue entries in queue order, and marks the types they complete as listed. */
  private commit(batch: readonly QueuedWrite[]): Promise<void> {
    const informers = this.context.informers();
    const listed = this.listed.newlyListed(informers, this.queue, batch);
    // How far the types are followed once this batch is committed (written in its transaction).
    const followed = this.followed.moved(informers, this.listed, batch, listed);
    const due = Date.now() - this.lastPrune >= this.pruneIntervalMs;
    // Idle: no write at all.
    if (batch.length === 0 && listed.size === 0 && followed.size === 0 && !due && !this.claim?.waiting)
      return Promise.resolve();
    this.inFlight = new Set(batch);
    const done = this.write(batch, listed, followed, due).finally(() => {
      this.inFlight = new Set();
      this.writing = undefined;
      if (this.relieveAfterWrite) {
        this.relieveAfterWrite = false;
        if (this.bound.exceeded(this.queue)) this.relieve();
      }
    });
    this.writing = done;
    return done;
  }

  private async write(
    batch: readonly QueuedWrite[],
    listed: Map<string, string>,
    followed: Map<string, string>,
    due: boolean,
  ): Promise<void> {
    try {
      // A new leader writes nothing before it holds the claim and the snapshot is its own.
      if (this.claim?.waiting) {
        if (!(await this.claim.take(this.context.snapshot()))) return;
        // The resync marked what it wrote as listed, and moved the informers to where they are.
        listed = this.listed.unmarked(listed);
        followed = this.followed.moved(this.context.informers(), this.listed, batch, listed);
      }
      if (batch.length > 0 || listed.size > 0 || followed.size > 0) {
        await this.store.write(
          batch.map((entry) => entry.write),
          listed,
          followed,
        );
        this.listed.marked(listed);
        this.followed.wrote(followed);
      }
      this.followed.committed(batch);
      this.queue.remove(batch);
      this.followed.release(this.queue.entries[0]?.seq);
      this.outage.succeeded();
      this.context.committed();
      if (due) await this.prune();
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * A transient failure (the database unreachable or slow) keeps the queue and retries with backoff; any
   * other (a full or read-only disk) stops recording, and the watch goes on.
   */
  private fail(error: unknown): void {
    if (error instanceof ClaimLost && this.claim) {
      // Reconnected after another process claimed the cluster: this replica is about to learn that it
      // no longer leads; meanwhile the queue waits for the claim, as after a takeover.
      this.log.warn(`state: ${errorMessage(error)} until this replica holds the claim again.`);
      this.claim.begin();
      return;
    }
    if (error instanceof ClaimLost) {
      // A fleet's cluster taken over by another replica: its writes are the new owner's now.
      this.stopped = true;
      this.queue.clear();
      this.log.warn(`state: ${errorMessage(error)}.`);
      return;
    }
    if (this.outage.failed(error)) return;
    this.stopped = true;
    this.queue.clear();
    this.log.warn(
      `cannot write the state to ${this.store.label}: ${errorMessage(error)}; changes are still reported, ` +
        'but no longer recorded, and the next start will not catch up on them.',
    );
  }
}
