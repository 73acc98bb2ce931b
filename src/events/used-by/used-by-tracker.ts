// "Used by" in the pipeline (docs/used-by.md): an observer that keeps each cluster's reverse index from
// the objects as the API server serves them (pods, workloads, ServiceAccounts: their status too, which
// the store does not keep; their spec whatever --ignore drops), and a stage, right after the owners, that
// gives every ConfigMap and Secret change its `usedBy` and every rollout its `rollsOut`.
//
// The index follows the informers: an object is indexed when served (listed or watched), forgotten when
// its deletion passes the stage, and a LIST of a type sweeps what it no longer finds (a watcher that
// started again, objects restored from a previous run's state). With --state the index starts from the
// objects the state restores (their spec; their pods taken as started before any change since), so a
// change reported while the workloads are listed again still names its users.
//
// Only what kubediff watches is indexed: without pods, `live` and `pods` are not told; without
// workloads, pods are grouped by the root owner their owner references reach; with neither, ConfigMap
// and Secret events carry no usedBy (said once per cluster).

import type { Informer } from '../../informer/informer.ts';
import type { ReflectorState } from '../../informer/reflector.ts';
import type { StoredObject } from '../../informer/store.ts';
import { type JsonObject, type KubeObject, qualifiedName, type ResourceType } from '../../kube/types.ts';
import { groupedCount } from '../../util/count-text.ts';
import { type FailureReporter, identityOf } from '../../util/event-failures.ts';
import type { Logger } from '../../util/log.ts';
import type { ChangeEvent, RolloutLink, UsedBy } from '../event.ts';
import type { OwnerResolver } from '../owners.ts';
import type { EventStage, Handover, PipelineObserver, StoreChange } from '../pipeline.ts';
import { keysChangedBy, keysOf } from './changed-keys.ts';
import { indexedAsBefore, indexedObjectOf, isIndexedType, isPodType } from './indexed-objects.ts';
import { PendingRollouts } from './rollouts.ts';
import { type IndexedObject, UsageIndex } from './usage-index.ts';
import { readsAtStart, type UseTarget, usedByOf } from './used-by.ts';

/** The default bound of each cluster's index, in objects (docs/used-by.md, "Bounds"). */
export const DEFAULT_MAX_OBJECTS = 100_000;

export interface UsedByOptions {
  /** The most objects each cluster's index holds. */
  maxObjects?: number | undefined;
  /** Where the root owner of an indexed pod or template is found (the events' `owner`). */
  owners: OwnerResolver;
  log: Logger;
  /** Where an exception while indexing or enriching one change is reported; the change goes on. */
  failures?: FailureReporter<'used-by'> | undefined;
}

/** What the metrics read of one cluster's index. */
export interface UsedByClusterStats {
  /** The events' `cluster` ('' when none is named). */
  cluster: string;
  objects: number;
  references: number;
  /** Objects not indexed because the index was full. */
  leftOut: number;
}

/** What the metrics read. */
export interface UsedByStats {
  clusters: UsedByClusterStats[];
  /** Workloads with changes waiting for their rollout, and those forgotten at that bound. */
  pendingRollouts: number;
  rolloutsForgotten: number;
}

interface ClusterUsage {
  index: UsageIndex;
  /** Its informers of indexed types, and the stamp at which a LIST in progress started. */
  informers: Map<Informer, { listingFrom: number | undefined }>;
  /** Resource types whose objects a previous run's state restored. */
  restored: Set<string>;
  /** Said that it indexes nothing. */
  toldBlind: boolean;
  /** Objects left out at the bound. */
  leftOut: number;
}

const ROLLING_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

export class UsedByTracker implements PipelineObserver {
  private readonly options: UsedByOptions;
  private readonly maxObjects: number;
  private readonly clusters = new Map<string | undefined, ClusterUsage>();
  private readonly rollouts: PendingRollouts;
  /** Increases with each LIST that starts; an object seen carries the value of its pass (see sweep). */
  private stamp = 0;
  private toldFull = false;

  constructor(options: UsedByOptions) {
    this.options = options;
    this.maxObjects = Math.max(0, options.maxObjects ?? DEFAULT_MAX_OBJECTS);
    this.rollouts = new PendingRollouts(this.maxObjects);
  }

  stats(): UsedByStats {
    return {
      clusters: [...this.clusters].map(([cluster, usage]) => ({
        cluster: cluster ?? '',
        ...usage.index.stats(),
        leftOut: usage.leftOut,
      })),
      pendingRollouts: this.rollouts.size,
      rolloutsForgotten: this.rollouts.forgotten,
    };
  }

  /** PipelineObserver: an object as served, before it is normalized. */
  objectServed(type: ResourceType, object: KubeObject, cluster: string | undefined): void {
    if (!isIndexedType(type)) return;
    try {
      const usage = this.usage(cluster);
      const uid = object.metadata.uid;
      const json = asJson(object);
      const known = usage.index.get(uid);
      if (known && indexedAsBefore(type, json, known)) usage.index.touch(uid, this.stamp);
      else this.index(usage, indexedObjectOf(type, json, false, known), uid, this.stamp);
    } catch (error) {
      this.failed(type, object.metadata, error);
    }
  }

