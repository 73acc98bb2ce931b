// One resource type's informer: a reflector feeding a store, and handlers
// told about each add, update and delete. Like client-go's shared informer,
// but it reconciles every LIST against the store itself, so that a relist
// after 410 Gone (or a restart) reports exactly what changed in the gap:
// an object whose resourceVersion did not change but which the API server
// now serves differently (a CRD gained a default, nobody wrote the object)
// is an update too, reported as one without a write (UpdateContext.withoutWrite),
// never folded silently into the store. With a replay point (--state), the changes between it and the
// first LIST are read too, for what the LIST cannot show: objects created and deleted in between.

import type { KubeError } from '../kube/errors.ts';
import type { ListerWatcher } from '../kube/lister-watcher.ts';
import { type ManagedFieldsEntry, managedFieldsOf, managersSignature } from '../kube/managed-fields.ts';
import {
  type JsonObject,
  type KubeObject,
  objectKey,
  qualifiedName,
  type ResourceType,
} from '../kube/types.ts';
import { type FailureReporter, identityOf } from '../util/event-failures.ts';
import { jsonEqual } from '../util/json-equal.ts';
import {
  Reflector,
  type ReflectorOptions,
  type ReflectorSink,
  type ReflectorState,
  type WatchEventType,
} from './reflector.ts';
import { ObjectStore, type StoredObject } from './store.ts';

/**
 * Set on a change of the replay (InformerOptions.replayFrom): of an object created after the replay
 * point and gone by the first LIST, which the informer's store never holds.
 */
interface ReplayMark {
  replayed?: true;
}

export interface AddContext extends ReplayMark {
  /** Seen by a LIST rather than a live watch event: it happened while kubediff was not looking. */
  offline: boolean;
  /** Part of the first LIST's inventory (--initial), not a change. */
  initial: boolean;
  /** The object's managedFields as served, for this call only: the store never keeps them. */
  managedFields?: readonly ManagedFieldsEntry[] | undefined;
}
export interface UpdateContext extends ReplayMark {
  offline: boolean;
  /** The new version's managedFields as served, for this call only (the previous one's signature is stored). */
  managedFields?: readonly ManagedFieldsEntry[] | undefined;
  /**
   * Set when the object changed without a write: a LIST found it at the resourceVersion the store holds,
   * served differently. `resourceVersion` is that LIST's: where in the collection's history it was seen.
   */
  withoutWrite?: { cause: WithoutWriteCause; resourceVersion: string } | undefined;
}

/**
 * Why an object changed without a write: `schema`, its CRD changed how the API server serves it (a
 * default, pruning, a version, conversion) and kubediff re-read the type; `relist`, a relist found it so
 * and nothing tells why (a CRD or the API server changed while kubediff was not looking).
 */
export type WithoutWriteCause = 'schema' | 'relist';

/**
 * After a CRD changed, how long a relist of its type is said to be caused by it, and every watch that
 * ends is followed by a relist: the API server retires the old storage (ending its watches) after its
 * requests drain, at most twice its request timeout (2 × 60 s).
 */
export const SCHEMA_SETTLE_MS = 120_000;
export interface DeleteContext extends ReplayMark {
  offline: boolean;
  /** The object vanished between two LISTs: its last state is the one we had. */
  finalStateUnknown: boolean;
  /** The resourceVersion at which the deletion was seen. */
  resourceVersion: string;
  /**
   * A live deletion: the resourceVersion the store held before it (the object handed over is the
   * server's final state, with the deletion's resourceVersion). Otherwise it is the object's own.
   */
  previousResourceVersion?: string;
}

/** Receives every change; the diff stage decides whether an update changed anything that matters. */
export interface InformerHandler {
  onAdd(type: ResourceType, object: StoredObject, context: AddContext): void;
  onUpdate(type: ResourceType, previous: StoredObject, current: StoredObject, context: UpdateContext): void;
  onDelete(type: ResourceType, last: StoredObject, context: DeleteContext): void;
  /** An object of a silent first LIST (the baseline): not a change, but now the known state (--state records it). */
  onBaseline(type: ResourceType, object: StoredObject): void;
  /** Health of the reflector behind this informer. */
  onState?(informer: Informer, state: ReflectorState): void;
}

