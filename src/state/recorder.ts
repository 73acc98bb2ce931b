// Keeps the store (--state) in step with what kubediff reports, and catches up at startup on what changed
// while it was not running (docs/state.md). A pipeline observer, assembled from catch-up.ts, write-queue.ts,
// state-writer.ts and leader-claim.ts. Promises: a change is committed once every sink is done with it
// (a kill -9 loses nothing reported as delivered); a first run's baseline is durable before anything after
// it is reported; leader-elected, only the leader records (a standby reads the snapshot at its start, and
// records what the leader gate hands it when it takes over).
import {
  type ChangeEvent,
  type KubediffEvent,
  type OutcomeEvent,
  qualifiedResource,
} from '../events/event.ts';
import type { DeliveryMark, PipelineObserver, StoreChange } from '../events/pipeline.ts';
import type { Informer, InformerHandler, InitialListMode } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { Selection } from '../kube/selection.ts';
import { qualifiedName, type ResourceType } from '../kube/types.ts';
import { errorMessage } from '../util/errors.ts';
import { type EventFailures, identityOf } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { CatchUp, type InformerPlan } from './catch-up.ts';
import { LeaderClaim } from './leader-claim.ts';
import { StateWriter } from './state-writer.ts';
import {
  DEFAULT_RETENTION,
  isClaimed,
  type ResourceEntry,
  type Retention,
  type SerializedWrite,
  type StateStore,
  type StateWrite,
  serializeWrite,
} from './store.ts';
import type { DeliveryProgress, FollowedAt } from './write-queue.ts';

export interface StateRecorderOptions {
  store: StateStore;
  log: Logger;
  /**
   * What the previous run's state must match to be compared against (catch-up.ts, selectionSignature):
   * when it differs, the recorded objects are dropped and a new silent baseline is taken.
   */
  signature: string;
  retention?: Retention;
  flushIntervalMs?: number;
  /** Prune the history every this many ms. */
  pruneIntervalMs?: number;
  /** The most bytes of writes held back for the sinks (backlog-bound.ts). Default 64 MiB. */
  maxBacklogBytes?: number;
  /** Where a write that cannot be serialized is reported (it is then not recorded). */
  failures?: EventFailures;
  /**
   * --leader-elect: with a shared store (PostgreSQL) only the leader records. The previous leader's
   * session is ended when it still holds the claim `fenceAfterMs` after this replica took over.
   */
  leaderElected?: { fenceAfterMs: number } | undefined;
}

type ResourcesNote = Extract<SerializedWrite, { kind: 'resources' }>;

