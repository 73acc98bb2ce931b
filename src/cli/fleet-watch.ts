// `watch --fleet`: this process as one replica of a fleet (docs/fleets.md). The member (src/state/
// fleet-member.ts) decides which clusters this replica owns; this opens, watches and closes them as it
// says. Each owned cluster is a ClusterSupervisor with a Lifecycle of its own (its client and its state
// store, fenced by the claim's epoch), fed into the one shared pipeline like any cluster of several, its
// changes passing the fleet's fence (src/state/fleet-fence.ts) before the sinks.
//
// Stopping (watch.ts): stopWatching() first (no more claims; every owned cluster's watch ends), then the
// sinks drain, then close(): each cluster's state is recorded and closed, and the member leaves the
// fleet, releasing its clusters for the others to claim at once.
import { randomUUID } from 'node:crypto';
import type { FleetSettings } from '../config/fleet-settings.ts';
import type { WatchSettings } from '../config/watch-settings.ts';
import type { ServiceRuntime } from '../service/service.ts';
import type { SinkSet } from '../sinks/core/setup.ts';
import { FleetFence } from '../state/fleet-fence.ts';
import { type FleetClusters, FleetMember } from '../state/fleet-member.ts';
import { FleetStore } from '../state/fleet-store.ts';
import { sinkProgress } from '../state/write-queue.ts';
import { Backoff, sleep } from '../util/backoff.ts';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import { Lifecycle } from '../util/lifecycle.ts';
import type { Logger } from '../util/log.ts';
import type { ClusterPlan } from './cluster-plans.ts';
import { startInBackground } from './cluster-start.ts';
import {
  type ClusterDeps,
  ClusterSupervisor,
  type ClusterWiring,
  clusterLogger,
} from './cluster-supervisor.ts';

/** One owned cluster: what was opened for it, and whether its watch was asked to stop. */
interface Owned {
  plan: ClusterPlan;
  lifecycle: Lifecycle;
  supervisor: ClusterSupervisor | undefined;
  /** Opening it (retried while the database is down); stopping waits for it. */
  opening: Promise<void>;
  abort: AbortController;
}

/** What starting the owned clusters needs of the watch, once its pipeline and sinks exist. */
export interface FleetStartDeps {
  service: ServiceRuntime;
  log: Logger;
  wiringOf: (cluster: ClusterSupervisor) => ClusterWiring;
  router: SinkSet['router'];
  /** A cluster this replica owns has synced (outcomes follow its Warning Events from then on). */
  onSynced?: (cluster: ClusterSupervisor) => void;
}

export class FleetWatch implements FleetClusters {
  readonly fence: FleetFence;
  readonly member: FleetMember;
  private readonly settings: FleetSettings;
  private readonly plans: ReadonlyMap<string, ClusterPlan>;
  private readonly clusterDeps: ClusterDeps;
  private readonly store: FleetStore;
  private readonly log: Logger;
  private readonly shutdownTimeoutMs: number;
  private readonly owned = new Map<string, Owned>();
  /** Clusters whose watch is stopping: not started again before it is over. */
  private readonly stopping = new Set<string>();
  private deps: FleetStartDeps | undefined;
  private readonly incarnation = randomUUID();

  constructor(
    settings: WatchSettings & { fleet: FleetSettings; state: NonNullable<WatchSettings['state']> },
    plans: readonly ClusterPlan[],
    clusterDeps: ClusterDeps,
    options: { log: Logger; version: string },
  ) {
    this.settings = settings.fleet;
    this.plans = new Map(plans.map((plan) => [plan.name, plan]));
    this.clusterDeps = clusterDeps;
    this.log = options.log;
    this.shutdownTimeoutMs = settings.delivery.shutdownTimeoutMs;
    this.store = new FleetStore(
      { url: settings.state.path, passwordFile: settings.state.passwordFile },
      { fleet: settings.fleet.name, replica: settings.fleet.replica, incarnation: this.incarnation },
      settings.fleet.replicaTimeoutMs,
    );
    const pins = new Map(
      plans.flatMap((plan) => (plan.pin === undefined ? [] : [[plan.name, plan.pin] as const])),
    );
    this.fence = new FleetFence({
      leaseValid: () => this.member.leaseValid(),
      log: options.log,
      onOverflow: (cluster) => this.member.overflowed(cluster),
    });
    this.member = new FleetMember({
      store: this.store,
      profile: { clusters: [...this.plans.keys()], pins, version: options.version },
      timeoutMs: settings.fleet.replicaTimeoutMs,
      clusters: this,
      fence: this.fence,
      log: options.log,
    });
  }

  /** Refused with --leader-elect: the fleet is the replicas' coordination. */
  static checkCompatible(leaderElect: boolean): void {
    if (leaderElect) {
      throw new UsageError(
        '--fleet and --leader-elect both coordinate replicas; a fleet needs no leader (each cluster has one owner among the replicas): drop --leader-elect.',
      );
    }
  }

  /** The clusters this replica watches now. */
  clusters(): ClusterSupervisor[] {
    return [...this.owned.values()].flatMap((owned) => (owned.supervisor ? [owned.supervisor] : []));
  }

