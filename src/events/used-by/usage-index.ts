// The reverse index of one cluster: which indexed objects (pods, workloads' pod templates,
// ServiceAccounts) reference each ConfigMap, Secret and ServiceAccount by name. Kept from the objects
// as they pass through the pipeline (src/events/used-by/used-by-tracker.ts), never asked of the API
// server.
//
// Bounded: at most `maxObjects` objects. At the bound a new object is left out (its uses are missing
// from usedBy, which then says `incomplete: "limit"`); objects already indexed keep being updated, and a
// deleted one makes room. The caller counts and says it.
//
// Cost: most updates of an indexed object (a pod's status) leave its references as they were: then only
// the object is replaced, and the reverse map is not touched. Memory: an object keeps its identity, its
// controller reference, its references and (pods) when each container that uses something started;
// identical lists of references (the pods of one ReplicaSet) are one shared list.

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
   * Its metadata.generation, when it has one: the API server raises it with every change of the spec
   * (of a pod's too, since Kubernetes 1.35), so an update of the same generation has the same references.
   */
  generation?: number;
  /**
   * Pods: when each container that uses something runs (or ran, for init containers) since; `null` when
   * not known (a pod restored from --state: taken as started before any change since). Absent for
   * templates and ServiceAccounts.
   */
  started?: readonly StartedAt[] | null;
}

/**
 * A container's slot (`container:<name>`, `initContainer:<name>`, `ephemeralContainer:<name>`) and
 * when it started, as the pod's status says it (RFC 3339, one-second resolution).
 */
export type StartedAt = readonly [slot: string, at: string];

/** When the container in `slot` started (ms since the epoch), from an object's `started`. */
export function startOf(object: IndexedObject, slot: string): number | undefined {
  const started = object.started;
  if (started === null) return Number.NEGATIVE_INFINITY;
  for (const [name, at] of started ?? []) {
    if (name !== slot) continue;
    const ms = Date.parse(at);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/** A list of references several objects hold, with how many. */
interface Shared {
  key: string;
  references: readonly PodReference[];
  holders: number;
}

/** An indexed object, with the stamp of the pass that last saw it (see sweep()). */
interface Entry {
  object: IndexedObject;
  stamp: number;
  shared: Shared;
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
  /** ConfigMap, Secret or ServiceAccount (targetKey) → the uids of the objects that reference it. */
  private readonly byTarget = new Map<string, Set<string>>();
  /** Shared reference lists by their JSON. */
  private readonly pool = new Map<string, Shared>();
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
    if (known && sameReferences(known.shared.references, object.references)) {
      // The usual update (a pod's status): the same references, so the reverse map stays.
      known.object = { ...object, references: known.shared.references };
      known.stamp = stamp;
      return true;
    }
    if (!known && this.entries.size >= this.maxObjects) return false;
    const shared = this.share(object.references);
    if (known) this.unlink(known);
    const indexed: IndexedObject = { ...object, references: shared.references };
    this.entries.set(object.uid, { object: indexed, stamp, shared });
    for (const key of targetsOf(indexed)) {
      let users = this.byTarget.get(key);
      if (!users) {
        users = new Set();
        this.byTarget.set(key, users);
      }
      users.add(indexed.uid);
    }
    return true;
  }

  /** The object was seen again by the pass `stamp`, as it is indexed (see sweep()). */
  touch(uid: string, stamp: number): void {
    const known = this.entries.get(uid);
    if (known) known.stamp = stamp;
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
  users(kind: string, namespace: string, name: string): IndexedObject[] {
    const users: IndexedObject[] = [];
    for (const uid of this.byTarget.get(targetKey(kind, namespace, name)) ?? []) {
      const entry = this.entries.get(uid);
      if (entry) users.push(entry.object);
    }
    return users;
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

  private share(references: readonly PodReference[]): Shared {
    const key = JSON.stringify(references);
    let shared = this.pool.get(key);
    if (!shared) {
      shared = { key, references, holders: 0 };
      this.pool.set(key, shared);
      this.pooledReferences += references.length;
    }
    shared.holders++;
    return shared;
  }

  private unlink(entry: Entry): void {
    for (const key of targetsOf(entry.object)) {
      const users = this.byTarget.get(key);
      if (!users) continue;
      users.delete(entry.object.uid);
      if (users.size === 0) this.byTarget.delete(key);
    }
    const { shared } = entry;
    if (--shared.holders === 0) {
      this.pool.delete(shared.key);
      this.pooledReferences -= shared.references.length;
    }
  }
}

/** The targets an object references, each once. */
function targetsOf(object: IndexedObject): Set<string> {
  const keys = new Set<string>();
  for (const reference of object.references)
    keys.add(targetKey(reference.kind, object.namespace, reference.name));
  return keys;
}

const FIELDS = [
  'kind',
  'name',
  'type',
  'key',
  'env',
  'prefix',
  'volume',
  'container',
  'initContainer',
  'ephemeralContainer',
  'subPath',
  'optional',
] as const;

/** Whether two lists hold the same references in the same order (cheaper than their JSON). */
function sameReferences(a: readonly PodReference[], b: readonly PodReference[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) {
    const x = a[index]!;
    const y = b[index]!;
    for (const field of FIELDS) if (x[field] !== y[field]) return false;
    const xItems = x.items;
    const yItems = y.items;
    if (xItems !== yItems) {
      if (!xItems || !yItems || xItems.length !== yItems.length) return false;
      for (let item = 0; item < xItems.length; item++) if (xItems[item] !== yItems[item]) return false;
    }
  }
  return true;
}