export class StateRecorder implements PipelineObserver {
  private readonly store: StateStore;
  private readonly log: Logger;
  private readonly flushIntervalMs: number;
  private readonly failures: EventFailures | undefined;
  private readonly signature: string;
  private readonly catchUp: CatchUp;
  private readonly writer: StateWriter;
  /** Leader-elected with a shared store: the claim, taken while this replica leads. */
  private readonly claim: LeaderClaim | undefined;
  private progress: DeliveryProgress = { finished: () => [] };
  private informers: () => Informer[] = () => [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** False on a standby (shared store): nothing is queued, nothing written. */
  private leading: boolean;
  /** An informer's first LIST just ended: the next flowControl() commits the baseline. */
  private baselineDue = false;
  private baselineCommit: Promise<void> | undefined;
  /** A first run said it records state (once its baseline was durable). */
  private announced = false;
  /** The last discovery note queued: an unchanged one is not queued again (rediscovery repeats it). */
  private lastResources = '';
  /** The latest discovery note, queued or not (a standby's): a new leader writes it first. */
  private lastNote: ResourcesNote | undefined;
  /** Standing down (committing, releasing the claim): close() waits for it. */
  private steppingDown: Promise<void> | undefined;

  private constructor(options: StateRecorderOptions, catchUp: CatchUp) {
    this.store = options.store;
    this.log = options.log;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    this.failures = options.failures;
    this.signature = options.signature;
    this.catchUp = catchUp;
    const store = options.store;
    this.claim =
      options.leaderElected && isClaimed(store)
        ? new LeaderClaim({
            store,
            log: this.log,
            fenceAfterMs: options.leaderElected.fenceAfterMs,
            failures: this.failures,
          })
        : undefined;
    this.leading = this.claim === undefined;
    this.writer = new StateWriter({
      store,
      log: this.log,
      retention: options.retention ?? DEFAULT_RETENTION,
      pruneIntervalMs: options.pruneIntervalMs ?? 10 * 60_000,
      maxBacklogBytes: options.maxBacklogBytes,
      claim: this.claim,
      context: {
        progress: () => this.progress,
        informers: () => this.informers(),
        snapshot: () => ({
          note: this.lastNote,
          signature: this.signature,
          informers: this.informers(),
          listed: this.writer.listed,
          followed: this.writer.followed,
        }),
        committed: () => this.announceWhenDurable(),
      },
    });
  }

  /**
   * Reads what the previous run recorded (its selection, types and objects) and prunes the history. The
   * store must answer here: without the previous state there is nothing to catch up from.
   */
  static async open(options: StateRecorderOptions): Promise<StateRecorder> {
    try {
      // A standby writes nothing: what it would forget or note, it writes when it takes over.
      const standby = options.leaderElected !== undefined && isClaimed(options.store);
      const catchUp = await CatchUp.read(options.store, {
        signature: options.signature,
        log: options.log,
        readOnly: standby,
      });
      const recorder = new StateRecorder(options, catchUp);
      if (!standby) await recorder.writer.prune();
      return recorder;
    } catch (error) {
      await options.store.close().catch(() => undefined);
      throw error;
    }
  }

  /** Where the state is, safe to print: a file path, or a database URL without credentials. */
  get label(): string {
    return this.store.label;
  }

  /** True when the store holds a previous run's state: startup is a catch-up, not a baseline. */
  get hasPreviousState(): boolean {
    return this.catchUp.hasPreviousState;
  }

  /** The sinks' counters (src/sinks/core/router.ts) and the informers, once they exist. */
  attach(progress: DeliveryProgress, informers: () => Informer[]): void {
    this.progress = progress;
    this.informers = informers;
    this.timer = setInterval(() => void this.flush(), this.flushIntervalMs);
    this.timer.unref();
    // A first run says that it records state once its baseline is durable (announceWhenDurable).
    if (this.hasPreviousState) {
      this.log.info(
        `catching up from ${this.store.label}: changes made while kubediff was not running are reported offline.`,
      );
    }
  }

  /** How an informer for `type` (in `namespace`) starts; `fallback` is what it would do without state. */
  plan(type: ResourceType, namespace: string | undefined, fallback: InitialListMode): InformerPlan {
    return this.catchUp.plan(type, namespace, fallback);
  }

  /** Each (re-)discovery: remember what the server offers and what is watched (queued in order). */
  noteSelection(selection: Selection): void {
    if (this.closed || this.writer.failed) return;
    const entries: ResourceEntry[] = [
      ...selection.watched.map((type) => ({ type, resource: qualifiedName(type), watched: true })),
      ...selection.skipped.map(({ type }) => ({ type, resource: qualifiedName(type), watched: false })),
    ];
    const note = entries.map((entry) => ({
      resource: entry.resource,
      json: JSON.stringify(entry.type),
      watched: entry.watched,
    }));
    // Every re-discovery calls this; an unchanged selection is not queued again.
    const key = JSON.stringify(note);
    if (key === this.lastResources) return;
    this.lastResources = key;
    const watched = new Set(selection.watched.map(qualifiedName));
    // A type that stops being watched (or served) must be listed again when it comes back.
    this.writer.listed.keepWatched(watched);
    // Types served but no longer watched: their objects are not followed any more.
    for (const entry of entries) {
      if (!watched.has(entry.resource) && this.catchUp.wasWatched(entry.resource))
        this.push({ kind: 'forget', resource: entry.resource }, []);
    }
    this.push({ kind: 'resources', entries: note }, []);
  }

  /** After the first sync: the objects of recorded types no longer served are reported DELETED (catch-up.ts). */
  reportVanishedTypes(selection: Selection, handler: InformerHandler): void {
    this.catchUp.reportVanishedTypes(selection, handler, this.informers());
  }

  /** PipelineObserver: after the first LIST of an informer, where its objects end in the queue. */
  stateChanged(informer: Informer, state: ReflectorState): void {
    // Its replay handed on (src/informer/reflector.ts): followed from its LIST once that is committed.
    if (state.phase === 'replayed') this.writer.replayEnded(informer, state.listedAt);
    // Watching after the first LIST: every object of that LIST has been queued by now.
    if (state.phase === 'watching' && informer.hasSynced && this.writer.listed.firstListEnded(informer)) {
      this.writer.queue.firstListEnded(qualifiedName(informer.type));
      // Before it reads on, the informer waits for its baseline to be committed (flowControl).
      this.baselineDue = true;
    }
  }

  /**
   * The informers' flow control (ReflectorOptions.flowControl): right after an informer's first LIST,
   * a promise that resolves once what is committable then (its baseline above all) is committed; the
   * informers read nothing more meanwhile, so no change after a baseline is reported before the
   * baseline is durable. One attempt: a store that fails or is down does not hold the watch.
   */
  flowControl(): Promise<void> | undefined {
    if (this.baselineDue) {
      this.baselineDue = false;
      if (this.recording) {
        const commit = this.writer
          .commitBaselines(() => this.recording)
          .finally(() => {
            if (this.baselineCommit === commit) this.baselineCommit = undefined;
          });
        this.baselineCommit = commit;
      }
    }
    return this.baselineCommit;
  }

  /**
   * PipelineObserver: each change of an informer's store (a baseline object too), once its event went
   * to the sinks. The event (kept for `kubediff history`) and the object are queued, to be committed
   * when every sink has finished with what it had accepted at `mark`.
   */
  changeProcessed(change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark): void {
    // The event is this change's: its resource is the change's type, named once for both rows.
    const resource = qualifiedName(change.type);
    // A live change (a watch event, read in its stream's order): its last entry says where, so that the
    // type is followed that far once it is committed (followed-versions.ts). A replay's changes move
    // nothing until the replay is over (stateChanged, 'replayed').
    const followed =
      change.kind !== 'baseline' && !change.offline
        ? { namespace: change.object.namespace, resourceVersion: change.object.resourceVersion }
        : undefined;
    // A change of the replay (an object created and deleted while kubediff was not running): no store
    // holds its object; its event alone is kept.
    if (change.replayed) {
      if (reported) this.queue({ kind: 'event', resource, event: reported }, mark);
      return;
    }
    if (reported) this.queue({ kind: 'event', resource, event: reported }, mark);
    if (change.kind === 'deleted')
      this.queue({ kind: 'delete', resource, key: change.object.key }, mark, false, followed);
    // A baseline's object carries no event: it waits for no sink.
    else if (change.kind === 'baseline' && !reported)
      this.queue({ kind: 'object', resource, object: change.object }, [], true);
    else this.queue({ kind: 'object', resource, object: change.object }, mark, false, followed);
  }

  /**
   * PipelineObserver: an OUTCOME (docs/outcomes.md), once it went to the sinks: recorded in the history
   * like an event, committed when every sink has finished with it.
   */
  outcomeProcessed(outcome: OutcomeEvent, mark: DeliveryMark): void {
    this.queue({ kind: 'event', resource: qualifiedResource(outcome), event: outcome }, mark);
  }

  /**
   * Commits what every sink has finished with. Called by a timer; `all` at the end, after the sinks
   * closed. One commit at a time: while one is writing, this waits for it.
   */
  flush(all = false): Promise<void> {
    if (!this.leading) return this.writer.busy ?? Promise.resolve();
    return this.writer.flush(all);
  }

  /**
   * A fleet's handoff (docs/fleets.md): this cluster's watch stopped, the sinks go on. Waits, at most
   * `timeoutMs`, until the sinks have finished with everything queued and it is committed, then closes
   * the store. What is left then (a sink still retrying) is not recorded: the next owner catches up on
   * those changes and reports them again, with the same ids. Returns how many entries were left.
   */
  async handOff(timeoutMs: number): Promise<number> {
    if (this.closed) return 0;
    const deadline = Date.now() + timeoutMs;
    while (this.writer.queue.length > 0 && !this.writer.failed && Date.now() < deadline) {
      await this.flush();
      if (this.writer.queue.length > 0)
        await new Promise((resolve) => setTimeout(resolve, this.flushIntervalMs));
    }
    // How far the types are followed once that is committed, if it moved (the next owner replays from it).
    if (!this.writer.failed) await this.flush();
    const left = this.writer.failed ? 0 : this.writer.queue.length;
    if (left > 0) {
      this.writer.bound.countDropped(left);
      this.log.warn(
        `state: handing the cluster over with ${left} change(s) the sinks had not finished with; they are not recorded, ` +
          'and its next owner reports them again (with the same ids).',
      );
    }
    await this.shut();
    return left;
  }

  /** A fleet's cluster another replica took over: closes the store without writing (the state is the new owner's). */
  async abandon(): Promise<void> {
    if (this.closed) return;
    await this.shut();
  }

  /** Closes without recording what is queued. */
  private async shut(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.writer.busy;
    this.writer.discard();
    try {
      await this.store.close();
    } catch (error) {
      this.log.debug(`state: closing ${this.store.label} failed: ${errorMessage(error)}.`);
    }
  }

  /** How long the oldest change reported but not yet recorded has waited, in ms (a fleet's lag). */
  get lagMs(): number {
    const at = this.writer.queue.oldestAt;
    return at === undefined ? 0 : Math.max(0, Date.now() - at);
  }

  /** After the sinks closed: commit everything, close the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.steppingDown;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.writer.busy;
    // One more attempt even when the store was down: it may be back. Then how far the types are
    // followed once that is committed (a replay over with it), if it moved.
    await this.flush(true);
    await this.flush(true);
    const left = this.writer.queue.length;
    if (left > 0) {
      this.writer.bound.countDropped(left);
      this.log.warn(
        `state: ${left} change(s) could not be recorded in ${this.store.label} before exiting; ` +
          'the next start reports their objects again where they differ.',
      );
      this.writer.discard();
    }
    try {
      await this.store.close();
    } catch (error) {
      this.log.warn(`state: closing ${this.store.label} failed: ${errorMessage(error)}.`);
    }
  }

  /**
   * The leader gate: this replica leads. `events` are those it held back as a standby and hands over now
   * (delivered, or covered by the previous leader's checkpoint), oldest first: recorded in the history
   * (the store keeps an event once, whoever recorded it first).
   */
  startedLeading(events: readonly KubediffEvent[]): void {
    if (!this.claim || this.leading || this.closed || this.writer.failed) return;
    this.leading = true;
    this.claim.begin();
    const mark = this.progress.accepted?.() ?? [];
    const queued = this.writer.queue.length;
    for (const event of events) {
      // Older than what the informers have read: the types are not followed past them until committed.
      const { namespace, resourceVersion } = event.object;
      this.queue({ kind: 'event', resource: qualifiedResource(event), event }, mark, false, {
        namespace,
        resourceVersion,
      });
    }
    this.writer.holdFollowed(this.writer.queue.length - queued);
  }

  /**
   * The leader gate: this replica no longer leads. What the sinks have finished with is committed (on a
   * clean stop that is everything: they drained before the Lease was released), the rest is not
   * recorded (counted as dropped), and the claim is released for the next leader.
   */
  stoppedLeading(): void {
    if (!this.claim || !this.leading) return;
    this.leading = false;
    this.steppingDown = this.standDown(this.claim);
  }

  private async standDown(claim: LeaderClaim): Promise<void> {
    await this.writer.busy;
    await this.writer.commitFinished();
    // Leading again meanwhile (the Lease regained at once): what is left is recorded after the new claim.
    if (this.leading) return;
    const left = this.writer.discard().filter((entry) => entry.write.kind === 'event').length;
    if (left > 0) {
      this.writer.bound.countDropped(left);
      this.log.warn(
        `state: stopped leading with ${left} event(s) not yet delivered by the sinks; they are not recorded in ` +
          `the history (counted in kubediff_state_dropped_writes_total).`,
      );
    }
    claim.abandon();
    await claim.release();
  }

  /** Whether only the leader records (a shared store under --leader-elect): it follows the leader gate. */
  get followsLeadership(): boolean {
    return this.claim !== undefined;
  }

  /** Whether this process records now: not on a standby, nor while it waits for the claim (a metric). */
  get recording(): boolean {
    return this.leading && !this.claim?.waiting && !this.writer.failed && !this.closed;
  }

  /** Bytes of the entries waiting for the sinks, as accounted against maxBacklogBytes (a metric). */
  get backlogBytes(): number {
    return this.writer.queue.bytes;
  }

  /** Entries committed before every sink had finished with them, because the backlog was full (a metric). */
  get unconfirmedWrites(): number {
    return this.writer.bound.unconfirmed;
  }

  /** Entries dropped because the store could not take them within the bound (a metric). */
  get droppedWrites(): number {
    return this.writer.bound.dropped;
  }

  private queue(write: StateWrite, mark: DeliveryMark, baseline = false, followed?: FollowedAt): void {
    if (this.closed || this.writer.failed || !this.leading) return;
    let serialized: SerializedWrite;
    try {
      serialized = serializeWrite(write);
    } catch (error) {
      // Not recorded: the store keeps the state before it, and the next start reports the change again.
      if (!this.failures) throw error;
      this.failures.report(
        'recorder',
        'recording the change in the state store',
        identityOf(write.resource, write.kind === 'event' ? write.event.object : subjectOf(write)),
        error,
        'it is not recorded; the next start reports it again',
      );
      return;
    }
    this.push(serialized, mark, baseline, followed);
  }

  private push(write: SerializedWrite, mark: DeliveryMark, baseline = false, followed?: FollowedAt): void {
    if (this.closed || this.writer.failed) return;
    if (write.kind === 'resources') this.lastNote = write;
    // A standby: the snapshot is brought up to date when it takes over; the discovery is noted then.
    if (!this.leading) return;
    this.writer.push(write, mark, baseline, followed);
  }

  /**
   * A first run says that it records state once it can keep that promise: every informer has ended its
   * first LIST (or failed it) and every type listed is marked so in the store (its baseline committed).
   */
  private announceWhenDurable(): void {
    if (this.announced || this.hasPreviousState || this.claim) return;
    const informers = this.informers();
    if (informers.length === 0) return;
    for (const informer of informers) {
      const listed = this.writer.listed.has(qualifiedName(informer.type));
      if (informer.hasSynced ? !listed : !informer.failure) return;
    }
    this.announced = true;
    this.log.info(`recording state in ${this.store.label}: the next start will catch up on what it missed.`);
  }
}

/** The object a write is about, for failure reports. */
function subjectOf(write: Exclude<StateWrite, { kind: 'event' }>): { name: string; namespace?: string } {
  return write.kind === 'object' ? write.object : { name: write.key };
}