/**
 * What the first LIST reports: nothing (a silent baseline), one ADDED per
 * object (--initial), or ADDED marked offline (a resource type that appeared
 * while running: everything in it is new to us).
 */
export type InitialListMode = 'silent' | 'added' | 'added-offline';

/** The stages an informer reports failures at (the Pipeline's names, FAILURE_STAGES). */
type InformerFailureStage = 'normalize' | 'handler';

export interface InformerOptions extends ReflectorOptions {
  /** The namespace its collection is limited to (-n), for messages and metrics. */
  namespace?: string | undefined;
  /**
   * Turns an object into what is stored and compared: ignored paths dropped, Secrets redacted. Given
   * the informer's resource type, which alone decides what is redacted (never the object's own kind).
   */
  normalize: (type: ResourceType, object: KubeObject) => JsonObject;
  initialList: InitialListMode;
  /**
   * The objects recorded by a previous run (--state): the store starts with them and the first LIST is
   * reconciled against them like a relist, reporting what changed while kubediff was not running.
   */
  preload?: StoredObject[] | undefined;
  /**
   * The preloaded objects are only part of what the previous run's first LIST found (it was not wholly
   * recorded): the first LIST reconciles them, and takes a silent baseline of the objects they do not
   * hold rather than report them ADDED (which of them are new, nothing tells).
   */
  preloadPartial?: boolean | undefined;
  /**
   * Where an exception while processing one object (normalizing it, or in a handler) is reported; the
   * watch goes on with the next one. Without it such an exception ends the watch connection.
   */
  failures?: FailureReporter<InformerFailureStage> | undefined;
  /**
   * Read each object's managedFields to tell who changed it (default true): the handlers get the entries
   * with each call and the store keeps a signature of them. Off, the store is as small as it can be.
   */
  fieldManagers?: boolean | undefined;
}

/** An object as it arrives: what is stored, and its managedFields, handed to the handler and then dropped. */
interface Arrival {
  stored: StoredObject;
  managedFields: readonly ManagedFieldsEntry[] | undefined;
}

/** An object a LIST found changed at the same resourceVersion, reported when the LIST completes. */
interface Unwritten extends Arrival {
  previous: StoredObject;
}

export class Informer implements ReflectorSink {
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  private readonly store = new ObjectStore();
  private readonly reflector: Reflector;
  private readonly handler: InformerHandler;
  private readonly failures: FailureReporter<InformerFailureStage> | undefined;
  private readonly normalize: (type: ResourceType, object: KubeObject) => JsonObject;
  private readonly initialList: InitialListMode;
  private readonly fieldManagers: boolean;
  private synced = false;
  /** The first LIST is a relist against a pre-loaded store (catch-up after a restart). */
  private readonly reconcileFirstList: boolean;
  /** See InformerOptions.preloadPartial. */
  private readonly preloadPartial: boolean;
  private seenInList: Set<string> | undefined;
  /** The LIST in progress started over (see listStarted). */
  private restartedList = false;
  private lastFailure: KubeError | undefined;
  private settleWaiters: (() => void)[] = [];
  /**
   * The LIST in progress found these objects changed without a write. They are reported when it
   * completes, at its resourceVersion (the store keeps their previous state until then, so a LIST that
   * starts over finds them again). At most one per object of the type.
   */
  private unwritten: Unwritten[] = [];
  /**
   * During the replay (InformerOptions.replayFrom): the uids the recorded objects and the first LIST
   * hold, whose changes the LIST has told; and the objects it saw created after the replay point (gone
   * by the LIST) and not yet deleted, by uid.
   */
  private replay: { known: Set<string>; created: Map<string, StoredObject> } | undefined;
  /** Why the LIST in progress would find objects changed without a write. */
  private listCause: WithoutWriteCause = 'relist';
  /** Until then (Date.now()), a LIST that starts is one after a schema change (servedSchemaChanged). */
  private schemaChangedUntil = 0;

