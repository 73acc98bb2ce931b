// One replica of a fleet (`kubediff watch --fleet`, docs/fleets.md): every beat (a fifth of the replica
// timeout) it renews its heartbeat row and reads the fleet, all in one transaction of the fleet's
// database (fleet-store.ts); computes who should watch what (fleet-assignment.ts); and acts on its own
// part of it only:
//
// - a cluster it watches whose row names someone else now (taken while this replica was paused or cut
//   off) is lost: the fence drops its changes at once, its watch stops, nothing of it is recorded;
// - a cluster it should give to another replica in the fleet is handed off: its watch stops, the sinks
//   finish with what it reported and that is recorded, then it is released;
// - a cluster it should watch that is free (no owner, or an owner gone silent past its timeout) is
//   claimed (a compare-and-set on the epoch), then watched: its new state store is fenced by that epoch
//   and catches up on what changed meanwhile, reported once, offline.
//
// The lease: a beat sent at t (this process's monotonic clock) renews the heartbeat at the database's
// now(), which is later than t; nobody may take this replica's clusters before that plus the timeout.
// So this replica delivers only until t + timeout − one beat (FleetFence holds its changes after that),
// and a replica paused, cut off, or whose database restarted stops delivering before anyone else starts,
// whatever the clocks of the machines say.
import { formatDuration } from '../util/duration.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { monotonicMs } from '../util/timestamp.ts';
import { assignClusters, type Unowned } from './fleet-assignment.ts';
import type { FleetFence } from './fleet-fence.ts';
import type { ClusterRow, FleetView, MoveRow } from './fleet-rows.ts';
import {
  beatIntervalMs,
  FleetDatabaseSilent,
  type FleetIdentity,
  type OwnedProgress,
  type ReplicaProfile,
  ReplicaReplaced,
} from './fleet-store.ts';

/** What the member needs of the fleet's database (FleetStore). */
export interface FleetCoordination {
  readonly identity: FleetIdentity;
  readonly label: string;
  join(profile: ReplicaProfile): Promise<{ joined: true } | { joined: false; heartbeatAgeMs: number }>;
  beat(profile: ReplicaProfile, owned: readonly OwnedProgress[]): Promise<FleetView>;
  claim(cluster: string, seenEpoch: number): Promise<MoveRow | undefined>;
  release(cluster: string, epoch: number, why: 'handoff' | 'stopped'): Promise<boolean>;
  leave(): Promise<void>;
  close(): Promise<void>;
}

/** What the watch does with the clusters this replica owns. */
export interface FleetClusters {
  /** Starts watching `cluster` as its owner at `epoch` (opening, syncing and retrying on its own). */
  start(cluster: string, epoch: number): void;
  /**
   * Stops watching `cluster`: `handoff` once the sinks have finished with what it reported and that is
   * recorded (within the shutdown timeout); `lost` at once, recording nothing more.
   */
  stop(cluster: string, how: 'handoff' | 'lost'): Promise<void>;
  /** For the heartbeat: whether it synced, and how long its oldest unrecorded change has waited. */
  progress(cluster: string): { synced: boolean; lagMs: number | undefined };
  /** Still stopping an earlier watch of `cluster`: it is not claimed again before that is over. */
  busy(cluster: string): boolean;
}

interface Owned {
  epoch: number;
  /** Being handed to another replica: no second handoff, no claim. */
  handingOff: boolean;
}

/** A cluster without an owner as this replica sees it: since when (its clock), why, and whether it said so. */
interface Orphan {
  since: number;
  why: string;
  warned: boolean;
}

export class FleetMember {
  private readonly store: FleetCoordination;
  private readonly profile: ReplicaProfile;
  private readonly timeoutMs: number;
  private readonly beatMs: number;
  private readonly clusters: FleetClusters;
  private readonly fence: FleetFence;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly owned = new Map<string, Owned>();
  private readonly orphans = new Map<string, Orphan>();
  /** The lease: this replica may deliver until then (its monotonic clock), 0 before the first beat. */
  private validUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopping = false;
  private quiet = false;
  private beatFailing = false;
  private holding = false;
  private alive = 0;
  private counts = { takeovers: 0, handoffsIn: 0, handoffsOut: 0, lost: 0 };
  private fatal: (error: Error) => void = () => {};
  /** Rejects when this replica must stop (another process took its name). */
  readonly failed: Promise<never>;

  constructor(options: {
    store: FleetCoordination;
    profile: ReplicaProfile;
    timeoutMs: number;
    clusters: FleetClusters;
    fence: FleetFence;
    log: Logger;
    /** A monotonic clock in ms (tests). */
    now?: () => number;
  }) {
    this.store = options.store;
    this.profile = options.profile;
    this.timeoutMs = options.timeoutMs;
    this.beatMs = beatIntervalMs(options.timeoutMs);
    this.clusters = options.clusters;
    this.fence = options.fence;
    this.log = options.log;
    this.now = options.now ?? monotonicMs;
    this.failed = new Promise<never>((_resolve, reject) => {
      this.fatal = reject;
    });
    this.failed.catch(() => undefined);
  }

