// The reverse index of one cluster: which indexed objects (pods, workloads' pod templates,
// ServiceAccounts) reference each ConfigMap, Secret and ServiceAccount by name. Kept from the objects
// as they pass through the pipeline (src/events/used-by/used-by-tracker.ts), never asked of the API
// server.
//
// Bounded: at most `maxObjects` objects. At the bound a new object is left out (its uses are missing
// from usedBy, which then says `incomplete: "limit"`); objects already indexed keep being updated, and a
// deleted one makes room. The caller counts and says it.
//
// Memory: an object keeps its identity, its controller reference, its references and (pods) when each
// container started. Identical lists of references (the pods of one ReplicaSet) are one shared list.

import type { PodReference } from '../../kube/pod-references.ts';
import type { OwnerRef } from '../event.ts';

/** What the index knows of one object. Read-only once indexed: an update replaces it. */
export interface IndexedObject {
  uid: string;
  /** Its API group ('' for core), kind and apiVersion: how usedBy names it when it is a root. */
  group: string;
  kind: string;
  apiVersion: string;
  /** Its resource type (`pods`, `deployments.apps`): what a LIST of that type sweeps. */
  resource: string;
  namespace: string;
  name: string;
  /** Its controller (a Pod's ReplicaSet, a Job's CronJob), the first step to its root owner. */
  controller: OwnerRef | undefined;
  /** Its references to ConfigMaps, Secrets and ServiceAccounts. */
  references: readonly PodReference[];
  /**
   * Pods: when each container that runs (or ran, for init containers) started, in ms since the epoch
   * (one-second resolution), by `container:<name>`, `initContainer:<name>`, `ephemeralContainer:<name>`;
   * `null` when not known (a pod restored from --state: taken as started before any change since).
   */
  started?: ReadonlyMap<string, number> | null;
}

/** An indexed object, with the stamp of the pass that last saw it (see sweep()). */
interface Entry {
  object: IndexedObject;
  stamp: number;
  /** The shared list's key in the pool. */
  poolKey: string;
}

/** What the index holds (the metrics). */
export interface UsageIndexStats {
  objects: number;
  /** References held, each shared list counted once. */
  references: number;
}

export function targetKey(kind: string, namespace: string, name: string): string {
  return `${kind}\u0000${namespace}\u0000${name}`;
}

export class UsageIndex {
  private readonly maxObjects: number;
  private readonly entries = new Map<string, Entry>();
  /** ConfigMap, Secret or ServiceAccount (targetKey) → the objects that reference it. */
  private readonly byTarget = new Map<string, Set<IndexedObject>>();
  /** Shared reference lists by their JSON, with how many objects hold each. */
  private readonly pool = new Map<string, { references: readonly PodReference[]; holders: number }>();
  private pooledReferences = 0;

  constructor(maxObjects: number) {
    this.maxObjects = maxObjects;
  }

  stats(): UsageIndexStats {
    return { objects: this.entries.size, references: this.pooledReferences };
  }

  get(uid: string): IndexedObject | undefined {
    return this.entries.get(uid)?.object;
  }

  /**
   * Indexes `object` (replacing what was known of it) as seen by the pass `stamp`; false when it is new
   * and the index is full: it is left out.
   */
  upsert(object: IndexedObject, stamp: number): boolean {
    const known = this.entries.get(object.uid);
    if (!known && this.entries.size >= this.maxObjects) return false;
    const poolKey = JSON.stringify(object.references);
    let shared = this.pool.get(poolKey);
    if (!shared) {
      shared = { references: object.references, holders: 0 };
      this.pool.set(poolKey, shared);
      this.pooledReferences += object.references.length;
    }
    shared.holders++;
    const indexed: IndexedObject = { ...object, references: shared.references };
    if (known) {
      this.unlink(known);
    }
    this.entries.set(object.uid, { object: indexed, stamp, poolKey });
    for (const key of targetsOf(indexed)) {
      let users = this.byTarget.get(key);
      if (!users) {
        users = new Set();
        this.byTarget.set(key, users);
      }
      users.add(indexed);
    }
    return true;
  }

  /** Forgets the object (deleted, or no longer a user: a finished Job, a ReplicaSet scaled to zero). */
  remove(uid: string): boolean {
    const known = this.entries.get(uid);
    if (!known) return false;
    this.unlink(known);
    this.entries.delete(uid);
    return true;
  }

  /** The objects that reference this ConfigMap, Secret or ServiceAccount. */
  users(kind: string, namespace: string, name: string): ReadonlySet<IndexedObject> {
    return this.byTarget.get(targetKey(kind, namespace, name)) ?? EMPTY;
  }

  /**
   * Forgets the objects of `resource` (in `namespace`, when given) that no pass since `stamp` saw: a LIST
   * of that type found them gone (or they come from the state of a previous run and are gone now).
   */
  sweep(resource: string, namespace: string | undefined, stamp: number): number {
    let removed = 0;
    for (const [uid, entry] of this.entries) {
      const { object } = entry;
      if (entry.stamp >= stamp || object.resource !== resource) continue;
      if (namespace !== undefined && object.namespace !== namespace) continue;
      this.unlink(entry);
      this.entries.delete(uid);
      removed++;
    }
    return removed;
  }

  private unlink(entry: Entry): void {
    for (const key of targetsOf(entry.object)) {
      const users = this.byTarget.get(key);
      if (!users) continue;
      users.delete(entry.object);
      if (users.size === 0) this.byTarget.delete(key);
    }
    const shared = this.pool.get(entry.poolKey);
    if (shared && --shared.holders === 0) {
      this.pool.delete(entry.poolKey);
      this.pooledReferences -= shared.references.length;
    }
  }
}

const EMPTY: ReadonlySet<IndexedObject> = new Set();

/** The targets an object references, each once. */
function targetsOf(object: IndexedObject): Set<string> {
  const keys = new Set<string>();
  for (const reference of object.references)
    keys.add(targetKey(reference.kind, object.namespace, reference.name));
  return keys;
}
