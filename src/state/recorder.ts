// Keeps the state file in step with what kubediff reports, and uses it at
// startup to catch up on what changed while kubediff was not running.
//
// Startup (plan): a type watched and listed by the previous run starts with
// its store pre-loaded from the file and treats its first LIST as a relist,
// so the informer reports exactly what was created, changed and deleted in
// the meantime (offline). A type the server did not offer last time (a CRD
// installed while down) has all its objects reported ADDED offline. A type
// served before but not watched (the selection grew) takes a silent baseline.
// A recorded type the server no longer offers has its objects reported
// DELETED offline (reportVanishedTypes).
//
// Writing (crash safety): every change of an informer's store (ADDED,
// UPDATED, DELETED, baseline object) and every reported event is queued in
// order, tagged with how many events each sink had accepted right after it
// was handed over (the pipeline's DeliveryMark). A flush, every `flushIntervalMs`, commits in ONE transaction
// the longest prefix of that queue whose events every sink has finished with
// (delivered, or accounted for as dead-lettered/lost, which the log reports).
// So the file never records as reported something a kill -9 could still keep
// from a sink; and what a kill -9 keeps from the file (at most the changes
// of the last moments) is found again by the next start's relist and
// reported again with the same id: at-least-once with stable ids.
//
// The baseline (a first LIST without a previous state to compare it with) is
// what every later catch-up compares against, so it is durable before
// anything after it is reported: its objects wait for no sink (they carry no
// event) and are committed past entries still waiting for one, and when an
// informer's first LIST ends it pauses reading (flowControl) until they are
// committed. Only then does a first run say that it records state. A start
// killed at any moment is caught up by the next (docs/state.md).
//
// Bounded (memory): the queue holds each write serialized, and at most
// `maxBacklogBytes` of them. A sink that is slow or down (a webhook retrying
// for minutes) would otherwise keep every change, whole object included, in
// memory until it recovers. At the bound the oldest writes are committed
// before that sink has finished with them, down to half the bound: memory
// stays bounded and the watch and the other sinks go on, at the price that a
// kill -9 meanwhile can lose, for that sink only, changes it still had queued
// (a clean stop hands them to the dead-letter file or reports them, as
// always). Logged once, counted (unconfirmedWrites, a metric).
//
// Unreachable (a PostgreSQL store down, restarting or too slow): the queue is
// kept and retried with backoff; the watch and the sinks go on. Within the
// bound nothing is lost and each entry is committed once. When the bound is
// reached while the store cannot take the oldest entries, they are dropped
// down to half the bound: counted (droppedWrites, a metric) and logged once;
// the next start's relist then finds the objects again (their history
// events are what is lost). A failure that is not transient (SQLite's disk
// full) stops recording, as before.
//
// Leader-elected, with a shared store (PostgreSQL; docs/state.md, "A
// leader-elected pair"): only the leader records. A standby reads the
// snapshot at its start (its informers catch up from it like any start) and
// then writes nothing: no snapshot, no history, no claim. When it starts
// leading (startedLeading), it claims the cluster (waiting while the previous
// leader commits and releases it; past a grace period it ends that session),
// brings the snapshot up to date with its informers' stores (resync: only
// the objects whose resourceVersion differs, and the deletions), records in
// the history the events the leader gate hands it (those it delivers, and
// those the previous leader's checkpoint covered, in case that leader died
// before committing them: the history's (cluster, id, type) key keeps them
// once), and from then on records as usual. When it stops leading, it
// commits what its sinks have finished with and releases the claim.
import { type ChangeEvent, qualifiedResource } from '../events/event.ts';
import type { DeliveryMark, PipelineObserver, StoreChange } from '../events/pipeline.ts';
import type { Informer, InformerHandler, InitialListMode } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { StoredObject } from '../informer/store.ts';
import type { Selection } from '../kube/selection.ts';
import { qualifiedName, type ResourceType } from '../kube/types.ts';
import { Backoff } from '../util/backoff.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage } from '../util/errors.ts';
import { type EventFailures, identityOf } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { formatSize } from '../util/size.ts';
import {
  type ClaimedStateStore,
  ClaimLost,
  DEFAULT_RETENTION,
  isClaimed,
  type ResourceEntry,
  type Retention,
  type SerializedWrite,
  type StateStore,
  type StateWrite,
  serializeWrite,
} from './store.ts';

/** What an informer starts with. */
export interface InformerPlan {
  initialList: InitialListMode;
  /** The recorded objects: the first LIST is reconciled against them (catch-up). */
  preload?: StoredObject[];
}

/** Per sink, in the router's order: events finished with so far (accepted − pending). */
export interface DeliveryProgress {
  finished(): number[];
  /** Per sink, events accepted so far (the mark of events handed over outside a change). */
  accepted?(): number[];
  /** The sinks' names, in the same order (for the log). */
  names?(): string[];
}