  /** Whether this replica may deliver now (FleetFence asks for every handover). */
  leaseValid(): boolean {
    return this.now() < this.validUntil;
  }

  /**
   * Joins the fleet, waiting (a beat at a time) while another live process has this replica's name.
   * False when `stop` came first.
   */
  async join(stop: Promise<unknown>): Promise<boolean> {
    let stopped = false;
    void stop.then(() => {
      stopped = true;
    });
    let said = false;
    let saidSlow = false;
    while (!stopped) {
      let joined: Awaited<ReturnType<FleetCoordination['join']>>;
      try {
        joined = await this.store.join(this.profile);
      } catch (error) {
        // Slower than a beat (a loaded database): tried again; anything else is said by the caller.
        if (!(error instanceof FleetDatabaseSilent)) throw error;
        if (!saidSlow) {
          saidSlow = true;
          this.log.warn(
            `fleet: joining fleet "${this.store.identity.fleet}" in ${this.store.label}: ${errorMessage(error)}; tried again every ${formatDuration(this.beatMs)}.`,
          );
        }
        await Promise.race([new Promise((resolve) => setTimeout(resolve, this.beatMs)), stop]);
        continue;
      }
      if (joined.joined) {
        this.log.info(
          `fleet: joined fleet "${this.store.identity.fleet}" in ${this.store.label} as replica "${this.store.identity.replica}".`,
        );
        return true;
      }
      if (!said) {
        said = true;
        this.log.warn(
          `fleet: another kubediff is replica "${this.store.identity.replica}" of fleet "${this.store.identity.fleet}" (its last heartbeat ${formatDuration(joined.heartbeatAgeMs)} ago); ` +
            `waiting until it stops or goes silent for ${formatDuration(this.timeoutMs)} (a restarted replica waits for its previous process; two replicas must not share a name: --fleet-replica).`,
        );
      }
      await Promise.race([new Promise((resolve) => setTimeout(resolve, this.beatMs)), stop]);
    }
    return false;
  }

  /** Beats from now on, one beat at a time. */
  start(): void {
    const loop = async () => {
      await this.tick();
      if (this.stopping) return;
      this.timer = setTimeout(() => {
        this.ticking = loop();
      }, this.beatMs);
    };
    this.ticking = loop();
  }

  /** A stop was asked for: no more claims or handoffs (the heartbeat goes on until leave()). */
  quiesce(): void {
    this.quiet = true;
  }

  /**
   * Leaves the fleet, after the clusters' watches stopped and their state was recorded: releases each
   * cluster (the others claim them at their next beat) and removes this replica's row.
   */
  async leave(): Promise<void> {
    this.quiet = true;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    try {
      for (const [cluster, owned] of this.owned) {
        await this.store.release(cluster, owned.epoch, 'stopped');
        this.fence.disown(cluster);
      }
      this.owned.clear();
      await this.store.leave();
      this.log.info(
        `fleet: left fleet "${this.store.identity.fleet}"; its other replicas take this one's clusters.`,
      );
    } catch (error) {
      this.log.warn(
        `fleet: cannot leave fleet "${this.store.identity.fleet}" cleanly (${errorMessage(error)}); the other replicas take this one's clusters once its heartbeat is ${formatDuration(this.timeoutMs)} old.`,
      );
    } finally {
      await this.store.close();
    }
  }

  /** What the metrics read. */
  get stats(): {
    owned: number;
    unowned: number;
    replicas: number;
    takeovers: number;
    handoffsIn: number;
    handoffsOut: number;
    lost: number;
    leaseValid: boolean;
  } {
    return {
      owned: this.owned.size,
      unowned: this.orphans.size,
      replicas: this.alive,
      ...this.counts,
      leaseValid: this.leaseValid(),
    };
  }

  /** The fence gave a cluster up (too much held): it is stopped, and claimed afresh at a later beat. */
  overflowed(cluster: string): void {
    if (!this.owned.delete(cluster)) return;
    void this.clusters.stop(cluster, 'lost');
  }

