// Who controls an object: every event's `owner` (docs/stories.md), following `controller: true`
// ownerReferences up to the root through the informers' stores. Where the chain leaves what is known (a
// type not watched, outside -n, not arrived yet) the owner is the last reference followed, never a guess.
// The controllers of recently deleted objects are remembered (their dependents are deleted after them):
// at most RECENTLY_DELETED_LIMIT, oldest forgotten first.

import type { StoredObject } from '../informer/store.ts';
import { apiVersionOf, groupOf, isJsonObject, type JsonObject, type ResourceType } from '../kube/types.ts';
import { groupedCount } from '../util/count-text.ts';
import type { Logger } from '../util/log.ts';
import { type OwnerRef, withOwner } from './event.ts';
import type { EventStage } from './pipeline.ts';

/** Finds the last known state of an object in one cluster's informers' stores. */
export type ObjectLookup = (
  group: string,
  kind: string,
  namespace: string | undefined,
  name: string,
) => StoredObject | undefined;

/** Deleted objects whose controller is remembered for their dependents' deletions. */
export const RECENTLY_DELETED_LIMIT = 10_000;

/** Longest chain followed; deeper (or a cycle) stops at the last object reached. */
const MAX_DEPTH = 16;

export class OwnerResolver {
  private readonly lookups = new Map<string | undefined, ObjectLookup>();
  /** uid → its controller (undefined: none), of recently deleted objects, oldest first. */
  private readonly deleted = new Map<string, OwnerRef | undefined>();
  private readonly deletedLimit: number;
  private readonly log: Logger | undefined;
  private forgotten = 0;

  constructor(options: { recentlyDeletedLimit?: number; log?: Logger } = {}) {
    this.deletedLimit = Math.max(0, options.recentlyDeletedLimit ?? RECENTLY_DELETED_LIMIT);
    this.log = options.log;
  }

  /** Deleted objects forgotten at the bound (a metric). */
  get forgottenDeleted(): number {
    return this.forgotten;
  }

  /** Where the owners of `cluster`'s objects are looked up (its ClusterWatcher). */
  attach(cluster: string | undefined, lookup: ObjectLookup): void {
    this.lookups.set(cluster, lookup);
  }

  /** The root controller of `object` (of `type`), or the object itself when nothing controls it. */
  rootOf(cluster: string | undefined, type: ResourceType, object: StoredObject): OwnerRef {
    const self = { apiVersion: apiVersionOf(type), kind: type.kind, name: object.name, uid: object.uid };
    return this.rootAbove(cluster, self, controllerOf(object.object), object.namespace);
  }

  /**
   * The root controller of the object `self` (in `namespace`) whose controller is `controller`: for
   * what keeps only an object's controller reference (the "used by" index), not the object.
   */
  rootAbove(
    cluster: string | undefined,
    self: OwnerRef,
    controller: OwnerRef | undefined,
    namespace: string | undefined,
  ): OwnerRef {
    let current = self;
    const seen = new Set([self.uid]);
    const lookup = this.lookups.get(cluster);
    while (controller && !seen.has(controller.uid) && seen.size < MAX_DEPTH) {
      seen.add(controller.uid);
      current = controller;
      const next = this.find(lookup, controller, namespace);
      if (!next) break;
      controller = next.controller;
    }
    return current;
  }

  /** `object` was deleted: its dependents, deleted next, still find their way up through it. */
  forget(object: StoredObject): void {
    if (this.deletedLimit === 0) return;
    this.deleted.delete(object.uid);
    this.deleted.set(object.uid, controllerOf(object.object));
    // Map iteration is insertion order: the first key is the oldest.
    while (this.deleted.size > this.deletedLimit) {
      const oldest = this.deleted.keys().next().value;
      if (oldest === undefined) break;
      this.deleted.delete(oldest);
      if (this.forgotten++ === 0) {
        this.log?.info(
          `owners: more than ${groupedCount(this.deletedLimit)} objects deleted recently; the oldest are forgotten, so a dependent deleted long after its owner names the nearest owner still known (said once; counted in kubediff_owners_forgotten_deleted_total).`,
        );
      }
    }
  }

  /** The referenced object, if known (watched and present, or recently deleted) and really that one (uid). */
  private find(
    lookup: ObjectLookup | undefined,
    reference: OwnerRef,
    dependentNamespace: string | undefined,
  ): { controller: OwnerRef | undefined } | undefined {
    const group = groupOf(reference.apiVersion);
    // An owner is in its dependent's namespace, or cluster-scoped (Kubernetes allows nothing else).
    const stored =
      lookup?.(group, reference.kind, dependentNamespace, reference.name) ??
      (dependentNamespace !== undefined
        ? lookup?.(group, reference.kind, undefined, reference.name)
        : undefined);
    if (stored && stored.uid === reference.uid) return { controller: controllerOf(stored.object) };
    return this.deleted.has(reference.uid) ? { controller: this.deleted.get(reference.uid) } : undefined;
  }
}

/** The ownerReference with `controller: true`, if the object has one. */
export function controllerOf(object: JsonObject): OwnerRef | undefined {
  const metadata = object.metadata;
  if (!isJsonObject(metadata)) return undefined;
  const references = metadata.ownerReferences;
  if (!Array.isArray(references)) return undefined;
  for (const reference of references) {
    if (!isJsonObject(reference) || reference.controller !== true) continue;
    const { apiVersion, kind, name, uid } = reference;
    if (
      typeof apiVersion === 'string' &&
      typeof kind === 'string' &&
      typeof name === 'string' &&
      typeof uid === 'string'
    )
      return { apiVersion, kind, name, uid };
  }
  return undefined;
}

/**
 * The stage that gives every event its `owner`. It comes first, so that what follows (the rules, the
 * stories of each sink) sees it; every deletion passes through it, reported or not.
 */
export function ownerStage(resolver: OwnerResolver): EventStage {
  return {
    name: 'owners',
    connect: (next) => (handover) => {
      const change = handover.change;
      if (!change) {
        next(handover);
        return;
      }
      const event = handover.event
        ? withOwner(handover.event, resolver.rootOf(handover.event.cluster, change.type, change.object))
        : undefined;
      if (change.kind === 'deleted') resolver.forget(change.object);
      next(event ? { ...handover, event } : handover);
    },
  };
}
