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
// Bounded (memory): the queue holds each write serialized, and at most
// `maxBacklogBytes` of them. A sink that is slow or down (a webhook retrying
// for minutes) would otherwise keep every change, whole object included, in
// memory until it recovers. At the bound the oldest writes are committed
// before that sink has finished with them, down to half the bound: memory
// stays bounded and the watch and the other sinks go on, at the price that a
// kill -9 meanwhile can lose, for that sink only, changes it still had queued
// (a clean stop hands them to the dead-letter file or reports them, as
// always). Logged once, counted (unconfirmedWrites, a metric).
import { type ChangeEvent, qualifiedResource } from '../events/event.ts';
import type { DeliveryMark, PipelineObserver, StoreChange } from '../events/pipeline.ts';
import type { Informer, InformerHandler, InitialListMode } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { StoredObject } from '../informer/store.ts';
import type { Selection } from '../kube/selection.ts';
import { qualifiedName, type ResourceType } from '../kube/types.ts';
import { errorMessage } from '../util/errors.ts';
import { type EventFailures, identityOf } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { formatSize } from '../util/size.ts';
import {
  DEFAULT_RETENTION,
  type Retention,
  type SerializedWrite,
  type StateDatabase,
  type StateWrite,
  serializeWrite,
} from './database.ts';

/** What an informer starts with. */
export interface InformerPlan {
  initialList: InitialListMode;
  /** The recorded objects: the first LIST is reconciled against them (catch-up). */
  preload?: StoredObject[];
}

/** Per sink, in the router's order: events finished with so far (accepted − pending). */
export interface DeliveryProgress {
  finished(): number[];
  /** The sinks' names, in the same order (for the log). */
  names?(): string[];
}

export interface StateRecorderOptions {
  database: StateDatabase;
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
}

interface Pending {
  write: SerializedWrite;
  /** Per sink, the accepted count that must be finished before this entry may be committed. */
  mark: DeliveryMark;
  /** What the entry costs, as accounted against maxBacklogBytes. */
  bytes: number;
}

const SIGNATURE_KEY = 'selection';
const MAX_BATCH = 5_000;
const DEFAULT_MAX_BACKLOG_BYTES = 64 * 1024 * 1024;
/** Per entry, besides its JSON: the entry, its mark and its keys (an estimate, on the high side). */
const ENTRY_OVERHEAD_BYTES = 200;

export class StateRecorder implements PipelineObserver {
  private readonly db: StateDatabase;
  private readonly log: Logger;
  private readonly retention: Retention;
  private readonly flushIntervalMs: number;
  private readonly pruneIntervalMs: number;
  /** The previous run's state: true when there is one to catch up from. */
  private readonly catchingUp: boolean;
  private readonly previous: Map<string, { watched: boolean; listed: boolean; type: ResourceType }>;
  private pending: Pending[] = [];
  private progress: DeliveryProgress = { finished: () => [] };
  private informers: () => Informer[] = () => [];
  private timer: NodeJS.Timeout | undefined;
  private lastPrune = 0;
  /** Queue entries ever queued, and ever committed (positions in one sequence). */
  private queued = 0;
  private committed = 0;
  /** Where in that sequence each informer's first LIST ended. */
  private readonly syncedAt = new Map<Informer, { seq: number; resourceVersion: string }>();
  /** What the file says each listed type was followed to. */
  private readonly listed = new Map<string, string>();
  private closed = false;
  private failed = false;
  private readonly maxBacklogBytes: number;
  private readonly failures: EventFailures | undefined;
  private pendingBytes = 0;
  private unconfirmed = 0;

  constructor(options: StateRecorderOptions) {
    this.db = options.database;
    this.log = options.log;
    this.maxBacklogBytes = options.maxBacklogBytes ?? DEFAULT_MAX_BACKLOG_BYTES;
    this.failures = options.failures;
    this.retention = options.retention ?? DEFAULT_RETENTION;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    this.pruneIntervalMs = options.pruneIntervalMs ?? 10 * 60_000;
    const recorded = this.db.getMeta(SIGNATURE_KEY);
    const resources = this.db.resources();
    if (recorded !== undefined && recorded !== options.signature && resources.length > 0) {
      this.log.warn(
        `the state file ${this.db.path} was written with other namespaces, label selector, ignored paths or redaction; ` +
          'taking a new baseline instead of catching up (the history is kept).',
      );
      this.db.forgetObjects();
      this.previous = new Map();
    } else {
      this.previous = new Map(
        resources.map((entry) => [
          entry.resource,
          { watched: entry.watched, listed: entry.listed, type: entry.type },
        ]),
      );
    }
    this.catchingUp = this.previous.size > 0;
    this.db.setMeta(SIGNATURE_KEY, options.signature);
    this.pruneNow();
  }