  /**
   * Brings the fleet's database schema up to date, before anything of the watch reads the history (the
   * rollouts left open, --ui): on an empty database, no replica has opened a cluster yet to create it.
   */
  async migrate(): Promise<void> {
    await this.unlessUnreachable(() => this.store.migrate());
  }

  /**
   * Joins the fleet (waiting while another live process has this replica's name) and beats from then
   * on. False when `stop` came first.
   */
  async run(deps: FleetStartDeps, stop: Promise<unknown>): Promise<boolean> {
    this.deps = deps;
    const joined = await this.unlessUnreachable(() => this.member.join(stop));
    if (!joined) return false;
    deps.service.synced(() => this.clusters().flatMap((cluster) => cluster.allInformers()));
    this.member.start();
    return true;
  }

  /** `work` on the fleet's database; a failure that is not kubediff's own sentence is said as one. */
  private async unlessUnreachable<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof KubediffError) throw error;
      throw new KubediffError(
        `cannot join fleet "${this.settings.name}" in ${this.store.label}: ${errorMessage(error)}; check that the database is running and reachable, and the --state URL.`,
        { cause: error },
      );
    }
  }

  /** FleetClusters: this replica owns `cluster` at `epoch`: open it (retried while that fails), then watch it. */
  start(cluster: string, epoch: number): void {
    const plan = this.plans.get(cluster);
    const deps = this.deps;
    if (!plan || !deps) return;
    const owned: Owned = {
      plan,
      lifecycle: new Lifecycle(),
      supervisor: undefined,
      opening: Promise.resolve(),
      abort: new AbortController(),
    };
    this.owned.set(cluster, owned);
    owned.opening = this.open(owned, epoch, deps);
  }

  private async open(owned: Owned, epoch: number, deps: FleetStartDeps): Promise<void> {
    const { plan } = owned;
    const log = clusterLogger(this.log, plan.label);
    const backoff = new Backoff(this.clusterDeps.timing.backoff);
    const fleetOwnership = {
      fleet: this.settings.name,
      replica: this.settings.replica,
      incarnation: this.incarnation,
      epoch,
      replicaTimeoutMs: this.settings.replicaTimeoutMs,
    };
    let said = false;
    while (!owned.abort.signal.aborted) {
      try {
        owned.supervisor = await ClusterSupervisor.open(
          plan,
          { ...this.clusterDeps, fleetOwnership },
          owned.lifecycle,
          log,
        );
        break;
      } catch (error) {
        if (owned.abort.signal.aborted) break;
        if (!said) {
          said = true;
          log.warn(
            `cannot open its state to start watching it: ${errorMessage(error)}; retried in the background.`,
          );
        }
        await sleep(backoff.next(), owned.abort.signal);
      }
    }
    const supervisor = owned.supervisor;
    if (!supervisor || owned.abort.signal.aborted) return;
    supervisor.recorder?.attach(
      sinkProgress(() => deps.router.sinks),
      () => supervisor.allInformers(),
    );
    if (!plan.optional) deps.service.clusterDown(plan.label, undefined);
    startInBackground(supervisor, deps);
  }

  /** FleetClusters: stops watching `cluster`, recording what its sinks delivered (handoff) or nothing more (lost). */
  async stop(cluster: string, how: 'handoff' | 'lost'): Promise<void> {
    const owned = this.owned.get(cluster);
    if (!owned) return;
    this.owned.delete(cluster);
    this.stopping.add(cluster);
    try {
      owned.abort.abort();
      await owned.opening;
      const supervisor = owned.supervisor;
      await supervisor?.stop();
      if (how === 'handoff') await supervisor?.recorder?.handOff(this.shutdownTimeoutMs);
      else await supervisor?.recorder?.abandon();
      await owned.lifecycle.close();
    } catch (error) {
      this.log.warn(`fleet: stopping cluster "${cluster}" failed: ${errorMessage(error)}.`);
    } finally {
      this.deps?.service.clusterSynced(owned.plan.label);
      this.stopping.delete(cluster);
    }
  }

  /** FleetClusters: still stopping an earlier watch of `cluster`. */
  busy(cluster: string): boolean {
    return this.stopping.has(cluster);
  }

  /** FleetClusters: for the heartbeat. */
  progress(cluster: string): { synced: boolean; lagMs: number | undefined } {
    const supervisor = this.owned.get(cluster)?.supervisor;
    return { synced: supervisor?.synced ?? false, lagMs: supervisor?.recorder?.lagMs };
  }

  /** Stop asked for: no more claims, and every owned cluster's watch ends (its state is recorded at close()). */
  async stopWatching(): Promise<void> {
    this.member.quiesce();
    await Promise.all(
      [...this.owned.values()].map(async (owned) => {
        owned.abort.abort();
        await owned.opening;
        await owned.supervisor?.stop();
      }),
    );
  }

  /** After the sinks drained: each cluster's state recorded and closed, then the fleet left. */
  async close(): Promise<void> {
    for (const owned of this.owned.values()) {
      try {
        await owned.lifecycle.close();
      } catch (error) {
        this.log.warn(`fleet: closing cluster ${owned.plan.label} failed: ${errorMessage(error)}.`);
      }
    }
    await this.member.leave();
  }
}