  constructor(source: ListerWatcher, options: InformerOptions, handler: InformerHandler) {
    this.type = options.type;
    this.namespace = options.namespace;
    this.failures = options.failures;
    this.handler = options.failures ? containedHandler(handler, options.type, options.failures) : handler;
    this.normalize = options.normalize;
    this.initialList = options.initialList;
    this.fieldManagers = options.fieldManagers ?? true;
    this.reconcileFirstList = options.preload !== undefined;
    this.preloadPartial = options.preloadPartial === true;
    for (const entry of options.preload ?? []) this.store.set(entry);
    if (options.replayFrom !== undefined)
      this.replay = { known: new Set(options.preload?.map((entry) => entry.uid)), created: new Map() };
    this.reflector = new Reflector(source, options, this);
  }

  start(): void {
    this.reflector.start();
  }

  /** Stops the reflector; after it resolves no handler is called any more. */
  async stop(): Promise<void> {
    await this.reflector.stop();
    this.releaseSettleWaiters();
  }

  /**
   * The type's CRD changed how the API server serves its objects (ServedSchemas): re-read it now, and
   * report each object it now serves differently as an update without a write, cause `schema`.
   */
  servedSchemaChanged(): void {
    this.schemaChangedUntil = Date.now() + SCHEMA_SETTLE_MS;
    // A LIST in progress may already read from the new storage.
    if (this.seenInList) this.listCause = 'schema';
    this.reflector.relist(SCHEMA_SETTLE_MS);
  }