export interface StateRecorderOptions {
  store: StateStore;
  log: Logger;
  /**
   * What the previous run's state must match to be compared against: the namespaces, label selector,
   * ignored paths and redaction. When it differs, the recorded objects are dropped and a new silent
   * baseline is taken.
   */
  signature: string;
  retention?: Retention;
  flushIntervalMs?: number;
  /** Prune the history every this many ms. */
  pruneIntervalMs?: number;
  /** The most bytes of writes held back for the sinks (see the bound above). Default 64 MiB. */
  maxBacklogBytes?: number;
  /** Where a write that cannot be serialized is reported (it is then not recorded). */
  failures?: EventFailures;
  /**
   * --leader-elect: with a shared store (PostgreSQL) only the leader records (see the top). The previous
   * leader's session is ended when it still holds the claim `fenceAfterMs` after this replica took over.
   */
  leaderElected?: { fenceAfterMs: number } | undefined;
}

interface Pending {
  write: SerializedWrite;
  /** Per sink, the accepted count that must be finished before this entry may be committed. */
  mark: DeliveryMark;
  /** What the entry costs, as accounted against maxBacklogBytes. */
  bytes: number;
  /** Its place in the sequence of entries ever queued. */
  seq: number;
  /** An object of a baseline (no event): it waits for no sink, and may be committed past those that do. */
  baseline: boolean;
}

/** A type's first LIST, as the queue holds it: entries queued before it ended, and how many are pending. */
interface FirstList {
  until: number;
  left: number;
}

const SIGNATURE_KEY = 'selection';
const MAX_BATCH = 5_000;
/** A new leader asks for the claim this often while the previous leader still holds it. */
const CLAIM_RETRY_MS = 500;
const DEFAULT_MAX_BACKLOG_BYTES = 64 * 1024 * 1024;
/** Per entry, besides its JSON: the entry, its mark and its keys (an estimate, on the high side). */
const ENTRY_OVERHEAD_BYTES = 200;

export class StateRecorder implements PipelineObserver {
  private readonly store: StateStore;
  private readonly log: Logger;
  private readonly retention: Retention;
  private readonly flushIntervalMs: number;
  private readonly pruneIntervalMs: number;
  /** The previous run's state: true when there is one to catch up from. */
  private readonly catchingUp: boolean;
  private readonly previous: Map<string, { watched: boolean; listed: boolean; type: ResourceType }>;
  /**
   * The previous run's objects per watched type, read once at the start (the informers' stores are
   * pre-loaded from it synchronously) and released after the first sync.
   */
  private preloaded: Map<string, StoredObject[]> | undefined;
  private pending: Pending[] = [];
  private progress: DeliveryProgress = { finished: () => [] };
  private informers: () => Informer[] = () => [];
  private timer: NodeJS.Timeout | undefined;
  private lastPrune = 0;
  /** Queue entries ever queued (the next entry's seq). */
  private queued = 0;
  /** The resourceVersion at which each informer's first LIST ended. */
  private readonly syncedAt = new Map<Informer, string>();
  /** Per resource type whose first LIST ended: its entries from before that still pending. */
  private readonly firstLists = new Map<string, FirstList>();
  /** Pending entries per resource type. */
  private readonly pendingPerResource = new Map<string, number>();
  /** Pending baseline entries (see Pending.baseline). */
  private baselinePending = 0;
  /** An informer's first LIST just ended: the next flowControl() commits the baseline. */
  private baselineDue = false;
  private baselineCommit: Promise<void> | undefined;
  /** A first run said it records state (once its baseline was durable). */
  private announced = false;
  /** What the store says each listed type was followed to. */
  private readonly listed = new Map<string, string>();
  private closed = false;
  private failed = false;
  private readonly maxBacklogBytes: number;
  private readonly failures: EventFailures | undefined;
  private pendingBytes = 0;
  private unconfirmed = 0;
  private dropped = 0;
  /** The commit in progress, and the queue entries it is writing. */
  private writing: Promise<void> | undefined;
  private inFlight: ReadonlySet<Pending> = new Set();
  private relieveAfterWrite = false;
  /** The last discovery note queued: an unchanged one is not queued again (rediscovery repeats it). */
  private lastResources = '';
  /** The store failed transiently: retried with backoff, no earlier than retryAt. */
  private down = false;
  private retryAt = 0;
  private readonly retry = new Backoff({
    initialMs: 500,
    maxMs: 30_000,
    resetAfterMs: Number.POSITIVE_INFINITY,
  });
  private readonly signature: string;
  /** Leader-elected with a shared store: the store, and when the previous leader's claim is ended. */
  private readonly claimed: ClaimedStateStore | undefined;
  private readonly fenceAfterMs: number;
  /** False on a standby (shared store): nothing is queued, nothing written. */
  private leading: boolean;
  /** Leading, but the claim not taken yet (and then the snapshot brought up to date). */
  private claimPending = false;
  private claimRetryAt = 0;
  private leadingSince = 0;
  private fenced = false;
  private waitLogged = false;
  /** The latest discovery note, queued or not (a standby's): a new leader writes it first. */
  private lastNote: Extract<SerializedWrite, { kind: 'resources' }> | undefined;
  /** Standing down (committing, releasing the claim): close() waits for it. */
  private steppingDown: Promise<void> | undefined;

