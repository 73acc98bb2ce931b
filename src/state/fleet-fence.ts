// The fleet's fence at delivery (docs/fleets.md, "Never two owners downstream"): a handover stage of the
// pipeline, after the rules, before the sinks. A replica delivers a cluster's changes only while it owns
// the cluster AND its heartbeat lease is valid: the lease runs out before anyone else may take the
// cluster (fleet-member.ts), so a replica paused or cut off stops delivering before another starts.
//
// - Owned, lease valid: handovers go on, in order.
// - Owned, lease run out (the database did not answer, the process was paused): the cluster's
//   handovers are held, in order, whole (their changes reach the state recorder only when they go on),
//   and its informers pause (flowControl) so that little is held. A renewed lease lets them go on; a
//   lost cluster drops them (its new owner reports those changes from the shared state).
// - Not owned (never, or no longer): dropped, neither delivered nor recorded.
// At most `maxHeld` handovers are held per cluster; past that the cluster is given up (onOverflow: the
// member stops it and claims it afresh once the database answers), which loses nothing: what was held
// was neither delivered nor recorded, and the next owner reports it. Each give-up is counted
// (`overflows`, kubediff_fleet_held_overflows_total); the log says so once per outage (until the lease
// is renewed), naming the first cluster given up and how to see the others.
import type { KubediffEvent } from '../events/event.ts';
import type { EventStage, Handover } from '../events/pipeline.ts';
import { groupedCount } from '../util/count-text.ts';
import type { Logger } from '../util/log.ts';

/** Handovers held per cluster at most (informers pause meanwhile: a few per resource type is usual). */
export const DEFAULT_MAX_HELD = 10_000;

interface Waiter {
  promise: Promise<void>;
  resolve: () => void;
}

export class FleetFence implements EventStage<KubediffEvent> {
  readonly name = 'fleet fence';
  private next: (handover: Handover<KubediffEvent>) => void = () => {};
  private readonly owned = new Set<string>();
  private readonly held = new Map<string, Handover<KubediffEvent>[]>();
  private readonly waiters = new Map<string, Waiter>();
  private readonly leaseValid: () => boolean;
  private readonly maxHeld: number;
  private readonly onOverflow: (cluster: string) => void;
  private readonly log: Logger;
  private droppedCount = 0;
  private overflowCount = 0;
  /** An overflow was said since the lease was last renewed: the next ones of this outage are counted only. */
  private overflowSaid = false;

  constructor(options: {
    leaseValid: () => boolean;
    log: Logger;
    onOverflow: (cluster: string) => void;
    maxHeld?: number;
  }) {
    this.leaseValid = options.leaseValid;
    this.log = options.log;
    this.onOverflow = options.onOverflow;
    this.maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD;
  }

  /** Handovers of clusters this replica did not own (or no longer) when they came: not delivered (a metric). */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Clusters given up because more than `maxHeld` of their handovers were held (a metric). */
  get overflows(): number {
    return this.overflowCount;
  }

  /** Handovers held now, every cluster's (a metric). */
  get holding(): number {
    let count = 0;
    for (const queue of this.held.values()) count += queue.length;
    return count;
  }

  connect(next: (handover: Handover<KubediffEvent>) => void): (handover: Handover<KubediffEvent>) => void {
    this.next = next;
    return (handover) => this.admit(handover);
  }

  private admit(handover: Handover<KubediffEvent>): void {
    const { cluster } = handover;
    // Not a fleet cluster's (there is none beside them in a fleet): as without the fence.
    if (cluster === undefined) {
      this.next(handover);
      return;
    }
    if (!this.owned.has(cluster)) {
      this.droppedCount++;
      return;
    }
    const queue = this.held.get(cluster);
    if (!queue && this.leaseValid()) {
      this.next(handover);
      return;
    }
    if (!queue) this.held.set(cluster, [handover]);
    else queue.push(handover);
    if ((queue?.length ?? 1) > this.maxHeld) {
      this.overflowCount++;
      if (!this.overflowSaid) {
        this.overflowSaid = true;
        this.log.warn(
          `fleet: more than ${groupedCount(this.maxHeld)} changes of cluster "${cluster}" held while this replica's heartbeat is not renewed; ` +
            'giving the cluster up (it is claimed afresh, and caught up, once the database answers; nothing is lost). ' +
            'Other clusters given up in this outage are counted in kubediff_fleet_held_overflows_total, not logged.',
        );
      }
      this.disown(cluster);
      this.onOverflow(cluster);
    }
  }

  /** This replica owns `cluster` now: its handovers go on while the lease is valid. */
  own(cluster: string): void {
    this.owned.add(cluster);
  }

  /** `cluster` is no longer this replica's: what is held of it is dropped, and anything later too. */
  disown(cluster: string): void {
    this.owned.delete(cluster);
    this.droppedCount += this.held.get(cluster)?.length ?? 0;
    this.held.delete(cluster);
    this.wake(cluster);
  }

  /** The lease was renewed: what was held goes on, in order, and the informers read on. */
  resume(): void {
    if (this.leaseValid()) this.overflowSaid = false;
    for (const [cluster, queue] of [...this.held]) {
      if (!this.leaseValid()) return;
      this.held.delete(cluster);
      for (const handover of queue) this.next(handover);
      this.wake(cluster);
    }
    for (const cluster of [...this.waiters.keys()]) if (!this.held.has(cluster)) this.wake(cluster);
  }

  /**
   * The informers' flow control for `cluster` (ReflectorOptions.flowControl): while its handovers are
   * held, a promise that resolves when they go on or the cluster is given up.
   */
  flowControl(cluster: string): Promise<void> | undefined {
    if (!this.owned.has(cluster) || (this.leaseValid() && !this.held.has(cluster))) return undefined;
    let waiter = this.waiters.get(cluster);
    if (!waiter) {
      let resolve: () => void = () => {};
      const promise = new Promise<void>((done) => {
        resolve = done;
      });
      waiter = { promise, resolve };
      this.waiters.set(cluster, waiter);
    }
    return waiter.promise;
  }

  private wake(cluster: string): void {
    this.waiters.get(cluster)?.resolve();
    this.waiters.delete(cluster);
  }
}
