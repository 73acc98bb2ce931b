// --fleet (docs/fleets.md): what this replica owns, what it sees without an owner, how many replicas it
// sees alive, whether it may deliver, and what moved to it or from it. Read at each scrape from the fleet
// member and its fence. Registered only when a fleet is served.
import { Counter, Gauge } from 'prom-client';
import { DEFAULT_MAX_HELD } from '../../state/fleet-fence.ts';
import { groupedCount } from '../../util/count-text.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

/** The fleet member's counts (src/state/fleet-member.ts) and its fence's (src/state/fleet-fence.ts). */
export interface FleetSource {
  readonly stats: {
    owned: number;
    unowned: number;
    replicas: number;
    takeovers: number;
    handoffsIn: number;
    handoffsOut: number;
    lost: number;
    leaseValid: boolean;
  };
  readonly fence: { readonly holding: number; readonly overflows: number };
}

export function registerFleetMetrics(registration: MetricsRegistration, fleet: FleetSource): void {
  const { registers } = registration;
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(value());
      },
    });
  gauge(
    'kubediff_fleet_clusters_owned',
    '--fleet: clusters this replica owns and watches.',
    () => fleet.stats.owned,
  );
  gauge(
    'kubediff_fleet_clusters_unowned',
    "--fleet: the fleet's clusters without a live owner as this replica sees them: nobody reports their changes meanwhile.",
    () => fleet.stats.unowned,
  );
  gauge(
    'kubediff_fleet_replicas',
    "--fleet: the fleet's replicas alive (a heartbeat within their timeout), this one included.",
    () => fleet.stats.replicas,
  );
  gauge(
    'kubediff_fleet_lease_valid',
    "--fleet: 1 while this replica's heartbeat is renewed and it delivers; 0 while it holds its changes back.",
    () => (fleet.stats.leaseValid ? 1 : 0),
  );
  gauge(
    'kubediff_fleet_held_changes',
    "--fleet: changes held back while this replica's heartbeat is not renewed.",
    () => fleet.fence.holding,
  );
  new Counter({
    name: 'kubediff_fleet_held_overflows_total',
    help: `--fleet: clusters given up because more than ${groupedCount(DEFAULT_MAX_HELD)} of their changes were held while this replica's heartbeat was not renewed (claimed afresh and caught up once the database answers; nothing lost).`,
    registers,
    collect() {
      registration.incrementTo(this, {}, fleet.fence.overflows, 'fleet-held-overflows');
    },
  });
  new Counter({
    name: 'kubediff_fleet_takeovers_total',
    help: '--fleet: clusters this replica took over from a replica gone silent past its timeout.',
    registers,
    collect() {
      registration.incrementTo(this, {}, fleet.stats.takeovers, 'fleet-takeovers');
    },
  });
  new Counter({
    name: 'kubediff_fleet_handoffs_total',
    help: '--fleet: clusters handed from one live replica to another for balance: "in" to this replica, "out" from it.',
    labelNames: ['direction'],
    registers,
    collect() {
      registration.incrementTo(this, { direction: 'in' }, fleet.stats.handoffsIn, 'fleet-handoffs-in');
      registration.incrementTo(this, { direction: 'out' }, fleet.stats.handoffsOut, 'fleet-handoffs-out');
    },
  });
  new Counter({
    name: 'kubediff_fleet_clusters_lost_total',
    help: '--fleet: clusters another replica took from this one while its heartbeat was not renewed (paused, cut off).',
    registers,
    collect() {
      registration.incrementTo(this, {}, fleet.stats.lost, 'fleet-lost');
    },
  });
}
