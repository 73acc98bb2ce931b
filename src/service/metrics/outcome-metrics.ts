// The outcomes of rollouts (docs/outcomes.md): OUTCOMEs reported per verdict, the rollouts followed, and
// the bounds of what the engine keeps (its health view, its Warning logs, its open rollouts) with what
// each left out. Read at each scrape from the engine's counts.
import { Counter, Gauge } from 'prom-client';
import { VERDICTS } from '../../events/event.ts';
import type { OutcomeStats } from '../../events/outcomes/outcome-engine.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

export interface OutcomeSources {
  /** The engine that follows rollouts; absent with --no-outcomes. */
  outcomes?: { stats(): OutcomeStats } | undefined;
}

export function registerOutcomeMetrics(
  registration: MetricsRegistration,
  sources: () => OutcomeSources,
): void {
  const { registers } = registration;
  const stats = () => sources().outcomes?.stats();
  new Counter({
    name: 'kubediff_outcomes_total',
    help: 'OUTCOMEs reported, per verdict (healthy, degraded, failed, superseded, unknown).',
    labelNames: ['verdict'],
    registers,
    collect() {
      const reported = stats()?.reported;
      for (const verdict of VERDICTS) {
        registration.incrementTo(this, { verdict }, reported?.[verdict] ?? 0, `outcomes\u0000${verdict}`);
      }
    },
  });
  const gauge = (name: string, help: string, read: (stats: OutcomeStats) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const now = stats();
        this.set(now ? read(now) : 0);
      },
    });
  const counter = (name: string, help: string, read: (stats: OutcomeStats) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = stats();
        registration.incrementTo(this, {}, now ? read(now) : 0, name);
      },
    });
  gauge('kubediff_outcome_rollouts_open', 'Rollouts followed and waiting for their verdict.', (s) => s.open);
  gauge(
    'kubediff_outcome_objects',
    'Pods, ReplicaSets and workloads in the health view (at most 200,000).',
    (s) => s.records,
  );
  counter(
    'kubediff_outcome_objects_left_out_total',
    'Objects not taken into the health view because it was full: their rollouts are judged without them.',
    (s) => s.recordsLeftOut,
  );
  gauge(
    'kubediff_outcome_warnings',
    'Warning Events kept for the verdicts (at most 20,000 per cluster).',
    (s) => s.warnings,
  );
  counter(
    'kubediff_outcome_warnings_forgotten_total',
    'Warning Events forgotten at their bound (the ones updated longest ago).',
    (s) => s.warningsForgotten,
  );
  counter(
    'kubediff_outcome_settled_at_bound_total',
    'Rollouts reported unknown because more than 10,000 were followed at once.',
    (s) => s.settledAtBound,
  );
}
