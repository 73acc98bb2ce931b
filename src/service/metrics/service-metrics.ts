// This process as a service: which kubediff and Node.js run, whether it is ready, whether it leads, and
// what a standby (--leader-elect) holds back. Read at each scrape.
import { Counter, Gauge } from 'prom-client';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

export interface ServiceSources {
  /** --leader-elect: the events a standby holds back. */
  standby?:
    | {
        readonly buffered: number;
        readonly bufferedBytes: number;
        readonly droppedEvents: number;
        /** Floors of a previous leader's checkpoint refused at a takeover (src/events/handover/leader-gate.ts). */
        readonly refusedFloors: number;
        /** Events not delivered because the previous leader's checkpoint covered them. */
        readonly skippedEvents: number;
      }
    | undefined;
  /** 1 while this replica is the leader, or always when leader election is off. */
  isLeader?: (() => boolean) | undefined;
  isReady?: (() => boolean) | undefined;
}

export function registerServiceMetrics(
  registration: MetricsRegistration,
  version: string,
  sources: () => ServiceSources,
): void {
  const { registers } = registration;
  new Gauge({
    name: 'kubediff_build_info',
    help: 'Always 1; the labels say which kubediff and which Node.js run.',
    labelNames: ['version', 'node'],
    registers,
  }).set({ version, node: process.versions.node }, 1);
  new Gauge({
    name: 'kubediff_leader',
    help: '1 while this replica delivers events (the leader, or leader election off); 0 on standby.',
    registers,
    collect() {
      this.set(sources().isLeader?.() === false ? 0 : 1);
    },
  });
  new Gauge({
    name: 'kubediff_ready',
    help: '1 when /readyz answers ready.',
    registers,
    collect() {
      this.set(sources().isReady?.() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'kubediff_standby_buffer_events',
    help: 'Events a standby (--leader-elect) holds back until it leads or the leader passes them.',
    registers,
    collect() {
      this.set(sources().standby?.buffered ?? 0);
    },
  });
  new Gauge({
    name: 'kubediff_standby_buffer_bytes',
    help: 'Bytes of the events a standby holds back (bounded by KUBEDIFF_STANDBY_MAX_BUFFER).',
    registers,
    collect() {
      this.set(sources().standby?.bufferedBytes ?? 0);
    },
  });
  new Counter({
    name: 'kubediff_standby_dropped_events_total',
    help: 'Events a standby dropped (the oldest) because its buffer was full: the leader wrote no checkpoint.',
    registers,
    collect() {
      registration.incrementTo(this, {}, sources().standby?.droppedEvents ?? 0, 'standby-dropped');
    },
  });
  new Counter({
    name: 'kubediff_checkpoint_refused_total',
    help: "Floors of a previous leader's checkpoint (the Lease annotation) refused at a takeover: above what the API server is at, or not confirmed by it.",
    registers,
    collect() {
      registration.incrementTo(this, {}, sources().standby?.refusedFloors ?? 0, 'checkpoint-refused');
    },
  });
  new Counter({
    name: 'kubediff_checkpoint_skipped_events_total',
    help: "Events not delivered because the previous leader's checkpoint says it delivered them.",
    registers,
    collect() {
      registration.incrementTo(this, {}, sources().standby?.skippedEvents ?? 0, 'checkpoint-skipped');
    },
  });
}