  /** Reports every object still known as deleted: used when the resource type itself is gone. */
  flushAsDeleted(): void {
    for (const entry of this.store.values()) {
      this.handler.onDelete(this.type, entry, {
        offline: true,
        finalStateUnknown: true,
        resourceVersion: this.reflector.resourceVersion || entry.resourceVersion,
      });
    }
    for (const key of [...this.store.keys()]) this.store.delete(key);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** How far this informer has followed its collection (last event or bookmark); '' before the first LIST. */
  get resourceVersion(): string {
    return this.reflector.resourceVersion;
  }

  /** The last known state of the object at `key` (namespace/name), if this informer holds it. */
  get(key: string): StoredObject | undefined {
    return this.store.get(key);
  }

  /** Every object this informer holds (a new leader's snapshot of them, with --state). */
  objects(): IterableIterator<StoredObject> {
    return this.store.values();
  }

  get objectCount(): number {
    return this.store.size;
  }

  get failure(): KubeError | undefined {
    return this.lastFailure;
  }

  /** Resolves once the first LIST is complete, the first attempt failed, or the informer stopped. */
  waitUntilSettled(): Promise<void> {
    if (this.synced || this.lastFailure) return Promise.resolve();
    return new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  // ReflectorSink

  listStarted(): void {
    // A LIST that starts over before it completed (its continue token expired and it is read whole, a
    // streaming list broke): what the earlier attempt stored is compared, not reported a second time,
    // and what this one does not find again is gone, as in a relist.
    if (this.seenInList) this.restartedList = true;
    this.seenInList = new Set();
    this.unwritten = [];
    this.listCause = Date.now() < this.schemaChangedUntil ? 'schema' : 'relist';
  }

  listPage(items: KubeObject[]): void {
    const seen = this.seenInList ?? new Set<string>();
    for (const item of items) {
      // Seen even if it cannot be processed: it exists, and must not be reported deleted.
      const key = objectKey(item.metadata);
      seen.add(key);
      if (!this.synced) this.replay?.known.add(item.metadata.uid);
      const arrival = this.toStored(item);
      if (!arrival) continue;
      if (this.inBaseline(key)) this.applyInitial(arrival);
      else this.apply(arrival, true);
    }
  }

  /** Whether a LIST's object at `key` is part of a first baseline rather than compared with the store. */
  private inBaseline(key: string): boolean {
    if (this.synced) return false;
    const stored = this.store.get(key) !== undefined;
    // Preloaded: the recorded objects are compared; the others too, unless the recording was partial.
    if (this.reconcileFirstList) return this.preloadPartial && !stored;
    // A LIST that started over compares what its earlier attempt stored.
    return !(this.restartedList && stored);
  }

  listCompleted(resourceVersion: string): void {
    const seen = this.seenInList;
    this.seenInList = undefined;
    const restarted = this.restartedList;
    this.restartedList = false;
    const unwritten = this.unwritten;
    this.unwritten = [];
    const withoutWrite = { cause: this.listCause, resourceVersion };
    for (const { previous, stored, managedFields } of unwritten) {
      this.store.set(stored);
      this.handler.onUpdate(this.type, previous, stored, { offline: true, managedFields, withoutWrite });
    }
    if ((this.synced || this.reconcileFirstList || restarted) && seen) {
      for (const entry of [...this.store.values()]) {
        if (seen.has(entry.key)) continue;
        this.store.delete(entry.key);
        this.handler.onDelete(this.type, entry, { offline: true, finalStateUnknown: true, resourceVersion });
      }
    }
    if (!this.synced) {
      this.synced = true;
      this.releaseSettleWaiters();
    }
  }

  watchEvent(type: WatchEventType, object: KubeObject): void {
    const arrival = this.toStored(object);
    if (!arrival) return;
    if (type === 'DELETED') {
      const current = arrival.stored;
      const previous = this.store.get(current.key);
      // The server sends the object's final state with the deletion's resourceVersion.
      this.store.delete(current.key);
      this.handler.onDelete(this.type, current, {
        offline: false,
        finalStateUnknown: false,
        resourceVersion: current.resourceVersion,
        ...(previous ? { previousResourceVersion: previous.resourceVersion } : {}),
      });
      return;
    }
    this.apply(arrival, false);
  }

  /**
   * A change between the replay point and the first LIST. What the LIST showed of an object is reported
   * already (its offline changes). Of the others, those created after the replay point (their first
   * change here an ADDED) are gone by the LIST: each change is reported as it happened, offline: ADDED,
   * its updates, DELETED. One that existed before (a first change that is not an ADDED) was recorded,
   * and its deletion reported by the run that recorded it gone: nothing of it is reported again.
   */
  replayEvent(type: WatchEventType, object: KubeObject): void {
    const replay = this.replay;
    const uid = object.metadata.uid;
    if (!replay || replay.known.has(uid)) return;
    const previous = replay.created.get(uid);
    if (!previous && type !== 'ADDED') {
      replay.known.add(uid);
      return;
    }
    const arrival = this.toStored(object);
    if (!arrival) return;
    const { stored: current, managedFields } = arrival;
    if (type === 'DELETED') {
      replay.created.delete(current.uid);
      this.handler.onDelete(this.type, current, {
        offline: true,
        replayed: true,
        finalStateUnknown: false,
        resourceVersion: current.resourceVersion,
        ...(previous ? { previousResourceVersion: previous.resourceVersion } : {}),
      });
      return;
    }
    replay.created.set(current.uid, current);
    const context = { offline: true, replayed: true as const, managedFields };
    if (!previous) this.handler.onAdd(this.type, current, { ...context, initial: false });
    else if (previous.resourceVersion !== current.resourceVersion)
      this.handler.onUpdate(this.type, previous, current, context);
  }

  /**
   * The replay is over. Ended before the LIST (410 Gone, a relist): the objects it reported and did not
   * see deleted are gone all the same (the LIST did not hold them), reported so, at the LIST.
   */
  replayEnded(complete: boolean, listedAt: string): void {
    const replay = this.replay;
    this.replay = undefined;
    if (!replay || complete) return;
    for (const last of replay.created.values()) {
      this.handler.onDelete(this.type, last, {
        offline: true,
        replayed: true,
        finalStateUnknown: true,
        resourceVersion: listedAt,
      });
    }
  }

  stateChanged(state: ReflectorState): void {
    if (state.phase === 'failing') {
      this.lastFailure = state.error;
      this.releaseSettleWaiters();
    } else if (state.phase === 'watching') {
      this.lastFailure = undefined;
    }
    this.handler.onState?.(this, state);
  }

  private applyInitial({ stored: current, managedFields }: Arrival): void {
    this.store.set(current);
    if (this.initialList !== 'silent') {
      this.handler.onAdd(this.type, current, {
        offline: this.initialList === 'added-offline',
        initial: true,
        managedFields,
      });
    } else {
      this.handler.onBaseline(this.type, current);
    }
  }

  /** An object as seen now, live (watch) or by a LIST (offline): report how it differs from the store. */
  private apply({ stored: current, managedFields }: Arrival, offline: boolean): void {
    const previous = this.store.get(current.key);
    if (
      offline &&
      previous?.uid === current.uid &&
      previous.resourceVersion === current.resourceVersion &&
      !sameContent(previous.object, current.object)
    ) {
      // Nobody wrote it, yet it is served differently: reported when the LIST completes (listCompleted).
      this.unwritten.push({ previous, stored: current, managedFields });
      return;
    }
    this.store.set(current);
    if (!previous) {
      this.handler.onAdd(this.type, current, { offline, initial: false, managedFields });
    } else if (previous.uid !== current.uid) {
      // Deleted and re-created under the same name while we were not looking.
      this.handler.onDelete(this.type, previous, {
        offline: true,
        finalStateUnknown: true,
        resourceVersion: current.resourceVersion,
      });
      this.handler.onAdd(this.type, current, { offline, initial: false, managedFields });
    } else if (previous.resourceVersion !== current.resourceVersion) {
      this.handler.onUpdate(this.type, previous, current, { offline, managedFields });
    }
  }

  /**
   * The object as stored and compared; undefined (reported) when it cannot be normalized: the store
   * keeps its previous state, so its next change is reported against that.
   */
  private toStored(object: KubeObject): Arrival | undefined {
    const metadata = object.metadata;
    let normalized: JsonObject;
    try {
      normalized = this.normalize(this.type, object);
    } catch (error) {
      if (!this.failures) throw error;
      this.failures.report(
        'normalize',
        'normalizing the object',
        identityOf(qualifiedName(this.type), metadata),
        error,
        'this change is not reported; the next one is reported from the last state that was',
      );
      return undefined;
    }
    const managedFields = this.fieldManagers ? managedFieldsOf(object) : undefined;
    const stored: StoredObject = {
      key: objectKey(metadata),
      namespace: metadata.namespace,
      name: metadata.name,
      uid: metadata.uid,
      resourceVersion: metadata.resourceVersion,
      object: normalized,
      managers: managedFields ? managersSignature(managedFields) : undefined,
    };
    return { stored, managedFields };
  }

  private releaseSettleWaiters(): void {
    const waiters = this.settleWaiters;
    this.settleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * Whether two normalized versions of an object are the same. One too deep to compare (a custom resource
 * nested thousands of levels) counts as changed: the event builder's diff, contained, then decides.
 */
function sameContent(previous: JsonObject, current: JsonObject): boolean {
  try {
    return jsonEqual(previous, current);
  } catch {
    return false;
  }
}

/**
 * The handler, with each call contained: an exception in it (one that its own stages did not contain)
 * is reported with the object's identity, and the informer goes on with the next object instead of the
 * exception ending the watch connection (which would also lose this change: the resume point has moved).
 */
function containedHandler(
  handler: InformerHandler,
  type: ResourceType,
  failures: FailureReporter<InformerFailureStage>,
): InformerHandler {
  const resource = qualifiedName(type);
  const contain = (object: StoredObject, call: () => void): void => {
    try {
      call();
    } catch (error) {
      failures.report(
        'handler',
        'processing the change',
        identityOf(resource, object),
        error,
        'it is not reported',
      );
    }
  };
  return {
    onAdd: (t, object, context) => contain(object, () => handler.onAdd(t, object, context)),
    onUpdate: (t, previous, current, context) =>
      contain(current, () => handler.onUpdate(t, previous, current, context)),
    onDelete: (t, last, context) => contain(last, () => handler.onDelete(t, last, context)),
    onBaseline: (t, object) => contain(object, () => handler.onBaseline(t, object)),
    onState: (informer, state) => {
      try {
        handler.onState?.(informer, state);
      } catch (error) {
        failures.report('handler', 'observing the watch state', { resource }, error, 'ignored');
      }
    },
  };
}