  private async tick(): Promise<void> {
    const sentAt = this.now();
    let view: FleetView;
    try {
      view = await this.store.beat(this.profile, this.progress());
    } catch (error) {
      if (error instanceof ReplicaReplaced) {
        this.stopping = true;
        for (const cluster of [...this.owned.keys()]) this.lose(cluster, undefined);
        this.fatal(error);
        return;
      }
      this.beatFailed(error);
      return;
    }
    // Losses first: what the fence holds of a lost cluster must not go on when the lease is renewed.
    const rows = new Map(view.clusters.map((row) => [row.cluster, row]));
    for (const cluster of [...this.owned.keys()]) {
      const row = rows.get(cluster);
      const mine = this.owned.get(cluster);
      if (!row || !this.isMine(row) || row.epoch !== mine?.epoch) this.lose(cluster, row);
    }
    this.renewed(sentAt);
    if (this.stopping) return;
    const alive = view.replicas.filter((replica) => replica.alive);
    this.alive = alive.length;
    const incarnations = new Map(alive.map((replica) => [replica.replica, replica.incarnation]));
    const current = new Map<string, string>();
    for (const row of view.clusters) {
      if (row.owner !== undefined && incarnations.get(row.owner) === row.incarnation)
        current.set(row.cluster, row.owner);
    }
    const { owners, unowned } = assignClusters({
      clusters: [...new Set(alive.flatMap((replica) => replica.clusters))],
      replicas: new Map(alive.map((replica) => [replica.replica, new Set(replica.clusters)])),
      pins: mergedPins(alive),
      current,
    });
    const me = this.store.identity.replica;
    if (!this.quiet) {
      for (const [cluster, owned] of this.owned) {
        const to = owners.get(cluster);
        if (to !== undefined && to !== me && !owned.handingOff) this.handOff(cluster, owned, to);
      }
      for (const [cluster, owner] of owners) {
        if (owner !== me || this.owned.has(cluster) || this.clusters.busy(cluster)) continue;
        // Claims for one beat at most, the rest at the next: a replica that claims many clusters (its
        // start, a takeover) renews its heartbeat on time, and is not taken for gone meanwhile.
        if (this.now() - sentAt >= this.beatMs) break;
        const row = rows.get(cluster);
        if (!row || (current.has(cluster) && !this.isMine(row))) continue;
        const silent = view.replicas.find((replica) => replica.replica === row.owner)?.heartbeatAgeMs;
        await this.claim(cluster, row, silent);
        if (this.stopping) return;
      }
    }
    this.noteOrphans(view, current, owners, unowned);
  }

  private isMine(row: ClusterRow): boolean {
    return row.owner === this.store.identity.replica && row.incarnation === this.store.identity.incarnation;
  }

  private progress(): OwnedProgress[] {
    return [...this.owned].map(([cluster, owned]) => ({
      cluster,
      epoch: owned.epoch,
      ...this.clusters.progress(cluster),
    }));
  }

  private renewed(sentAt: number): void {
    // Nobody may take this replica's clusters before sentAt + timeout; it stops a beat earlier.
    this.validUntil = sentAt + this.timeoutMs - this.beatMs;
    if (this.beatFailing) {
      this.beatFailing = false;
      this.log.info(`fleet: heartbeat renewed in ${this.store.label}.`);
    }
    if (this.holding) {
      this.holding = false;
      this.log.info('fleet: delivering again.');
    }
    this.fence.resume();
  }

  private beatFailed(error: unknown): void {
    if (!this.beatFailing) {
      this.beatFailing = true;
      this.log.warn(
        `fleet: cannot renew this replica's heartbeat in ${this.store.label}: ${errorMessage(error)}; retried every ${formatDuration(this.beatMs)}. ` +
          `Changes are delivered for ${formatDuration(Math.max(0, this.validUntil - this.now()))} more, then held until it answers (after ${formatDuration(this.timeoutMs)} the other replicas may take this one's clusters).`,
      );
    }
    if (!this.leaseValid() && !this.holding && this.owned.size > 0) {
      this.holding = true;
      this.log.warn(
        `fleet: heartbeat not renewed for ${formatDuration(this.timeoutMs - this.beatMs)}: holding the changes of ${this.owned.size} cluster(s) until the database answers; ` +
          'those another replica takes meanwhile are its to report.',
      );
    }
  }

  private async claim(cluster: string, row: ClusterRow, silentMs: number | undefined): Promise<void> {
    let move: MoveRow | undefined;
    try {
      move = await this.store.claim(cluster, row.epoch);
    } catch (error) {
      this.log.debug(
        `fleet: claiming cluster "${cluster}" failed: ${errorMessage(error)}; tried again at the next beat.`,
      );
      return;
    }
    if (!move) return;
    this.owned.set(cluster, { epoch: move.epoch, handingOff: false });
    if (move.reason === 'takeover') this.counts.takeovers++;
    if (move.reason === 'handoff') this.counts.handoffsIn++;
    this.log.info(`fleet: watching cluster "${cluster}" (${describeMove(move, silentMs)}).`);
    this.fence.own(cluster);
    this.clusters.start(cluster, move.epoch);
  }

