// The health of one cluster's workloads, their ReplicaSets and their pods, as compact records taken from
// the objects as they pass through the pipeline (before they are normalized: the informer's store keeps
// them without status, so health cannot be read back from it). Only pods that a controller owns are
// kept, and of each only what the verdicts need (pod-health.ts).
//
// Bounded: every cluster's view draws on one budget of records (DEFAULT_MAX_RECORDS). At the bound, an
// object not yet known is not taken (one already known is kept up to date); the owner of a pod left out
// is remembered (as many owners as the bound), so that the verdict of its rollout says its pods were not
// all seen. The budget counts what is left out (a metric) and says so once (onFull).
import type { KubeObject } from '../../kube/types.ts';
import { type PodHealth, podHealthOf } from './pod-health.ts';
import {
  type ReplicaSetHealth,
  replicaSetHealthOf,
  type WorkloadHealth,
  type WorkloadKind,
  workloadHealthOf,
} from './workload-health.ts';

/** Records (pods, ReplicaSets, workloads) all clusters' views hold together at most. */
export const DEFAULT_MAX_RECORDS = 200_000;

/** The records all views hold, against one bound. */
export class RecordBudget {
  readonly max: number;
  used = 0;
  /** Objects left out at the bound. */
  leftOut = 0;
  private readonly onFull: (() => void) | undefined;

  constructor(max: number, onFull?: () => void) {
    this.max = Math.max(0, max);
    this.onFull = onFull;
  }

  /** Takes one record; false at the bound (counted; said once). */
  take(): boolean {
    if (this.used < this.max) {
      this.used++;
      return true;
    }
    if (this.leftOut++ === 0) this.onFull?.();
    return false;
  }

  release(count = 1): void {
    this.used = Math.max(0, this.used - count);
  }
}

/** What kind of object the view keeps of a type. */
export type ViewedKind = 'Pod' | 'ReplicaSet' | WorkloadKind;

export class HealthView {
  private readonly budget: RecordBudget;
  private readonly pods = new Map<string, PodHealth>();
  private readonly podsByOwner = new Map<string, Set<string>>();
  private readonly replicaSets = new Map<string, ReplicaSetHealth>();
  private readonly replicaSetsByOwner = new Map<string, Set<string>>();
  private readonly workloads = new Map<string, WorkloadHealth>();
  /** Owners (ReplicaSets, workloads) of pods left out at the bound. */
  private readonly partialOwners = new Set<string>();

  constructor(budget: RecordBudget) {
    this.budget = budget;
  }

  /**
   * An object as served (`now`: kubediff's clock); returns the uid of the workload whose rollout it may
   * concern (a pod's Deployment, through its ReplicaSet), if any.
   */
  seen(kind: ViewedKind, object: KubeObject, now: number): string | undefined {
    const uid = object.metadata?.uid;
    if (typeof uid !== 'string') return undefined;
    switch (kind) {
      case 'Pod':
        return this.seenPod(uid, object, now);
      case 'ReplicaSet': {
        const previous = this.replicaSets.get(uid);
        if (!previous && !this.budget.take()) return undefined;
        const health = replicaSetHealthOf(object);
        this.replicaSets.set(uid, health);
        if (previous?.owner !== health.owner) {
          unindex(this.replicaSetsByOwner, previous?.owner, uid);
          index(this.replicaSetsByOwner, health.owner, uid);
        }
        return health.owner;
      }
      default: {
        if (!this.workloads.has(uid) && !this.budget.take()) return undefined;
        this.workloads.set(uid, workloadHealthOf(kind, object));
        return uid;
      }
    }
  }

  private seenPod(uid: string, object: KubeObject, now: number): string | undefined {
    const previous = this.pods.get(uid);
    const health = podHealthOf(object, previous, now);
    // A pod nothing controls has no rollout to follow.
    if (health.owner === undefined) {
      if (previous) this.removed('Pod', uid);
      return undefined;
    }
    if (!previous && !this.budget.take()) {
      if (this.partialOwners.size < this.budget.max) this.partialOwners.add(health.owner);
      return this.workloadOf(health);
    }
    this.pods.set(uid, health);
    if (previous?.owner !== health.owner) {
      unindex(this.podsByOwner, previous?.owner, uid);
      index(this.podsByOwner, health.owner, uid);
    }
    return this.workloadOf(health);
  }

  /** The object is gone; returns the workload it may concern, as seen(). */
  removed(kind: ViewedKind, uid: string): string | undefined {
    switch (kind) {
      case 'Pod': {
        const pod = this.pods.get(uid);
        if (!pod) return undefined;
        this.pods.delete(uid);
        unindex(this.podsByOwner, pod.owner, uid);
        this.budget.release();
        return this.workloadOf(pod);
      }
      case 'ReplicaSet': {
        const replicaSet = this.replicaSets.get(uid);
        if (!replicaSet) return undefined;
        this.replicaSets.delete(uid);
        unindex(this.replicaSetsByOwner, replicaSet.owner, uid);
        this.partialOwners.delete(uid);
        this.budget.release();
        return replicaSet.owner;
      }
      default:
        if (!this.workloads.delete(uid)) return undefined;
        this.partialOwners.delete(uid);
        this.budget.release();
        return uid;
    }
  }

  /** The workload a pod belongs to: its controller, or its ReplicaSet's Deployment. */
  private workloadOf(pod: PodHealth): string | undefined {
    if (pod.ownerKind === 'ReplicaSet') return this.replicaSets.get(pod.owner ?? '')?.owner;
    return pod.owner;
  }

  /** The workload an object (a pod, a ReplicaSet, the workload itself) belongs to, by its uid. */
  workloadOfObject(uid: string): string | undefined {
    if (this.workloads.has(uid)) return uid;
    const pod = this.pods.get(uid);
    if (pod) return this.workloadOf(pod);
    return this.replicaSets.get(uid)?.owner;
  }

  workload(uid: string): WorkloadHealth | undefined {
    return this.workloads.get(uid);
  }

  /** The ReplicaSets a Deployment controls. */
  replicaSetsOf(deployment: string): ReplicaSetHealth[] {
    return [...(this.replicaSetsByOwner.get(deployment) ?? [])].flatMap(
      (uid) => this.replicaSets.get(uid) ?? [],
    );
  }

  /** The pods `owner` (a ReplicaSet, a StatefulSet, a DaemonSet, a Job) controls. */
  podsOf(owner: string): PodHealth[] {
    return [...(this.podsByOwner.get(owner) ?? [])].flatMap((uid) => this.pods.get(uid) ?? []);
  }

  /** Some pods of `owner` were left out at the bound. */
  isPartial(owner: string): boolean {
    return this.partialOwners.has(owner);
  }

  /** Records this view holds (pods, ReplicaSets, workloads). */
  get size(): number {
    return this.pods.size + this.replicaSets.size + this.workloads.size;
  }

  /** Gives every record back to the budget (the cluster's watch ended). */
  clear(): void {
    this.budget.release(this.size);
    this.pods.clear();
    this.podsByOwner.clear();
    this.replicaSets.clear();
    this.replicaSetsByOwner.clear();
    this.workloads.clear();
    this.partialOwners.clear();
  }
}

function index(map: Map<string, Set<string>>, key: string | undefined, uid: string): void {
  if (key === undefined) return;
  const set = map.get(key);
  if (set) set.add(uid);
  else map.set(key, new Set([uid]));
}

function unindex(map: Map<string, Set<string>>, key: string | undefined, uid: string): void {
  if (key === undefined) return;
  const set = map.get(key);
  if (!set) return;
  set.delete(uid);
  if (set.size === 0) map.delete(key);
}