  /** PipelineObserver: an informer's store starts from the previous run's objects (--state). */
  objectsRestored(type: ResourceType, objects: readonly StoredObject[], cluster: string | undefined): void {
    if (!isIndexedType(type)) return;
    const usage = this.usage(cluster);
    // Known even when empty: the previous run listed that type and found none.
    usage.restored.add(qualifiedName(type));
    for (const stored of objects) {
      try {
        // Stamped before any LIST: the type's first LIST sweeps what it does not find again.
        this.index(usage, indexedObjectOf(type, stored.object, true), stored.uid, -1);
      } catch (error) {
        this.failed(type, stored, error);
      }
    }
  }

  /** PipelineObserver: a LIST of an indexed type begins, or ends (sweep what it did not find). */
  stateChanged(informer: Informer, state: ReflectorState, cluster: string | undefined): void {
    if (!isIndexedType(informer.type)) return;
    const usage = this.usage(cluster);
    if (state.phase === 'stopped') {
      usage.informers.delete(informer);
      return;
    }
    let tracked = usage.informers.get(informer);
    if (!tracked) {
      tracked = { listingFrom: undefined };
      usage.informers.set(informer, tracked);
    }
    if (state.phase === 'listing') {
      tracked.listingFrom = ++this.stamp;
    } else if (state.phase === 'watching' && tracked.listingFrom !== undefined) {
      usage.index.sweep(qualifiedName(informer.type), informer.namespace, tracked.listingFrom);
      tracked.listingFrom = undefined;
    }
  }

  /** The stage: indexes deletions, and enriches ConfigMap and Secret changes and rollouts. */
  stage(): EventStage {
    return {
      name: 'used by',
      connect: (next) => (handover) => next(this.enrich(handover)),
    };
  }

  /** The objects of `cluster`'s index that reference a ConfigMap, Secret or ServiceAccount (for tests and tools). */
  usedBy(
    cluster: string | undefined,
    target: UseTarget,
    changedKeys: readonly string[],
    changedAt: number,
  ): UsedBy | undefined {
    const usage = this.clusters.get(cluster);
    if (!usage || !this.knows(usage)) return undefined;
    return usedByOf(
      {
        index: usage.index,
        rootOf: (object) => this.rootOf(cluster, object),
        podsWatched: this.podsWatched(usage),
        ...this.incompleteness(usage),
      },
      target,
      changedKeys,
      changedAt,
    );
  }

  private enrich(handover: Handover): Handover {
    const { change, event } = handover;
    if (!change) return handover;
    try {
      if (change.kind === 'deleted') this.forget(event, change);
      if (!event || change.initial) return handover;
      const target = targetOf(change);
      const enriched = target ? this.withUsedBy(event, change, target) : this.withRollout(event);
      return enriched === event ? handover : { ...handover, event: enriched };
    } catch (error) {
      this.options.failures?.report(
        'used-by',
        'finding what uses the object',
        identityOf(qualifiedName(change.type), change.object),
        error,
        'the change is reported without usedBy',
      );
      return handover;
    }
  }

  private withUsedBy(event: ChangeEvent, change: StoreChange, target: UseTarget): ChangeEvent {
    const cluster = event.cluster;
    const usage = this.clusters.get(cluster);
    if (!usage || !this.knows(usage)) {
      if (usage) this.tellBlind(usage, cluster);
      else this.tellBlind(this.usage(cluster), cluster);
      return event;
    }
    const changedKeys =
      event.type === 'UPDATED' ? keysChangedBy(event.changes ?? []) : keysOf(change.object.object);
    const usedBy = this.usedBy(cluster, target, changedKeys, changeTime(event));
    // An ADDED carries usedBy only when something already waits for it.
    if (!usedBy || (event.type === 'ADDED' && usedBy.workloads.length === 0)) return event;
    const link: RolloutLink = {
      object: { kind: target.kind, namespace: target.namespace, name: target.name },
      id: event.id,
      time: event.time,
    };
    for (const workload of usedBy.workloads) {
      const waitsForRestart =
        workload.live === false ||
        (workload.live === undefined &&
          workload.pods === undefined &&
          workload.keys.length > 0 &&
          workload.via.some(readsAtStart));
      if (waitsForRestart) this.rollouts.note(cluster, workload.object.uid, link);
    }
    return { ...event, usedBy };
  }

  /** A workload whose pod template changed (or a new ReplicaSet): the changes its new pods bring. */
  private withRollout(event: ChangeEvent): ChangeEvent {
    if (!isRollout(event)) return event;
    const links = this.rollouts.take(event.cluster, event.owner?.uid ?? event.object.uid);
    return links.length > 0 ? { ...event, rollsOut: links } : event;
  }

