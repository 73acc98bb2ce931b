// The `usedBy` of one ConfigMap or Secret change (docs/used-by.md), from one cluster's index: the
// workloads whose pod templates or pods reference it (grouped by root owner), how, which of the changed
// keys each reads, and whether its running pods see the change.
//
// - A workload is its root owner (as an event's `owner`). Its own template, when indexed, says what its
//   next pods use; templates below it (a Deployment's ReplicaSets, a CronJob's Jobs) count only when the
//   root's is not indexed. Its pods always count: they run.
// - A Secret is also used by the pods (and templates) whose ServiceAccount names it as an image pull
//   secret (`via: serviceAccount`).
// - Live: a value read at a container's start (env, envFrom, a subPath mount, or anything an init
//   container reads) reaches a pod only when that container starts again; a mounted volume follows
//   within the kubelet's sync period; an image pull secret is read at the next pull (nothing running holds
//   it). Container start times have a one-second resolution: one that started in the second of the
//   change counts as started before it.

import type { OwnerRef, UsedBy, UseVia, UsingWorkload } from '../event.ts';
import { containerSlot } from './indexed-objects.ts';
import { type IndexedObject, startOf, type UsageIndex } from './usage-index.ts';

/** The ConfigMap or Secret changed. */
export interface UseTarget {
  kind: 'ConfigMap' | 'Secret';
  namespace: string;
  name: string;
}

export interface UsedByQuery {
  index: UsageIndex;
  /** The root owner of an indexed object that has a controller. */
  rootOf(object: IndexedObject): OwnerRef;
  /** Pods are indexed in this cluster: `live` and `pods` can be told. */
  podsWatched: boolean;
  incomplete?: UsedBy['incomplete'];
}

/** What one indexed object uses of the target: the ways, without kind and name. */
interface Use {
  object: IndexedObject;
  via: UseVia[];
}

interface Group {
  root: OwnerRef;
  templates: Use[];
  pods: Use[];
}

/**
 * The usedBy of a change of `target` to `changedKeys` (every key, for an ADDED or a DELETED) at
 * `changedAt` (ms since the epoch).
 */
export function usedByOf(
  query: UsedByQuery,
  target: UseTarget,
  changedKeys: readonly string[],
  changedAt: number,
): UsedBy {
  const groups = new Map<string, Group>();
  // The pods of one ReplicaSet share their controller, and so their root: found once.
  const roots = new Map<string, OwnerRef>();
  for (const use of usesOf(query.index, target)) {
    const { object } = use;
    const controller = object.controller;
    let root: OwnerRef;
    if (!controller) {
      root = { apiVersion: object.apiVersion, kind: object.kind, name: object.name, uid: object.uid };
    } else {
      root = roots.get(controller.uid) ?? query.rootOf(object);
      roots.set(controller.uid, root);
    }
    let group = groups.get(root.uid);
    if (!group) {
      group = { root, templates: [], pods: [] };
      groups.set(root.uid, group);
    }
    (object.started !== undefined ? group.pods : group.templates).push(use);
  }
  const workloads: UsingWorkload[] = [];
  const read = new Set<string>();
  for (const group of groups.values()) {
    const workload = workloadOf(group, target.namespace, changedKeys, changedAt, query.podsWatched);
    if (!workload) continue;
    for (const key of workload.keys) read.add(key);
    workloads.push(workload);
  }
  workloads.sort((a, b) => order(a.object.kind, b.object.kind) || order(a.object.name, b.object.name));
  const unread = changedKeys.filter((key) => !read.has(key));
  return {
    workloads,
    ...(unread.length > 0 ? { unreadKeys: unread } : {}),
    ...(query.incomplete ? { incomplete: query.incomplete } : {}),
  };
}