  private constructor(
    options: StateRecorderOptions,
    previous: Map<string, { watched: boolean; listed: boolean; type: ResourceType }>,
    preloaded: Map<string, StoredObject[]>,
  ) {
    this.store = options.store;
    this.log = options.log;
    this.maxBacklogBytes = options.maxBacklogBytes ?? DEFAULT_MAX_BACKLOG_BYTES;
    this.failures = options.failures;
    this.retention = options.retention ?? DEFAULT_RETENTION;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    this.pruneIntervalMs = options.pruneIntervalMs ?? 10 * 60_000;
    this.previous = previous;
    this.preloaded = preloaded;
    this.catchingUp = previous.size > 0;
    this.signature = options.signature;
    this.claimed = standingBy(options);
    this.fenceAfterMs = options.leaderElected?.fenceAfterMs ?? 0;
    this.leading = this.claimed === undefined;
  }

  /**
   * Reads what the previous run recorded (its selection, types and objects) and prunes the history. The
   * store must answer here: without the previous state there is nothing to catch up from.
   */
  static async open(options: StateRecorderOptions): Promise<StateRecorder> {
    try {
      return await StateRecorder.load(options);
    } catch (error) {
      await options.store.close().catch(() => undefined);
      throw error;
    }
  }

  private static async load(options: StateRecorderOptions): Promise<StateRecorder> {
    const { store, log } = options;
    // A standby writes nothing: what it would forget or note, it writes when it takes over.
    const standby = standingBy(options) !== undefined;
    const recorded = await store.getMeta(SIGNATURE_KEY);
    const resources = await store.resources();
    let previous = new Map<string, { watched: boolean; listed: boolean; type: ResourceType }>();
    if (recorded !== undefined && recorded !== options.signature && resources.length > 0) {
      log.warn(
        `the state in ${store.label} was written with other namespaces, label selector, ignored paths or redaction; ` +
          'taking a new baseline instead of catching up (the history is kept).',
      );
      if (!standby) await store.forgetObjects();
    } else {
      previous = new Map(
        resources.map((entry) => [
          entry.resource,
          { watched: entry.watched, listed: entry.listed, type: entry.type },
        ]),
      );
    }
    const preloaded = new Map<string, StoredObject[]>();
    for (const [resource, before] of previous)
      if (before.watched) preloaded.set(resource, await store.objects(resource));
    const recorder = new StateRecorder(options, previous, preloaded);
    if (!standby) {
      await store.setMeta(SIGNATURE_KEY, options.signature);
      await recorder.pruneNow();
    }
    return recorder;
  }

  /** Where the state is, safe to print: a file path, or a database URL without credentials. */
  get label(): string {
    return this.store.label;
  }

  /** True when the store holds a previous run's state: startup is a catch-up, not a baseline. */
  get hasPreviousState(): boolean {
    return this.catchingUp;
  }

  /** The sinks' counters (src/sinks/router.ts) and the informers, once they exist. */
  attach(progress: DeliveryProgress, informers: () => Informer[]): void {
    this.progress = progress;
    this.informers = informers;
    this.timer = setInterval(() => void this.flush(), this.flushIntervalMs);
    this.timer.unref();
    // A first run says that it records state once its baseline is durable (announceWhenDurable).
    if (this.catchingUp) {
      this.log.info(
        `catching up from ${this.store.label}: changes made while kubediff was not running are reported offline.`,
      );
    }
  }

  /** How an informer for `type` (in `namespace`) starts; `fallback` is what it would do without state. */
  plan(type: ResourceType, namespace: string | undefined, fallback: InitialListMode): InformerPlan {
    // A type appearing while running (fallback 'added-offline') is new whatever the store says.
    if (!this.catchingUp || !this.preloaded || fallback === 'added-offline') return { initialList: fallback };
    const resource = qualifiedName(type);
    const before = this.previous.get(resource);
    if (!before) return { initialList: 'added-offline' }; // not offered last time: created while down
    if (!before.watched) return { initialList: 'silent' }; // offered, but not watched: a new baseline
    const recorded = this.preloaded.get(resource) ?? [];
    const preload =
      namespace === undefined ? recorded : recorded.filter((object) => object.namespace === namespace);
    if (!before.listed && preload.length === 0) return { initialList: 'silent' };
    return { initialList: 'silent', preload };
  }

  /** Each (re-)discovery: remember what the server offers and what is watched (queued in order). */
  noteSelection(selection: Selection): void {
    if (this.closed || this.failed) return;
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
    for (const resource of [...this.listed.keys()]) if (!watched.has(resource)) this.listed.delete(resource);
    // Types served but no longer watched: their objects are not followed any more.
    for (const entry of entries) {
      if (!watched.has(entry.resource) && this.previous.get(entry.resource)?.watched)
        this.push({ kind: 'forget', resource: entry.resource }, []);
    }
    this.push({ kind: 'resources', entries: note }, []);
  }

