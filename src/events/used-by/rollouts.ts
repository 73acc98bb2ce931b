// The link between a ConfigMap or Secret change that pods did not see live and the rollout that brings
// it to them (docs/used-by.md, "Rollouts"): each change whose usedBy names a workload that runs the old
// value until its pods restart is remembered for that workload; the workload's next rollout (its pod
// template changed: a restart annotation, a new image; or a new ReplicaSet, a new pod-template hash)
// carries them as `rollsOut`, and they are forgotten.
//
// Bounded: per workload the latest change of each object, at most PER_WORKLOAD objects; at most
// `maxWorkloads` workloads, the one that waited longest forgotten first (it then rolls out unlinked).

import type { RolloutLink } from '../event.ts';

export const PER_WORKLOAD = 16;

export class PendingRollouts {
  private readonly maxWorkloads: number;
  /** cluster and workload uid → the changes waiting for its rollout; Map order: oldest first. */
  private readonly waiting = new Map<string, RolloutLink[]>();
  private dropped = 0;

  constructor(maxWorkloads: number) {
    this.maxWorkloads = maxWorkloads;
  }

  /** Workloads forgotten at the bound (a metric). */
  get forgotten(): number {
    return this.dropped;
  }

  get size(): number {
    return this.waiting.size;
  }

  /** `link`'s change reaches workload `uid` of `cluster` only at its next rollout. */
  note(cluster: string | undefined, uid: string, link: RolloutLink): void {
    const key = keyOf(cluster, uid);
    const links = (this.waiting.get(key) ?? []).filter(
      (known) => !(known.object.kind === link.object.kind && known.object.name === link.object.name),
    );
    links.push(link);
    if (links.length > PER_WORKLOAD) links.shift();
    this.waiting.delete(key);
    this.waiting.set(key, links);
    while (this.waiting.size > this.maxWorkloads) {
      const oldest = this.waiting.keys().next().value;
      if (oldest === undefined) break;
      this.waiting.delete(oldest);
      this.dropped++;
    }
  }

  /** Workload `uid` rolls out: the changes it brings, oldest first (and forgotten). */
  take(cluster: string | undefined, uid: string): RolloutLink[] {
    const key = keyOf(cluster, uid);
    const links = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    return links;
  }

  /** The workload was deleted: nothing of it rolls out any more. */
  forget(cluster: string | undefined, uid: string): void {
    this.waiting.delete(keyOf(cluster, uid));
  }
}

function keyOf(cluster: string | undefined, uid: string): string {
  return `${cluster ?? ''}\u0000${uid}`;
}
