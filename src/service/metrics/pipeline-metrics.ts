// The pipeline's own counts: changes whose processing failed at one stage (src/util/event-failures.ts),
// and deleted owners forgotten at their bound (src/events/owners.ts). Read at each scrape.
import { Counter } from 'prom-client';
import { FAILURE_STAGES } from '../../events/pipeline.ts';
import type { EventFailures } from '../../util/event-failures.ts';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';

export interface PipelineSources {
  /** Changes that failed at one stage of processing. */
  failures?: EventFailures | undefined;
  /** Owners: deleted objects forgotten at the bound of the recently deleted ones. */
  owners?: { readonly forgottenDeleted: number } | undefined;
}

export function registerPipelineMetrics(
  registration: MetricsRegistration,
  sources: () => PipelineSources,
): void {
  const { registers } = registration;
  new Counter({
    name: 'kubediff_event_failures_total',
    help: 'Changes whose processing failed at one stage (normalize, diff, filter, sink, recorder, handler, used-by); the watch went on. The log names the first object of each kind of failure.',
    labelNames: ['stage'],
    registers,
    collect() {
      const failures = sources().failures;
      for (const stage of FAILURE_STAGES) {
        registration.incrementTo(this, { stage }, failures?.count(stage) ?? 0, `failures\u0000${stage}`);
      }
    },
  });
  new Counter({
    name: 'kubediff_owners_forgotten_deleted_total',
    help: 'Deleted objects whose controller was forgotten (the oldest, beyond the 10,000 most recent): a dependent deleted later names the nearest owner still known.',
    registers,
    collect() {
      registration.incrementTo(this, {}, sources().owners?.forgottenDeleted ?? 0, 'owners-forgotten');
    },
  });
}