  /** True when the file holds a previous run's state: startup is a catch-up, not a baseline. */
  get hasPreviousState(): boolean {
    return this.catchingUp;
  }

  /** The sinks' counters (src/sinks/router.ts) and the informers, once they exist. */
  attach(progress: DeliveryProgress, informers: () => Informer[]): void {
    this.progress = progress;
    this.informers = informers;
    this.timer = setInterval(() => this.flush(), this.flushIntervalMs);
    this.timer.unref();
  }

  /** How an informer for `type` (in `namespace`) starts; `fallback` is what it would do without state. */
  plan(type: ResourceType, namespace: string | undefined, fallback: InitialListMode): InformerPlan {
    // A type appearing while running (fallback 'added-offline') is new whatever the file says.
    if (!this.catchingUp || fallback === 'added-offline') return { initialList: fallback };
    const resource = qualifiedName(type);
    const before = this.previous.get(resource);
    if (!before) return { initialList: 'added-offline' }; // not offered last time: created while down
    if (!before.watched) return { initialList: 'silent' }; // offered, but not watched: a new baseline
    const preload = this.db.objects(resource, namespace);
    if (!before.listed && preload.length === 0) return { initialList: 'silent' };
    return { initialList: 'silent', preload };
  }

  /** Each (re-)discovery: remember what the server offers and what is watched. */
  noteSelection(selection: Selection): void {
    if (this.closed || this.failed) return;
    const entries = [
      ...selection.watched.map((type) => ({ type, resource: qualifiedName(type), watched: true })),
      ...selection.skipped.map(({ type }) => ({ type, resource: qualifiedName(type), watched: false })),
    ];
    this.guard(() => {
      // Types served but no longer watched: their objects are not followed any more.
      const watched = new Set(selection.watched.map(qualifiedName));
      // A type that stops being watched (or served) must be listed again when it comes back.
      for (const resource of [...this.listed.keys()])
        if (!watched.has(resource)) this.listed.delete(resource);
      for (const entry of entries) {
        if (!watched.has(entry.resource) && this.previous.get(entry.resource)?.watched)
          this.db.forgetObjects(entry.resource);
      }
      this.db.saveResources(entries);
    });
  }