/** By code unit, as the API server sorts names (not by locale: cheaper, and the same everywhere). */
function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Every indexed object that uses the target, directly or (a Secret) through its ServiceAccount. */
function usesOf(index: UsageIndex, target: UseTarget): Use[] {
  const uses: Use[] = [];
  for (const object of index.users(target.kind, target.namespace, target.name)) {
    const own = object.references.filter(
      (reference) => reference.kind === target.kind && reference.name === target.name,
    );
    if (object.kind === 'ServiceAccount') {
      // The pods (and templates) that run as this ServiceAccount pull their images with the Secret.
      for (const user of index.users('ServiceAccount', object.namespace, object.name)) {
        if (user.kind !== 'ServiceAccount')
          uses.push({ object: user, via: [{ type: 'serviceAccount', serviceAccount: object.name }] });
      }
      continue;
    }
    uses.push({ object, via: own.map(({ kind: _kind, name: _name, ...via }) => via as UseVia) });
  }
  return uses;
}

function workloadOf(
  group: Group,
  namespace: string,
  changedKeys: readonly string[],
  changedAt: number,
  podsWatched: boolean,
): UsingWorkload | undefined {
  // The root's own template says what its next pods use; below it, templates count only without it.
  const rootTemplate = group.templates.filter((use) => use.object.uid === group.root.uid);
  const templates = rootTemplate.length > 0 ? rootTemplate : group.templates;
  const via = distinct([...templates, ...group.pods].flatMap((use) => use.via));
  if (via.length === 0) return undefined;
  const reads = keysRead(via);
  const keys = reads === 'all' ? [...changedKeys] : changedKeys.filter((key) => reads.has(key));
  const workload: UsingWorkload = {
    object: { ...group.root, namespace },
    via,
    keys,
  };
  if (!podsWatched) return workload;
  const second = changedAt - (((changedAt % 1000) + 1000) % 1000);
  let old = 0;
  let fixed = false;
  for (const pod of group.pods) {
    const seen = staleness(pod, second);
    if (seen === 'current') continue;
    old++;
    if (seen === 'at-restart') fixed = true;
  }
  if (keys.length === 0) return { ...workload, pods: { total: group.pods.length } };
  return {
    ...workload,
    live: fixed ? false : old > 0 ? 'eventually' : true,
    pods: { total: group.pods.length, old },
  };
}

/**
 * How one pod sees a change made in the second `second`: `current` (every container that reads it
 * started after), `at-restart` (one that reads it at its start started before: it runs the old
 * value), `eventually` (only volume mounts started before: the kubelet updates them).
 */
function staleness(pod: Use, second: number): 'current' | 'at-restart' | 'eventually' {
  let result: 'current' | 'eventually' = 'current';
  for (const via of pod.via) {
    const slot = containerSlot(via);
    if (slot === undefined) continue;
    const at = startOf(pod.object, slot);
    if (at === undefined || at > second) continue;
    if (readsAtStart(via)) return 'at-restart';
    result = 'eventually';
  }
  return result;
}

/** Whether a way of reading takes the value at the container's start (and keeps it until it starts again). */
export function readsAtStart(via: UseVia): boolean {
  return (
    via.type === 'env' || via.type === 'envFrom' || via.subPath === true || via.initContainer !== undefined
  );
}

/** The keys the ways read: `all` when any reads every key (envFrom, a volume without items, pull secrets). */
function keysRead(via: readonly UseVia[]): Set<string> | 'all' {
  const keys = new Set<string>();
  for (const use of via) {
    if (use.type === 'env' && use.key !== undefined) keys.add(use.key);
    else if ((use.type === 'volume' || use.type === 'projected') && use.items) {
      for (const key of use.items) keys.add(key);
    } else return 'all';
  }
  return keys;
}

/** Each way once (the template's and every pod's are mostly the same), in the order first met. */
function distinct(via: readonly UseVia[]): UseVia[] {
  const seen = new Map<string, UseVia>();
  for (const use of via) {
    const key = viaKey(use);
    if (!seen.has(key)) seen.set(key, use);
  }
  return [...seen.values()];
}

/** Every field of a way, in one string (cheaper than its JSON). */
function viaKey(via: UseVia): string {
  return [
    via.type,
    via.key,
    via.env,
    via.prefix,
    via.volume,
    via.items?.join('\u0001'),
    via.container,
    via.initContainer,
    via.ephemeralContainer,
    via.subPath,
    via.optional,
    via.serviceAccount,
  ].join('\u0000');
}