  private forget(event: ChangeEvent | undefined, change: StoreChange): void {
    if (!isIndexedType(change.type)) return;
    const uid = change.object.uid;
    // Without its event (the event builder failed) the cluster is not named: uids are unique across them.
    const usages = event ? [this.clusters.get(event.cluster)] : [...this.clusters.values()];
    for (const usage of usages) usage?.index.remove(uid);
    this.rollouts.forget(event?.cluster, uid);
  }

  private index(
    usage: ClusterUsage,
    object: IndexedObject | null | undefined,
    uid: string,
    stamp: number,
  ): void {
    if (object === undefined) return;
    if (object === null) {
      usage.index.remove(uid);
      return;
    }
    if (usage.index.upsert(object, stamp)) return;
    usage.leftOut++;
    if (!this.toldFull) {
      this.toldFull = true;
      this.options.log.warn(
        `used by: the index holds its limit of ${groupedCount(this.maxObjects)} objects (usedBy.maxObjects); further pods and workloads are left out, so usedBy may miss users and says incomplete: "limit" (said once; counted in kubediff_used_by_left_out_total).`,
      );
    }
  }

  private rootOf(cluster: string | undefined, object: IndexedObject) {
    const self = { apiVersion: object.apiVersion, kind: object.kind, name: object.name, uid: object.uid };
    return this.options.owners.rootAbove(cluster, self, object.controller, object.namespace);
  }

  /** Whether the index can say anything: an indexed type is watched, or was restored. */
  private knows(usage: ClusterUsage): boolean {
    return usage.informers.size > 0 || usage.restored.size > 0;
  }

  private podsWatched(usage: ClusterUsage): boolean {
    if (usage.restored.has('pods')) return true;
    for (const informer of usage.informers.keys()) if (isPodType(informer.type)) return true;
    return false;
  }

  private incompleteness(usage: ClusterUsage): Pick<UsedBy, 'incomplete'> {
    if (usage.leftOut > 0) return { incomplete: 'limit' };
    for (const informer of usage.informers.keys()) {
      if (!informer.hasSynced && !usage.restored.has(qualifiedName(informer.type)))
        return { incomplete: 'syncing' };
    }
    return {};
  }

  private tellBlind(usage: ClusterUsage, cluster: string | undefined): void {
    if (usage.toldBlind) return;
    usage.toldBlind = true;
    this.options.log.info(
      `used by: ${cluster === undefined ? 'this cluster' : `cluster "${cluster}"`} has no pods, workloads or ServiceAccounts watched, so its ConfigMap and Secret events carry no usedBy (docs/used-by.md).`,
    );
  }

  private usage(cluster: string | undefined): ClusterUsage {
    let usage = this.clusters.get(cluster);
    if (!usage) {
      usage = {
        index: new UsageIndex(this.maxObjects),
        informers: new Map(),
        restored: new Set(),
        toldBlind: false,
        leftOut: 0,
      };
      this.clusters.set(cluster, usage);
    }
    return usage;
  }

  private failed(
    type: ResourceType,
    object: { name: string; namespace?: string | undefined; uid?: string },
    error: unknown,
  ): void {
    this.options.failures?.report(
      'used-by',
      'indexing what the object uses',
      identityOf(qualifiedName(type), object),
      error,
      'its uses may be missing from usedBy',
    );
  }
}

/** An object as served is JSON (its optional fields are never undefined once parsed). */
function asJson(object: KubeObject): JsonObject {
  return object as JsonObject;
}

/** The ConfigMap or Secret a change is about (core group only); undefined for anything else. */
function targetOf(change: StoreChange): UseTarget | undefined {
  const { type, object } = change;
  if (type.group !== '' || object.namespace === undefined) return undefined;
  if (type.resource === 'configmaps')
    return { kind: 'ConfigMap', namespace: object.namespace, name: object.name };
  if (type.resource === 'secrets') return { kind: 'Secret', namespace: object.namespace, name: object.name };
  return undefined;
}

/**
 * When the change was made: when kubediff saw it, for a live one; for one found by a relist, the time
 * its field managers recorded (one-second resolution), the closest there is.
 */
function changeTime(event: ChangeEvent): number {
  const seen = Date.parse(event.time);
  if (!event.offline) return seen;
  let latest = Number.NEGATIVE_INFINITY;
  for (const manager of event.by?.managers ?? []) {
    const at = manager.time ? Date.parse(manager.time) : Number.NaN;
    if (!Number.isNaN(at)) latest = Math.max(latest, at);
  }
  return Number.isFinite(latest) ? latest : seen;
}

/** A Deployment, StatefulSet or DaemonSet whose pod template changed, or a new ReplicaSet. */
function isRollout(event: ChangeEvent): boolean {
  const { apiVersion, kind } = event.object;
  if (!apiVersion.startsWith('apps/')) return false;
  if (event.type === 'ADDED') return kind === 'ReplicaSet';
  if (event.type !== 'UPDATED' || !ROLLING_KINDS.has(kind)) return false;
  return (event.changes ?? []).some(
    (change) => change.path === '/spec/template' || change.path.startsWith('/spec/template/'),
  );
}