  /**
   * After the first sync: every object of a type recorded by the previous run that the server no longer
   * offers (a CRD deleted while kubediff was down) is reported DELETED offline, finalStateUnknown.
   */
  reportVanishedTypes(selection: Selection, handler: InformerHandler): void {
    if (!this.catchingUp) return;
    const served = new Set(
      [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)].map(qualifiedName),
    );
    const resourceVersion = newestResourceVersion(this.informers());
    for (const [resource, before] of this.previous) {
      if (served.has(resource) || !before.watched) continue;
      const objects = this.db.objects(resource);
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
      this.syncedAt.set(informer, { seq: this.queued, resourceVersion: informer.resourceVersion });
    }
  }

  /**
   * PipelineObserver: each change of an informer's store (a baseline object too), once its event went
   * to the sinks. The event (kept for `kubediff history`) and the object are queued, to be committed
   * when every sink has finished with what it had accepted at `mark`.
   */
  changeProcessed(change: StoreChange, reported: ChangeEvent | undefined, mark: DeliveryMark): void {
    const resource = qualifiedName(change.type);
    if (reported) this.queue({ kind: 'event', resource: qualifiedResource(reported), event: reported }, mark);
    if (change.kind === 'deleted') this.queue({ kind: 'delete', resource, key: change.object.key }, mark);
    else this.queue({ kind: 'object', resource, object: change.object }, mark);
  }

  /** Commits what every sink has finished with. Called by a timer; `all` at the end, after the sinks closed. */
  flush(all = false): void {
    if (this.failed) return;
    const finished = this.progress.finished();
    let count = 0;
    if (all) count = this.pending.length;
    else {
      // At most MAX_BATCH per transaction, so that a huge baseline does not stall the event loop at once.
      const limit = Math.min(this.pending.length, MAX_BATCH);
      while (count < limit && reached(finished, this.pending[count]?.mark ?? [])) count++;
    }
    this.commit(count);
  }

  /**
   * The backlog passed maxBacklogBytes: commit the oldest entries down to half of it, whether or not the
   * sinks have finished with them (see the bound at the top).
   */
  private relieve(): void {
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
          `state: ${sinks || 'a sink'} is more than ${formatSize(this.maxBacklogBytes)} of changes behind; the state file ` +
            'records them before it has delivered them, so that memory stays bounded. A kill -9 now could lose, ' +
            'for that sink only, what it still has queued (a clean stop reports it or writes it to the dead-letter ' +
            'file, as always). Counted in kubediff_state_unconfirmed_writes_total; logged once.',
        );
      }
      this.unconfirmed += early;
    }
    this.commit(count);
  }

  /** Commits the first `count` queue entries (and marks the types they complete as listed). */
  private commit(count: number): void {
    // Types whose first LIST is entirely in this commit or before: their objects in the file are complete.
    const listed = this.newlyListed(this.committed + count);
    const due = Date.now() - this.lastPrune >= this.pruneIntervalMs;
    if (count === 0 && listed.size === 0 && !due) return; // idle: no write at all
    const batch = this.pending.slice(0, count);
    this.guard(() => {
      if (count > 0 || listed.size > 0) {
        this.db.writeSerialized(
          batch.map((entry) => entry.write),
          () => {
            for (const [resource, resourceVersion] of listed) this.db.markListed(resource, resourceVersion);
          },
        );
        for (const [resource, resourceVersion] of listed) this.listed.set(resource, resourceVersion);
      }
      this.pending = this.pending.slice(count);
      for (const entry of batch) this.pendingBytes -= entry.bytes;
      this.committed += count;
      if (due) this.pruneNow();
    });
  }

  /** After the sinks closed: commit everything, checkpoint, close the file. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.flush(true);
    this.guard(() => this.db.checkpoint());
    this.db.close();
  }

  /** Bytes of the entries waiting for the sinks, as accounted against maxBacklogBytes (a metric). */
  get backlogBytes(): number {
    return this.pendingBytes;
  }

  /** Entries committed before every sink had finished with them, because the backlog was full (a metric). */
  get unconfirmedWrites(): number {
    return this.unconfirmed;
  }

  private queue(write: StateWrite, mark: DeliveryMark): void {
    if (this.closed || this.failed) return;
    let serialized: SerializedWrite;
    try {
      serialized = serializeWrite(write);
    } catch (error) {
      // Not recorded: the file keeps the state before it, and the next start reports the change again.
      if (!this.failures) throw error;
      this.failures.report(
        'recorder',
        'recording the change in the state file',
        identityOf(write.resource, write.kind === 'event' ? write.event.object : subjectOf(write)),
        error,
        'it is not recorded; the next start reports it again',
      );
      return;
    }
    const bytes =
      ENTRY_OVERHEAD_BYTES + (serialized.kind === 'delete' ? serialized.key.length : serialized.json.length);
    this.pending.push({ write: serialized, mark, bytes });
    this.pendingBytes += bytes;
    this.queued++;
    if (this.pendingBytes > this.maxBacklogBytes) this.relieve();
  }

  /**
   * Types whose informers (all of them, with -n) have synced, and whose first LIST's objects are all
   * committed once the first `committed` queue entries are, not yet marked in the file.
   */
  private newlyListed(committed: number): Map<string, string> {
    const versions = new Map<string, string>();
    const incomplete = new Set<string>();
    for (const informer of this.informers()) {
      const resource = qualifiedName(informer.type);
      const synced = this.syncedAt.get(informer);
      if (!synced || synced.seq > committed) incomplete.add(resource);
      else versions.set(resource, synced.resourceVersion);
    }
    for (const resource of versions.keys()) {
      if (incomplete.has(resource) || this.listed.has(resource)) versions.delete(resource);
    }
    return versions;
  }

  private pruneNow(): void {
    this.lastPrune = Date.now();
    const removed = this.db.prune(this.retention);
    if (removed > 0) this.log.debug(`state: removed ${removed} event(s) from the history (retention).`);
  }

  /** A failing state file (disk full, permissions) stops recording; the watch goes on. */
  private guard(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.failed = true;
      this.pending = [];
      this.pendingBytes = 0;
      this.log.warn(
        `cannot write the state file ${this.db.path}: ${errorMessage(error)}; changes are still reported, ` +
          'but no longer recorded, and the next start will not catch up on them.',
      );
    }
  }
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