  private handOff(cluster: string, owned: Owned, to: string): void {
    owned.handingOff = true;
    this.log.info(`fleet: handing cluster "${cluster}" to replica "${to}" (the fleet's balance).`);
    void (async () => {
      await this.clusters.stop(cluster, 'handoff');
      if (this.owned.get(cluster) !== owned) return;
      try {
        if (await this.store.release(cluster, owned.epoch, 'handoff')) this.counts.handoffsOut++;
      } catch (error) {
        this.log.warn(
          `fleet: cannot release cluster "${cluster}" for replica "${to}": ${errorMessage(error)}; it is free once this replica's heartbeat is ${formatDuration(this.timeoutMs)} old, or at the next handoff.`,
        );
      }
      this.owned.delete(cluster);
      this.fence.disown(cluster);
    })();
  }

  private lose(cluster: string, row: ClusterRow | undefined): void {
    const owned = this.owned.get(cluster);
    this.owned.delete(cluster);
    this.fence.disown(cluster);
    // A handoff in progress that was taken before its release: the handoff's stop does the rest.
    if (owned?.handingOff) return;
    this.counts.lost++;
    this.log.warn(
      `fleet: cluster "${cluster}" is no longer this replica's${row?.owner ? ` (replica "${row.owner}" took it over` : ' ('}` +
        `${row?.owner ? ' ' : ''}while this one could not renew its heartbeat); stopped watching it. What it had not delivered, its owner reports.`,
    );
    void this.clusters.stop(cluster, 'lost');
  }

  /** Clusters without a live owner: counted, and said once per episode (at once when none can have one). */
  private noteOrphans(
    view: FleetView,
    current: ReadonlyMap<string, string>,
    owners: ReadonlyMap<string, string>,
    unowned: ReadonlyMap<string, Unowned>,
  ): void {
    const now = this.now();
    const seen = new Set<string>();
    for (const row of view.clusters) {
      const cluster = row.cluster;
      if (current.has(cluster) || this.owned.has(cluster)) continue;
      const why = unowned.get(cluster);
      if (!why && !owners.has(cluster)) continue; // nobody lists it any more: not the fleet's
      seen.add(cluster);
      let orphan = this.orphans.get(cluster);
      if (!orphan) {
        orphan = { since: now, why: describeOrphan(row, why, owners.get(cluster)), warned: false };
        this.orphans.set(cluster, orphan);
      }
      if (!orphan.warned && (why !== undefined || now - orphan.since >= this.timeoutMs)) {
        orphan.warned = true;
        this.log.warn(
          `fleet: cluster "${cluster}" has no owner: ${orphan.why}; nobody reports its changes meanwhile (kubediff_fleet_clusters_unowned).`,
        );
      }
    }
    for (const [cluster, orphan] of this.orphans) {
      if (seen.has(cluster)) continue;
      this.orphans.delete(cluster);
      const owner =
        current.get(cluster) ?? (this.owned.has(cluster) ? this.store.identity.replica : undefined);
      if (orphan.warned && owner)
        this.log.info(`fleet: cluster "${cluster}" has an owner again: replica "${owner}".`);
    }
  }
}

/** Each cluster's pin as the replicas in the fleet declare it; where two differ, the first replica by name wins. */
function mergedPins(
  replicas: readonly { replica: string; pins: ReadonlyMap<string, string> }[],
): Map<string, string> {
  const pins = new Map<string, string>();
  for (const replica of [...replicas].sort((a, b) => (a.replica < b.replica ? -1 : 1))) {
    for (const [cluster, pin] of replica.pins) if (!pins.has(cluster)) pins.set(cluster, pin);
  }
  return pins;
}

function describeMove(move: MoveRow, silentMs: number | undefined): string {
  switch (move.reason) {
    case 'new':
      return 'new to the fleet';
    case 'handoff':
      return `handed over by replica "${move.from}"`;
    case 'stopped':
      return `replica "${move.from}" stopped`;
    case 'takeover':
      return `taken over from replica "${move.from}"${silentMs === undefined ? ', gone' : `, whose last heartbeat was ${formatDuration(silentMs)} ago`}; what changed meanwhile is reported offline`;
  }
}

function describeOrphan(row: ClusterRow, why: Unowned | undefined, designee: string | undefined): string {
  if (why?.reason === 'pinned-away')
    return `it is pinned to replica "${why.replica}", which is not in the fleet`;
  if (why?.reason === 'pinned-unlisted')
    return `it is pinned to replica "${why.replica}", whose configuration does not list it`;
  if (why?.reason === 'no-replica') return 'no replica is in the fleet';
  if (why?.reason === 'unlisted') return 'no replica in the fleet lists it';
  const last = row.owner ?? row.previous;
  const was = last ? `replica "${last}" had it` : 'it is new to the fleet';
  return designee ? `${was}; replica "${designee}" is to take it` : was;
}
