// What each area's metrics are registered with (the providers in this folder, plugged into one registry
// by KubediffMetrics, src/service/metrics.ts): the registry, the clock, and a way to expose a count that
// an area keeps itself (a sink's delivered events, the failures per stage) as a Prometheus counter.
import type { Counter, Registry } from 'prom-client';

export interface MetricsRegistration {
  /** Where every series is registered. */
  readonly registers: Registry[];
  now(): number;
  /**
   * Brings `counter` (at `labels`) up to `total`, a cumulative count kept elsewhere and read at each
   * scrape; `key` remembers how far it went, so the counter never goes down.
   */
  incrementTo<L extends string>(
    counter: Counter<L>,
    labels: Partial<Record<L, string>>,
    total: number,
    key: string,
  ): void;
}

export function metricsRegistration(registry: Registry, now: () => number): MetricsRegistration {
  /** Cumulative counts read from their sources at the last scrape. */
  const totals = new Map<string, number>();
  return {
    registers: [registry],
    now,
    incrementTo(counter, labels, total, key) {
      const delta = total - (totals.get(key) ?? 0);
      counter.inc(labels, Math.max(0, delta));
      totals.set(key, Math.max(total, totals.get(key) ?? 0));
    },
  };
}
