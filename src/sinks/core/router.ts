// Hands every event to every sink whose filter accepts it (an OUTCOME only to the sinks that take
// OUTCOMEs: Sink.deliverOutcome; the stream and webhook sinks telling stories do not, docs/outcomes.md). deliver() never
// blocks and never throws: each sink queues on its own, so a slow or broken
// sink delays neither the watch nor the other sinks. close() lets all sinks
// finish in parallel within one shutdown timeout and reports what became of
// their events.
import { type ChangeEvent, identityOfEvent, type KubediffEvent } from '../../events/event.ts';
import {
  compileFilter,
  type EventFilter,
  evaluateContained,
  evaluateSafely,
  type FilterVerdict,
} from '../../events/filter.ts';
import type { DeliveryMark, EventDelivery } from '../../events/pipeline.ts';
import { groupedCount, plural } from '../../util/count-text.ts';
import { MAX_TIMER_MS } from '../../util/duration.ts';
import { errorMessage } from '../../util/errors.ts';
import { EventFailures, type FailureReporter } from '../../util/event-failures.ts';
import type { Logger } from '../../util/log.ts';
import { type Sink, type SinkReport, undelivered } from './sink.ts';

export interface Route {
  sink: Sink;
  /** Absent: every event. */
  filter?: EventFilter;
}

export interface RouteReport extends SinkReport {
  /** Events the sink's filter kept from it. */
  filtered: number;
}

/** Extra time, beyond the shutdown timeout, that a sink's close() gets before it is reported as stuck. */
const CLOSE_GRACE_MS = 2_000;

/** The pipeline's delivery: every sink whose filter accepts an event gets it. */
export class Router implements EventDelivery {
  private readonly routes: { sink: Sink; filter: EventFilter; filtered: number }[];
  private readonly log: Logger;
  private readonly failures: FailureReporter<'sink' | 'filter'>;
  private readonly closeGraceMs: number;
  private closing = false;

  constructor(
    routes: readonly Route[],
    log: Logger,
    options: { closeGraceMs?: number; failures?: FailureReporter<'sink' | 'filter'> } = {},
  ) {
    this.routes = routes.map((route) => ({
      sink: route.sink,
      filter: route.filter ?? compileFilter({}),
      filtered: 0,
    }));
    this.log = log;
    this.failures = options.failures ?? new EventFailures(log);
    this.closeGraceMs = options.closeGraceMs ?? CLOSE_GRACE_MS;
  }

  get sinks(): Sink[] {
    return this.routes.map((route) => route.sink);
  }

  /** Hands `event` to every sink whose filter accepts it; returns each sink's accepted count with it. */
  deliver(event: KubediffEvent): DeliveryMark {
    if (this.closing) return this.accepted();
    for (const route of this.routes) {
      const { sink } = route;
      // A sink that takes no OUTCOME is not offered one (nor counted as filtering it).
      if (event.type === 'OUTCOME' && !sink.deliverOutcome) continue;
      const verdict = evaluateContained(route.filter, event, this.failures, sink.name, false);
      if (!verdict.deliver) {
        route.filtered++;
        continue;
      }
      try {
        if (event.type === 'OUTCOME') sink.deliverOutcome?.(event);
        // `ignore` rules may have removed some changes: the sink gets what its filter kept.
        else sink.deliver(verdict.event ?? event);
      } catch (error) {
        // A sink must not throw; if one does, the others still get the event, and it is reported.
        this.failures.report(
          'sink',
          `${route.sink.name} accepting the event`,
          identityOfEvent(event),
          error,
          'that sink does not get it; the other sinks do',
        );
      }
    }
    return this.accepted();
  }

  /** Per sink, the events it has accepted so far. */
  accepted(): DeliveryMark {
    return this.routes.map((route) => route.sink.stats().accepted);
  }

  /** Where `event` would go, and why (for --explain). */
  explain(event: ChangeEvent): { sink: string; verdict: FilterVerdict }[] {
    // deliver() reports a failing filter; explaining it is not a second failure.
    return this.routes.map((route) => ({
      sink: route.sink.name,
      verdict: evaluateSafely(route.filter, event, true).verdict,
    }));
  }

  /** Closes every sink in parallel; resolves within about `timeoutMs` even if a sink misbehaves. */
  async close(timeoutMs: number): Promise<RouteReport[]> {
    this.closing = true;
    return Promise.all(
      this.routes.map(async (route): Promise<RouteReport> => {
        let timer: NodeJS.Timeout | undefined;
        const stuck = new Promise<SinkReport>((resolve) => {
          timer = setTimeout(
            () => resolve({ name: route.sink.name, stats: route.sink.stats() }),
            Math.min(timeoutMs + this.closeGraceMs, MAX_TIMER_MS),
          );
        });
        try {
          const report = await Promise.race([route.sink.close(timeoutMs), stuck]);
          return { ...report, filtered: route.filtered };
        } catch (error) {
          this.log.warn(`${route.sink.name}: failed to close: ${errorMessage(error)}`);
          return { name: route.sink.name, stats: route.sink.stats(), filtered: route.filtered };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}

/**
 * The shutdown report: one line per sink that did not deliver everything (what, how many, where they went);
 * the others only with --debug, and nothing for a sink that got no event.
 */
export function logShutdownReport(reports: readonly RouteReport[], log: Logger): void {
  for (const report of reports) {
    const { stats } = report;
    const missed = undelivered(stats);
    const delivered = `${plural(stats.delivered, 'event')} delivered${
      stats.summarized > 0
        ? `, ${groupedCount(stats.summarized)} more in ${plural(stats.digests, 'digest')}`
        : ''
    }`;
    if (missed === 0) {
      if (stats.accepted > 0) log.debug(`${report.name}: ${delivered}.`);
      continue;
    }
    const parts = [
      stats.deadLettered > 0
        ? `${plural(stats.deadLettered, 'event')} written to the dead-letter file${report.deadLetterFile ? ` ${report.deadLetterFile}` : ''}`
        : '',
      stats.lost > 0 ? `${plural(stats.lost, 'event')} lost` : '',
      stats.pending > 0
        ? `${plural(stats.pending, 'event')} still queued when the shutdown timeout ran out`
        : '',
    ].filter(Boolean);
    log.warn(`${report.name}: ${plural(missed, 'event')} not delivered (${parts.join('; ')}); ${delivered}.`);
  }
}