  /**
   * After the first sync: every object of a type recorded by the previous run that the server no longer
   * offers (a CRD deleted while kubediff was down) is reported DELETED offline, finalStateUnknown. Then
   * the previous run's objects are released.
   */
  reportVanishedTypes(selection: Selection, handler: InformerHandler): void {
    const preloaded = this.preloaded;
    this.preloaded = undefined;
    if (!this.catchingUp || !preloaded) return;
    const served = new Set(
      [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)].map(qualifiedName),
    );
    const resourceVersion = newestResourceVersion(this.informers());
    for (const [resource, before] of this.previous) {
      if (served.has(resource) || !before.watched) continue;
      const objects = preloaded.get(resource) ?? [];
      for (const object of objects) {
        handler.onDelete(before.type, object, {
          offline: true,
          finalStateUnknown: true,
          resourceVersion: resourceVersion ?? object.resourceVersion,
        });
      }
      if (objects.length > 0) {
        this.log.info(
          `${resource} is no longer served: reported its ${objects.length} recorded object(s) as deleted.`,
        );
      }
    }
  }

  /** PipelineObserver: after the first LIST of an informer, where its objects end in the queue. */
  stateChanged(informer: Informer, state: ReflectorState): void {
    // Watching after the first LIST: every object of that LIST has been queued by now.
    if (state.phase === 'watching' && informer.hasSynced && !this.syncedAt.has(informer)) {
      this.syncedAt.set(informer, informer.resourceVersion);
      const resource = qualifiedName(informer.type);
      this.firstLists.set(resource, {
        until: this.queued,
        left: this.pendingPerResource.get(resource) ?? 0,
      });
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
        const commit = this.commitBaseline().finally(() => {
          if (this.baselineCommit === commit) this.baselineCommit = undefined;
        });
        this.baselineCommit = commit;
      }
    }
    return this.baselineCommit;
  }

  private async commitBaseline(): Promise<void> {
    for (;;) {
      // Another commit first (it may hold none of the baseline): then one of this method's own.
      if (this.writing) {
        await this.writing;
        continue;
      }
      const before = this.baselinePending;
      await this.flush();
      // Committed (a batch holds at most MAX_BATCH), or no progress: the store failing, down, or a
      // discovery's note waiting for a sink ahead of the rest.
      if (this.baselinePending === 0 || this.baselinePending >= before || !this.recording) return;
    }
  }

  /**
   * PipelineObserver: each change of an informer's store (a baseline object too), once its event went
   * to the sinks. The event (kept for `kubediff history`) and the object are queued, to be committed
   * when every sink has finished with what it had accepted at `mark`.
   */
  changeProcessed(change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark): void {
    // The event is this change's: its resource is the change's type, named once for both rows.
    const resource = qualifiedName(change.type);
    if (reported) this.queue({ kind: 'event', resource, event: reported }, mark);
    if (change.kind === 'deleted') this.queue({ kind: 'delete', resource, key: change.object.key }, mark);
    // A baseline's object carries no event: it waits for no sink.
    else if (change.kind === 'baseline' && !reported)
      this.queue({ kind: 'object', resource, object: change.object }, [], true);
    else this.queue({ kind: 'object', resource, object: change.object }, mark);
  }

  /**
   * Commits what every sink has finished with. Called by a timer; `all` at the end, after the sinks
   * closed. One commit at a time: while one is writing, this waits for it.
   */
  flush(all = false): Promise<void> {
    if (this.writing) return this.writing;
    if (this.failed || !this.leading) return Promise.resolve();
    if (this.down && !all && Date.now() < this.retryAt) return Promise.resolve();
    // At most MAX_BATCH per transaction, so that a huge baseline does not stall the event loop at once.
    return this.commit(
      all
        ? this.pending.slice()
        : committable(this.pending, this.progress.finished(), MAX_BATCH, this.baselinePending),
    );
  }

  /**
   * The backlog passed maxBacklogBytes: commit the oldest entries down to half of it, whether or not the
   * sinks have finished with them (see the bound at the top). When the store cannot take them now (down,
   * or busy with a commit), drop them instead.
   */
  private relieve(): void {
    if (this.down) {
      this.drop();
      return;
    }
    if (this.writing) {
      // After the commit in progress; meanwhile at most twice the bound is held, beyond it the oldest go.
      this.relieveAfterWrite = true;
      if (this.pendingBytes > 2 * this.maxBacklogBytes) this.drop();
      return;
    }
    const finished = this.progress.finished();
    let count = 0;
    let bytes = this.pendingBytes;
    let early = 0;
    let behind: number[] = [];
    while (count < this.pending.length && bytes > this.maxBacklogBytes / 2) {
      const entry = this.pending[count] as Pending;
      if (!reached(finished, entry.mark)) {
        if (early === 0) behind = lagging(finished, entry.mark);
        early++;
      }
      bytes -= entry.bytes;
      count++;
    }
    if (early > 0) {
      if (this.unconfirmed === 0) {
        const names = this.progress.names?.() ?? [];
        const sinks = behind.map((index) => names[index] ?? `sink ${index + 1}`).join(', ');
        this.log.warn(
          `state: ${sinks || 'a sink'} is more than ${formatSize(this.maxBacklogBytes)} of changes behind; the state store ` +
            'records them before it has delivered them, so that memory stays bounded. A kill -9 now could lose, ' +
            'for that sink only, what it still has queued (a clean stop reports it or writes it to the dead-letter ' +
            'file, as always). Counted in kubediff_state_unconfirmed_writes_total; logged once.',
        );
      }
      this.unconfirmed += early;
    }
    void this.commit(this.pending.slice(0, count));
  }

  /** Drops the oldest entries not being written, down to half the bound (counted, logged once). */
  private drop(): void {
    let count = 0;
    let bytes = this.pendingBytes;
    const kept: Pending[] = [];
    const dropped: Pending[] = [];
    for (const entry of this.pending) {
      // A discovery's note is kept (one per change of what the server offers): catch-up needs it.
      if (
        bytes > this.maxBacklogBytes / 2 &&
        !this.inFlight.has(entry) &&
        entry.write.kind !== 'resources' &&
        entry.write.kind !== 'forget'
      ) {
        bytes -= entry.bytes;
        count++;
        dropped.push(entry);
      } else kept.push(entry);
    }
    if (count === 0) return;
    if (this.dropped === 0) {
      this.log.warn(
        `state: ${this.store.label} has not taken the changes of the last ${formatSize(this.maxBacklogBytes)}; ` +
          'the oldest are dropped so that memory stays bounded: their history is lost, and the next start reports ' +
          'their objects again where they differ. Counted in kubediff_state_dropped_writes_total; logged once.',
      );
    }
    this.dropped += count;
    this.pending = kept;
    this.pendingBytes = bytes;
    // Dropped entries count as done: the types whose first LIST they end may be marked listed.
    this.settled(dropped);
  }

  /** Empties the queue: what it held is neither committed nor waiting any more. */
  private clearQueue(): void {
    this.settled(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Accounts for entries that left the queue (committed or dropped). */
  private settled(entries: readonly Pending[]): void {
    for (const entry of entries) {
      if (entry.baseline) this.baselinePending--;
      const resource = resourceOf(entry.write);
      if (resource === undefined) continue;
      this.pendingPerResource.set(resource, (this.pendingPerResource.get(resource) ?? 1) - 1);
      const firstList = this.firstLists.get(resource);
      if (firstList && entry.seq < firstList.until) firstList.left--;
    }
  }

  /** Commits `batch`, queue entries in queue order (and marks the types they complete as listed). */
  private commit(batch: readonly Pending[]): Promise<void> {
    // Types whose first LIST is entirely in this commit or before: their objects in the store are complete.
    const listed = this.newlyListed(batch);
    const due = Date.now() - this.lastPrune >= this.pruneIntervalMs;
    // Idle: no write at all.
    if (batch.length === 0 && listed.size === 0 && !due && !this.claimPending) return Promise.resolve();
    this.inFlight = new Set(batch);
    const done = this.write(batch, listed, due).finally(() => {
      this.inFlight = new Set();
      this.writing = undefined;
      if (this.relieveAfterWrite) {
        this.relieveAfterWrite = false;
        if (this.pendingBytes > this.maxBacklogBytes) this.relieve();
      }
    });
    this.writing = done;
    return done;
  }

  private async write(batch: readonly Pending[], listed: Map<string, string>, due: boolean): Promise<void> {
    try {
      // A new leader writes nothing before it holds the claim and the snapshot is its own.
      if (this.claimPending) {
        if (!(await this.takeClaim())) return;
        // The resync marked what it wrote as listed.
        for (const resource of this.listed.keys()) listed.delete(resource);
      }
      if (batch.length > 0 || listed.size > 0) {
        await this.store.write(
          batch.map((entry) => entry.write),
          listed,
        );
        for (const [resource, resourceVersion] of listed) this.listed.set(resource, resourceVersion);
      }
      this.remove(batch);
      if (this.down) {
        this.down = false;
        this.retry.reset();
        this.log.info(
          `state: ${this.store.label} is reachable again; the changes buffered meanwhile are recorded.`,
        );
      }
      this.announceWhenDurable();
      if (due) await this.pruneNow();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Takes committed entries out of the queue (a prefix, or a prefix and baseline entries past it). */
  private remove(batch: readonly Pending[]): void {
    if (batch.length === 0) return;
    if (this.pending[batch.length - 1] === batch.at(-1)) this.pending.splice(0, batch.length);
    else {
      const taken = new Set(batch);
      this.pending = this.pending.filter((entry) => !taken.has(entry));
    }
    for (const entry of batch) this.pendingBytes -= entry.bytes;
    this.settled(batch);
  }

  /**
   * A first run says that it records state once it can keep that promise: every informer has ended its
   * first LIST (or failed it) and every type listed is marked so in the store (its baseline committed).
   */
  private announceWhenDurable(): void {
    if (this.announced || this.catchingUp || this.claimed) return;
    const informers = this.informers();
    if (informers.length === 0) return;
    for (const informer of informers) {
      if (informer.hasSynced ? !this.listed.has(qualifiedName(informer.type)) : !informer.failure) return;
    }
    this.announced = true;
    this.log.info(`recording state in ${this.store.label}: the next start will catch up on what it missed.`);
  }

  /** After the sinks closed: commit everything, close the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.steppingDown;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.writing;
    // One more attempt even when the store was down: it may be back.
    await this.flush(true);
    if (this.pending.length > 0) {
      this.dropped += this.pending.length;
      this.log.warn(
        `state: ${this.pending.length} change(s) could not be recorded in ${this.store.label} before exiting; ` +
          'the next start reports their objects again where they differ.',
      );
      this.clearQueue();
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
  startedLeading(events: readonly ChangeEvent[]): void {
    if (!this.claimed || this.leading || this.closed || this.failed) return;
    this.leading = true;
    this.beginClaim();
    const mark = this.progress.accepted?.() ?? [];
    for (const event of events)
      this.queue({ kind: 'event', resource: qualifiedResource(event), event }, mark);
  }

  /**
   * The leader gate: this replica no longer leads. What the sinks have finished with is committed (on a
   * clean stop that is everything: they drained before the Lease was released), the rest is not
   * recorded (counted as dropped), and the claim is released for the next leader.
   */
  stoppedLeading(): void {
    if (!this.claimed || !this.leading) return;
    this.leading = false;
    this.steppingDown = this.standDown(this.claimed);
  }

  private async standDown(store: ClaimedStateStore): Promise<void> {
    await this.writing;
    if (!this.claimPending && !this.failed) {
      const finished = this.progress.finished();
      await this.commit(committable(this.pending, finished, this.pending.length, this.baselinePending));
    }
    // Leading again meanwhile (the Lease regained at once): what is left is recorded after the new claim.
    if (this.leading) return;
    const left = this.pending.filter((entry) => entry.write.kind === 'event').length;
    if (left > 0) {
      this.dropped += left;
      this.log.warn(
        `state: stopped leading with ${left} event(s) not yet delivered by the sinks; they are not recorded in ` +
          `the history (counted in kubediff_state_dropped_writes_total).`,
      );
    }
    this.clearQueue();
    this.down = false;
    this.claimPending = false;
    try {
      await store.release();
    } catch (error) {
      this.log.debug(
        `state: releasing the claim failed: ${errorMessage(error)} (it ends with the connection).`,
      );
    }
  }

  private beginClaim(): void {
    this.claimPending = true;
    this.claimRetryAt = 0;
    this.leadingSince = Date.now();
    this.fenced = false;
    this.waitLogged = false;
  }

  /**
   * Claims the cluster and brings the snapshot up to date; false while the previous leader still holds
   * the claim (retried every CLAIM_RETRY_MS; after fenceAfterMs its session is ended).
   */
  private async takeClaim(): Promise<boolean> {
    const store = this.claimed as ClaimedStateStore;
    if (Date.now() < this.claimRetryAt) return false;
    if (!(await store.claim())) {
      const waited = Date.now() - this.leadingSince;
      if (waited >= this.fenceAfterMs && !this.fenced) {
        this.fenced = true;
        await this.fence(store);
      } else if (!this.waitLogged) {
        this.waitLogged = true;
        this.log.info(
          `state: waiting for the previous leader to commit and release its claim on the cluster in ${store.label}; ` +
            `changes are kept meanwhile (its session is ended after ${formatDuration(this.fenceAfterMs)}).`,
        );
      }
      this.claimRetryAt = Date.now() + CLAIM_RETRY_MS;
      return false;
    }
    const { written, removed } = await this.resync(store);
    this.claimPending = false;
    this.log.info(
      `state: recording in ${store.label} as the leader (snapshot brought up to date: ${written} object(s) written, ${removed} removed).`,
    );
    return true;
  }

  private async fence(store: ClaimedStateStore): Promise<void> {
    try {
      const ended = await store.fence();
      if (ended > 0)
        this.log.warn(
          `state: the previous leader still held the claim ${formatDuration(this.fenceAfterMs)} after this replica took over; ` +
            'ended its database session (its process is gone, or cut off).',
        );
    } catch (error) {
      if (store.isTransient(error)) throw error;
      this.log.warn(
        `state: cannot end the session that still holds the claim in ${store.label}: ${errorMessage(error)}; ` +
          'waiting for it to end (give both replicas the same database role, or grant pg_signal_backend).',
      );
    }
  }

  /**
   * Makes the store's snapshot this replica's: the discovery as it saw it last, and per watched type the
   * objects of its informers (written where the resourceVersion differs, removed where gone; a type whose
   * first LIST is not complete only gets writes). Types not watched any more lose their objects.
   */
  private async resync(store: ClaimedStateStore): Promise<{ written: number; removed: number }> {
    if (this.lastNote) await store.write([this.lastNote], new Map());
    await store.setMeta(SIGNATURE_KEY, this.signature);
    const byResource = new Map<string, Informer[]>();
    for (const informer of this.informers()) {
      const resource = qualifiedName(informer.type);
      byResource.set(resource, [...(byResource.get(resource) ?? []), informer]);
    }
    const stale: SerializedWrite[] = (await store.resources())
      .filter((entry) => !byResource.has(entry.resource))
      .map((entry) => ({ kind: 'forget', resource: entry.resource }));
    if (stale.length > 0) await store.write(stale, new Map());
    let written = 0;
    let removed = 0;
    for (const [resource, informers] of byResource) {
      const recorded = await store.objectVersions(resource);
      const synced = informers.every((informer) => informer.hasSynced);
      const batch: SerializedWrite[] = [];
      for (const informer of informers) {
        for (const object of informer.objects()) {
          const before = recorded.get(object.key);
          recorded.delete(object.key);
          if (before === object.resourceVersion) continue;
          try {
            batch.push(serializeWrite({ kind: 'object', resource, object }));
          } catch (error) {
            this.failures?.report(
              'recorder',
              'recording the change in the state store',
              identityOf(resource, object),
              error,
              'it is not recorded; the next start reports it again',
            );
          }
        }
      }
      if (synced) for (const key of recorded.keys()) batch.push({ kind: 'delete', resource, key });
      written += batch.filter((write) => write.kind === 'object').length;
      removed += synced ? recorded.size : 0;
      const resourceVersion = informers[0]?.resourceVersion ?? '';
      for (let start = 0; start < batch.length || start === 0; start += MAX_BATCH) {
        const last = start + MAX_BATCH >= batch.length;
        await store.write(
          batch.slice(start, start + MAX_BATCH),
          last && synced ? new Map([[resource, resourceVersion]]) : new Map(),
        );
      }
      if (synced) this.listed.set(resource, resourceVersion);
    }
    return { written, removed };
  }

  /** Whether only the leader records (a shared store under --leader-elect): it follows the leader gate. */
  get followsLeadership(): boolean {
    return this.claimed !== undefined;
  }

  /** Whether this process records now: not on a standby, nor while it waits for the claim (a metric). */
  get recording(): boolean {
    return this.leading && !this.claimPending && !this.failed && !this.closed;
  }

  /** Bytes of the entries waiting for the sinks, as accounted against maxBacklogBytes (a metric). */
  get backlogBytes(): number {
    return this.pendingBytes;
  }

  /** Entries committed before every sink had finished with them, because the backlog was full (a metric). */
  get unconfirmedWrites(): number {
    return this.unconfirmed;
  }

  /** Entries dropped because the store could not take them within the bound (a metric). */
  get droppedWrites(): number {
    return this.dropped;
  }

  private queue(write: StateWrite, mark: DeliveryMark, baseline = false): void {
    if (this.closed || this.failed || !this.leading) return;
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
    this.push(serialized, mark, baseline);
  }

  private push(write: SerializedWrite, mark: DeliveryMark, baseline = false): void {
    if (this.closed || this.failed) return;
    if (write.kind === 'resources') this.lastNote = write;
    // A standby: the snapshot is brought up to date when it takes over; the discovery is noted then.
    if (!this.leading) return;
    const bytes = ENTRY_OVERHEAD_BYTES + sizeOf(write);
    this.pending.push({ write, mark, bytes, seq: this.queued++, baseline });
    this.pendingBytes += bytes;
    if (baseline) this.baselinePending++;
    const resource = resourceOf(write);
    if (resource !== undefined)
      this.pendingPerResource.set(resource, (this.pendingPerResource.get(resource) ?? 0) + 1);
    if (this.pendingBytes > this.maxBacklogBytes) this.relieve();
  }

  /**
   * Types whose informers (all of them, with -n) have synced, and whose first LIST's entries are all
   * committed once `batch` is, not yet marked in the store.
   */
  private newlyListed(batch: readonly Pending[]): Map<string, string> {
    const versions = new Map<string, string>();
    const incomplete = new Set<string>();
    for (const informer of this.informers()) {
      const resource = qualifiedName(informer.type);
      const resourceVersion = this.syncedAt.get(informer);
      if (resourceVersion === undefined) incomplete.add(resource);
      else versions.set(resource, resourceVersion);
    }
    const inBatch = new Map<string, number>();
    for (const entry of batch) {
      const resource = resourceOf(entry.write);
      const firstList = resource === undefined ? undefined : this.firstLists.get(resource);
      if (resource !== undefined && firstList && entry.seq < firstList.until)
        inBatch.set(resource, (inBatch.get(resource) ?? 0) + 1);
    }
    for (const resource of versions.keys()) {
      const left = (this.firstLists.get(resource)?.left ?? 0) - (inBatch.get(resource) ?? 0);
      if (incomplete.has(resource) || this.listed.has(resource) || left > 0) versions.delete(resource);
    }
    return versions;
  }

  private async pruneNow(): Promise<void> {
    this.lastPrune = Date.now();
    try {
      const removed = await this.store.prune(this.retention);
      if (removed > 0) this.log.debug(`state: removed ${removed} event(s) from the history (retention).`);
    } catch (error) {
      // Retention is retried at the next interval; a store that is down is reported by the writes.
      if (!this.store.isTransient(error)) this.fail(error);
    }
  }

  /**
   * A transient failure (the database unreachable or slow) keeps the queue and retries with backoff; any
   * other (a full or read-only disk) stops recording, and the watch goes on.
   */
  private fail(error: unknown): void {
    if (error instanceof ClaimLost && this.claimed) {
      // Reconnected after another process claimed the cluster: this replica is about to learn that it
      // no longer leads; meanwhile the queue waits for the claim, as after a takeover.
      this.log.warn(`state: ${errorMessage(error)} until this replica holds the claim again.`);
      this.beginClaim();
      return;
    }
    if (this.store.isTransient(error)) {
      if (!this.down) {
        this.log.warn(
          `state: cannot write to ${this.store.label}: ${errorMessage(error)}; changes are still reported, and kept ` +
            `(up to ${formatSize(this.maxBacklogBytes)}) to be recorded when it answers again.`,
        );
      }
      this.down = true;
      this.retryAt = Date.now() + this.retry.next();
      return;
    }
    this.failed = true;
    this.clearQueue();
    this.log.warn(
      `cannot write the state to ${this.store.label}: ${errorMessage(error)}; changes are still reported, ` +
        'but no longer recorded, and the next start will not catch up on them.',
    );
  }
}

/** The claimed store of a leader-elected recorder, which records only while leading; else undefined. */
function standingBy(options: StateRecorderOptions): ClaimedStateStore | undefined {
  return options.leaderElected && isClaimed(options.store) ? options.store : undefined;
}

/** What an entry's JSON costs in memory, as accounted against maxBacklogBytes. */
function sizeOf(write: SerializedWrite): number {
  switch (write.kind) {
    case 'delete':
    case 'forget':
      return write.resource.length;
    case 'resources':
      return write.entries.reduce((sum, entry) => sum + entry.json.length + entry.resource.length, 0);
    default:
      return write.json.length;
  }
}

/**
 * What a commit may take now, in queue order, at most `limit` entries: the longest prefix whose events
 * every sink has finished with, then baseline entries past it (`baselines` are pending in all) that
 * nothing waiting must precede: none past a discovery's note that waits, none for an object that has an
 * entry waiting before it.
 */
function committable(
  pending: readonly Pending[],
  finished: readonly number[],
  limit: number,
  baselines: number,
): Pending[] {
  const taken: Pending[] = [];
  let left = baselines;
  let index = 0;
  for (; index < pending.length && taken.length < limit; index++) {
    const entry = pending[index] as Pending;
    if (!reached(finished, entry.mark)) break;
    taken.push(entry);
    if (entry.baseline) left--;
  }
  const waiting = new Set<string>();
  for (; index < pending.length && taken.length < limit && left > 0; index++) {
    const { write, baseline } = pending[index] as Pending;
    if (write.kind === 'resources' || write.kind === 'forget') break;
    if (write.kind === 'event') continue;
    const key = `${write.resource}/${write.key}`;
    if (baseline && !waiting.has(key)) {
      taken.push(pending[index] as Pending);
      left--;
    } else waiting.add(key);
  }
  return taken;
}

/** The resource type a write is about; none for a discovery's note. */
function resourceOf(write: SerializedWrite): string | undefined {
  return write.kind === 'resources' ? undefined : write.resource;
}

function reached(finished: readonly number[], mark: DeliveryMark): boolean {
  for (let i = 0; i < mark.length; i++) if ((finished[i] ?? 0) < (mark[i] ?? 0)) return false;
  return true;
}

/** The sinks (indices) that have not finished up to `mark`. */
function lagging(finished: readonly number[], mark: DeliveryMark): number[] {
  return mark.flatMap((needed, index) => ((finished[index] ?? 0) < needed ? [index] : []));
}

/** The object a write is about, for failure reports. */
function subjectOf(write: Exclude<StateWrite, { kind: 'event' }>): { name: string; namespace?: string } {
  return write.kind === 'object' ? write.object : { name: write.key };
}

/** The newest resourceVersion any informer has seen (numeric when the server's are, as etcd's are). */
function newestResourceVersion(informers: readonly Informer[]): string | undefined {
  let best: bigint | undefined;
  for (const informer of informers) {
    if (!/^\d+$/.test(informer.resourceVersion)) continue;
    const value = BigInt(informer.resourceVersion);
    if (best === undefined || value > best) best = value;
  }
  return best?.toString();
}

/** Sinks' progress from their counters (src/sinks/sink.ts), in the router's order. */
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

/** What the recorded objects depend on: with other values they cannot be compared (see StateRecorderOptions). */
export function selectionSignature(settings: {
  namespaces: readonly string[];
  excludeNamespaces: readonly string[];
  labelSelector: string | undefined;
  ignoredPaths: readonly string[];
  /**
   * What redaction the recorded objects went through: objects redacted otherwise would compare as changed,
   * or hold values in the clear that are redacted now (src/config/redaction.ts, redactionSignature).
   */
  redaction: string;
}): string {
  return JSON.stringify({
    namespaces: [...settings.namespaces].sort(),
    excludeNamespaces: [...settings.excludeNamespaces].sort(),
    labelSelector: settings.labelSelector ?? '',
    ignoredPaths: [...settings.ignoredPaths].sort(),
    redaction: settings.redaction,
  });
}
