// The UI's metrics (`watch --ui`, src/ui/server.ts; docs/deploy.md, "Health and metrics"): requests by
// route and status, their time, refusals at a limit, live streams. Registered only when a UI is served
// beside the watch; the UI works the same without.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';
import type { ObservedListener } from './listener-metrics.ts';

/** What the metrics learn of the UI, as it happens. */
export interface UiObserver {
  /** A request answered: its route (one of a fixed few), status, and seconds from request to answer. */
  answered(route: string, status: number, seconds: number): void;
  /**
   * A request refused, or a stream closed, at a limit: the history reader's queue, the live streams,
   * the time an object's answer may take, a live stream's unread data.
   */
  rejected(limit: 'queue' | 'streams' | 'time' | 'stream_buffer'): void;
}

/** The UI as the metrics see it. */
export interface ObservedUi {
  readonly liveStreams: number;
  /** Its connections' guard (src/util/listener-guard.ts). */
  readonly listener: ObservedListener;
  observe(observer: UiObserver): void;
}

export function registerUiMetrics(registration: MetricsRegistration, ui: ObservedUi): void {
  const { registers } = registration;
  const requests = new Counter({
    name: 'kubediff_ui_requests_total',
    help: 'Requests the UI answered, by route (page, asset, facets, timeline, events, object, stream, healthz, other) and status code.',
    labelNames: ['route', 'code'],
    registers,
  });
  const durations = new Histogram({
    name: 'kubediff_ui_request_duration_seconds',
    help: "Time from a UI request to its answer, by route: for the API routes, mostly the history query's.",
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const rejected = new Counter({
    name: 'kubediff_ui_rejected_total',
    help: 'UI requests refused with 503 at a limit: queue (history queries waiting), streams (live streams open).',
    labelNames: ['limit'],
    registers,
  });
  new Gauge({
    name: 'kubediff_ui_live_streams',
    help: 'Live (server-sent events) streams open to UI pages.',
    registers,
    collect() {
      this.set(ui.liveStreams);
    },
  });
  ui.observe({
    answered: (route, status, seconds) => {
      requests.inc({ route, code: String(status) });
      // A live stream's "answer" lasts as long as the page stays open: not a query's time.
      if (route !== 'stream') durations.observe({ route }, seconds);
    },
    rejected: (limit) => rejected.inc({ limit }),
  });
}
