// Prometheus metrics (`--listen`, GET /metrics), with prom-client. Everything
// is observed from outside the data path: events as they leave the event
// builder, informer health through InformerHandler.onState, sink counters
// through Sink.stats() when scraped, HTTP request timings and retries through
// the sinks' delivery observer. Nothing here is on a hot path beyond a
// counter increment per event.
//
// Names follow Prometheus conventions (`_total` counters, base units). The
// `resource` label is the kubectl-style qualified name (`deployments.apps`,
// `pods`); `sink` is the sink's name as in the logs (URLs elided).

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { AuditJoinStats } from '../events/audit-join.ts';
import { type ChangeEvent, qualifiedResource } from '../events/event.ts';
import type { Informer } from '../informer/informer.ts';
import type { ReflectorState } from '../informer/reflector.ts';
import type { ConnectionStats } from '../kube/transport.ts';
import { qualifiedName } from '../kube/types.ts';
import type { DeadLetterFile } from '../sinks/dead-letter.ts';
import { observeDeliveries } from '../sinks/delivery.ts';
import type { Sink, SinkStats } from '../sinks/sink.ts';
import { type EventFailures, FAILURE_STAGES } from '../util/event-failures.ts';
import { AUDIT_REQUEST_OUTCOMES, type AuditRequestOutcome } from './audit-server.ts';

/** What the metrics learn of the UI (`watch --ui`, src/ui/server.ts); the UI works the same without. */
export interface UiObserver {
  /** A request answered: its route (one of a fixed few), status, and seconds from request to answer. */
  answered(route: string, status: number, seconds: number): void;
  /** A request refused at a limit: the history reader's queue, or the live streams. */
  rejected(limit: 'queue' | 'streams'): void;
}

/** The UI as the metrics see it. */
export interface ObservedUi {
  readonly liveStreams: number;
  observe(observer: UiObserver): void;
}

export interface MetricsSources {
  /** The informers running now (read on each scrape). */
  informers?: () => readonly Informer[];
  /** Changes that failed at one stage of processing (src/util/event-failures.ts). */
  failures?: EventFailures;
  /** --state: the writes held back for the sinks. */
  state?: {
    readonly backlogBytes: number;
    readonly unconfirmedWrites: number;
    readonly droppedWrites: number;
    /** Whether this process records the cluster now (false on a leader-elected standby, PostgreSQL). */
    readonly recording: boolean;
  };
  /** --leader-elect: the events a standby holds back. */
  standby?: { readonly buffered: number; readonly bufferedBytes: number; readonly droppedEvents: number };
  /** The sinks (read on each scrape). */
  sinks?: () => readonly Sink[];
  /** The dead-letter files (read on each scrape). */
  deadLetterFiles?: () => readonly DeadLetterFile[];
  /** 1 while this replica is the leader, or always when leader election is off. */
  isLeader?: () => boolean;
  isReady?: () => boolean;
  /** The connections to the API server (read on each scrape). */
  connections?: () => ConnectionStats;
  /** --audit-listen: the audit webhook's requests and the join's counts. */
  audit?: {
    requests: () => ReadonlyMap<AuditRequestOutcome, number>;
    join: () => AuditJoinStats;
  };
  /** Owners: deleted objects forgotten at the bound of the recently deleted ones (src/events/owners.ts). */
  owners?: { readonly forgottenDeleted: number };
}

const SINK_OUTCOMES: readonly [keyof SinkStats, string][] = [
  ['accepted', 'accepted'],
  ['delivered', 'delivered'],
  ['summarized', 'summarized'],
  ['deadLettered', 'dead_lettered'],
  ['lost', 'lost'],
];

export class KubediffMetrics {
  readonly registry = new Registry();
  private readonly events: Counter<'type' | 'resource'>;
  private readonly watchRestarts: Counter<'resource'>;
  private readonly relists: Counter<'resource'>;
  private readonly watchFailures: Counter<'resource' | 'reason'>;
  private readonly sinkRequests: Histogram<'sink' | 'outcome'>;
  private readonly sinkRetries: Counter<'sink'>;
  private readonly lastEventAt = new Map<string, number>();
  /** Per informer: phases seen so far, to tell a first LIST/WATCH from a relist/restart. */
  private readonly history = new WeakMap<Informer, { listed: boolean; watched: boolean }>();
  /** Cumulative counts read from sources at the last scrape (see incrementTo). */
  private readonly sourceTotals = new Map<string, number>();
  private sources: MetricsSources = {};
  private readonly stopObserving: () => void;
  private readonly now: () => number;

  constructor(options: { version: string; defaultMetrics?: boolean; now?: () => number }) {
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });

    new Gauge({
      name: 'kubediff_build_info',
      help: 'Always 1; the labels say which kubediff and which Node.js run.',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: options.version, node: process.versions.node }, 1);

    this.events = new Counter({
      name: 'kubediff_events_total',
      help: 'Change events reported (before sink filters), by type and resource.',
      labelNames: ['type', 'resource'],
      registers,
    });
    const self = this;
    new Gauge({
      name: 'kubediff_seconds_since_last_event',
      help: 'Seconds since the last change event of each resource (only resources that had one).',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        const now = self.now();
        for (const [resource, at] of self.lastEventAt) this.set({ resource }, (now - at) / 1000);
      },
    });
    this.watchRestarts = new Counter({
      name: 'kubediff_watch_restarts_total',
      help: 'Watches re-opened after the first one (server timeouts, dropped connections, errors), by resource.',
      labelNames: ['resource'],
      registers,
    });
    this.relists = new Counter({
      name: 'kubediff_relists_total',
      help: 'LISTs after the first one (after 410 Gone, 403/404 or a long failure), by resource.',
      labelNames: ['resource'],
      registers,
    });
    this.watchFailures = new Counter({
      name: 'kubediff_watch_failures_total',
      help: 'Failed LIST or WATCH attempts, by resource and kind of failure (network, forbidden, server, …).',
      labelNames: ['resource', 'reason'],
      registers,
    });
    new Gauge({
      name: 'kubediff_informers',
      help: 'Informers (one per resource type, or per type and namespace with -n), by state.',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const counts = { synced: 0, syncing: 0, failing: 0 };
        for (const informer of self.sources.informers?.() ?? []) {
          if (informer.failure) counts.failing++;
          else if (informer.hasSynced) counts.synced++;
          else counts.syncing++;
        }
        for (const [state, value] of Object.entries(counts)) this.set({ state }, value);
      },
    });
    new Gauge({
      name: 'kubediff_informers_running',
      help: 'Informers running (listing, watching or retrying).',
      registers,
      collect() {
        this.set(self.sources.informers?.().length ?? 0);
      },
    });
    new Gauge({
      name: 'kubediff_objects',
      help: 'Objects held in the informer caches, by resource.',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        const totals = new Map<string, number>();
        for (const informer of self.sources.informers?.() ?? []) {
          const resource = qualifiedName(informer.type);
          totals.set(resource, (totals.get(resource) ?? 0) + informer.objectCount);
        }
        for (const [resource, value] of totals) this.set({ resource }, value);
      },
    });

    new Counter({
      name: 'kubediff_sink_events_total',
      help: 'Events handed to each sink (accepted) and what became of them (delivered, summarized in a digest, dead_lettered, lost).',
      labelNames: ['sink', 'outcome'],
      registers,
      collect() {
        for (const sink of self.sources.sinks?.() ?? []) {
          const stats = sink.stats();
          for (const [field, outcome] of SINK_OUTCOMES)
            self.incrementTo(
              this,
              { sink: sink.name, outcome },
              stats[field],
              `sink\u0000${sink.name}\u0000${outcome}`,
            );
        }
      },
    });
    new Gauge({
      name: 'kubediff_sink_queue_depth',
      help: 'Events queued or in flight in each sink.',
      labelNames: ['sink'],
      registers,
      collect() {
        this.reset();
        for (const sink of self.sources.sinks?.() ?? []) this.set({ sink: sink.name }, sink.stats().pending);
      },
    });
    new Gauge({
      name: 'kubediff_dead_letter_bytes',
      help: 'Bytes in each dead-letter file and its rotated files (capped at --dead-letter-max-files × --dead-letter-max-size).',
      labelNames: ['file'],
      registers,
      collect() {
        this.reset();
        for (const file of self.sources.deadLetterFiles?.() ?? [])
          this.set({ file: file.path }, file.stats().bytes);
      },
    });
    new Counter({
      name: 'kubediff_dead_letter_dropped_total',
      help: 'Dead letters deleted with the oldest rotated file when a dead-letter file reached its cap.',
      labelNames: ['file'],
      registers,
      collect() {
        for (const file of self.sources.deadLetterFiles?.() ?? []) {
          self.incrementTo(
            this,
            { file: file.path },
            file.stats().droppedRecords,
            `dead-letter\u0000${file.path}`,
          );
        }
      },
    });
    this.sinkRequests = new Histogram({
      name: 'kubediff_sink_request_duration_seconds',
      help: 'HTTP requests of the Slack and webhook sinks, by outcome (ok, error).',
      labelNames: ['sink', 'outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.sinkRetries = new Counter({
      name: 'kubediff_sink_retries_total',
      help: 'Requests of the Slack and webhook sinks retried after a failure.',
      labelNames: ['sink'],
      registers,
    });

    new Counter({
      name: 'kubediff_event_failures_total',
      help: 'Changes whose processing failed at one stage (normalize, diff, filter, sink, recorder, handler); the watch went on. The log names the first object of each kind of failure.',
      labelNames: ['stage'],
      registers,
      collect() {
        const failures = self.sources.failures;
        for (const stage of FAILURE_STAGES) {
          self.incrementTo(this, { stage }, failures?.count(stage) ?? 0, `failures\u0000${stage}`);
        }
      },
    });
    new Gauge({
      name: 'kubediff_state_recording',
      help: '--state: 1 while this process records the cluster (in PostgreSQL under --leader-elect, the leader once it holds the claim), else 0.',
      registers,
      collect() {
        this.set(self.sources.state?.recording ? 1 : 0);
      },
    });
    new Gauge({
      name: 'kubediff_state_backlog_bytes',
      help: 'Bytes of --state writes held back until every sink has finished with their events (bounded by KUBEDIFF_STATE_MAX_BACKLOG).',
      registers,
      collect() {
        this.set(self.sources.state?.backlogBytes ?? 0);
      },
    });
    new Counter({
      name: 'kubediff_state_unconfirmed_writes_total',
      help: '--state writes committed before every sink had finished with their events, because the backlog was at its bound (a slow or failing sink).',
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.state?.unconfirmedWrites ?? 0, 'state-unconfirmed');
      },
    });
    new Counter({
      name: 'kubediff_state_dropped_writes_total',
      help: '--state writes not recorded because the store (a PostgreSQL database down or slow) could not take them before the backlog reached its bound.',
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.state?.droppedWrites ?? 0, 'state-dropped');
      },
    });
    new Gauge({
      name: 'kubediff_standby_buffer_events',
      help: 'Events a standby (--leader-elect) holds back until it leads or the leader passes them.',
      registers,
      collect() {
        this.set(self.sources.standby?.buffered ?? 0);
      },
    });
    new Gauge({
      name: 'kubediff_standby_buffer_bytes',
      help: 'Bytes of the events a standby holds back (bounded by KUBEDIFF_STANDBY_MAX_BUFFER).',
      registers,
      collect() {
        this.set(self.sources.standby?.bufferedBytes ?? 0);
      },
    });
    new Counter({
      name: 'kubediff_standby_dropped_events_total',
      help: 'Events a standby dropped (the oldest) because its buffer was full: the leader wrote no checkpoint.',
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.standby?.droppedEvents ?? 0, 'standby-dropped');
      },
    });

    new Counter({
      name: 'kubediff_owners_forgotten_deleted_total',
      help: 'Deleted objects whose controller was forgotten (the oldest, beyond the 10,000 most recent): a dependent deleted later names the nearest owner still known.',
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.owners?.forgottenDeleted ?? 0, 'owners-forgotten');
      },
    });
    new Counter({
      name: 'kubediff_stories_total',
      help: 'Stories told by each sink with stories on (README, "Stories").',
      labelNames: ['sink'],
      registers,
      collect() {
        for (const sink of self.sources.sinks?.() ?? []) {
          const stories = sink.storyStats?.();
          if (stories)
            self.incrementTo(this, { sink: sink.name }, stories.stories, `stories\u0000${sink.name}`);
        }
      },
    });
    new Counter({
      name: 'kubediff_stories_closed_early_total',
      help: 'Stories told before their owner went quiet: at their maximum length, or because the open stories reached their bound (buffer).',
      labelNames: ['sink', 'reason'],
      registers,
      collect() {
        for (const sink of self.sources.sinks?.() ?? []) {
          const stories = sink.storyStats?.();
          if (!stories) continue;
          for (const [reason, count] of [
            ['max-length', stories.closedAtMaxLength],
            ['buffer', stories.closedAtBufferLimit],
          ] as const)
            self.incrementTo(
              this,
              { sink: sink.name, reason },
              count,
              `stories-early\u0000${sink.name}\u0000${reason}`,
            );
        }
      },
    });
    new Gauge({
      name: 'kubediff_stories_open_events',
      help: 'Events held by the open stories of each sink (bounded by stories.maxOpenEvents).',
      labelNames: ['sink'],
      registers,
      collect() {
        this.reset();
        for (const sink of self.sources.sinks?.() ?? []) {
          const stories = sink.storyStats?.();
          if (stories) this.set({ sink: sink.name }, stories.openEvents);
        }
      },
    });

    new Gauge({
      name: 'kubediff_leader',
      help: '1 while this replica delivers events (the leader, or leader election off); 0 on standby.',
      registers,
      collect() {
        this.set(self.sources.isLeader?.() === false ? 0 : 1);
      },
    });
    new Gauge({
      name: 'kubediff_ready',
      help: '1 when /readyz answers ready.',
      registers,
      collect() {
        this.set(self.sources.isReady?.() ? 1 : 0);
      },
    });

    new Gauge({
      name: 'kubediff_api_connections',
      help: 'Connections open to the API server, by protocol (h2: one carries every request; http/1.1: one per watch).',
      labelNames: ['protocol'],
      registers,
      collect() {
        this.reset();
        const stats = self.sources.connections?.();
        if (stats) this.set({ protocol: stats.protocol }, stats.open);
      },
    });
    new Counter({
      name: 'kubediff_api_connections_opened_total',
      help: 'Connections opened to the API server since the start.',
      registers,
      collect() {
        this.reset();
        this.inc(self.sources.connections?.().opened ?? 0);
      },
    });
    new Counter({
      name: 'kubediff_api_connections_lost_total',
      help: 'HTTP/2 connections given up, by reason: reset, ping_timeout (no answer to a PING), closed by the server, goaway (replaced gracefully).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        const lost = self.sources.connections?.().lost;
        if (!lost) return;
        for (const [reason, count] of Object.entries(lost))
          this.inc({ reason: reason.replace('-', '_') }, count);
      },
    });
    new Gauge({
      name: 'kubediff_api_requests_waiting',
      help: 'Requests waiting for a connection because every one allowed (KUBEDIFF_MAX_CONNECTIONS) is busy.',
      registers,
      collect() {
        this.set(self.sources.connections?.().waiting ?? 0);
      },
    });

    this.registerAuditMetrics(registers);

    this.stopObserving = observeDeliveries({
      request: (sink, seconds, outcome) => this.sinkRequests.observe({ sink, outcome }, seconds),
      retry: (sink) => this.sinkRetries.inc({ sink }),
    });
  }

  /** The audit webhook and the join (docs/audit.md); zero without --audit-listen. */
  private registerAuditMetrics(registers: Registry[]): void {
    const self = this;
    const join = () => self.sources.audit?.join();
    new Counter({
      name: 'kubediff_audit_requests_total',
      help: 'Requests to the audit webhook, by outcome: accepted, unauthorized (401), forbidden (403), bad_request, too_large, busy, not_allowed.',
      labelNames: ['outcome'],
      registers,
      collect() {
        const requests = self.sources.audit?.requests();
        if (!requests) return;
        for (const outcome of AUDIT_REQUEST_OUTCOMES) {
          self.incrementTo(this, { outcome }, requests.get(outcome) ?? 0, `audit-requests\u0000${outcome}`);
        }
      },
    });
    new Counter({
      name: 'kubediff_audit_events_joined_total',
      help: 'Changes that got their audit record (by.user), by match: exact (uid and resourceVersion) or nearest (name and time).',
      labelNames: ['match'],
      registers,
      collect() {
        const stats = join();
        if (!stats) return;
        self.incrementTo(this, { match: 'exact' }, stats.joinedExact, 'audit-exact');
        self.incrementTo(this, { match: 'nearest' }, stats.joinedNearest, 'audit-nearest');
      },
    });
    new Counter({
      name: 'kubediff_audit_events_unmatched_total',
      help: 'Changes that waited --audit-wait for their audit record and went on without user.',
      registers,
      collect() {
        self.incrementTo(this, {}, join()?.unmatched ?? 0, 'audit-unmatched');
      },
    });
    new Counter({
      name: 'kubediff_audit_pending_released_total',
      help: 'Changes sent on before --audit-wait because audit.maxPending changes were waiting.',
      registers,
      collect() {
        self.incrementTo(this, {}, join()?.releasedAtLimit ?? 0, 'audit-released');
      },
    });
    new Gauge({
      name: 'kubediff_audit_pending_events',
      help: 'Changes waiting for their audit record now (bounded by audit.maxPending).',
      registers,
      collect() {
        this.set(join()?.pending ?? 0);
      },
    });
    new Gauge({
      name: 'kubediff_audit_records',
      help: 'Audit records kept for a change still to come (bounded by audit.maxRecords).',
      registers,
      collect() {
        this.set(join()?.records ?? 0);
      },
    });
    new Counter({
      name: 'kubediff_audit_records_dropped_total',
      help: 'Unmatched audit records dropped (the oldest) because audit.maxRecords were kept.',
      registers,
      collect() {
        self.incrementTo(this, {}, join()?.recordsDropped ?? 0, 'audit-dropped');
      },
    });
  }

  /** Brings `counter` (at `labels`) up to `total`, a cumulative count kept elsewhere; `key` remembers it. */
  private incrementTo<L extends string>(
    counter: Counter<L>,
    labels: Partial<Record<L, string>>,
    total: number,
    key: string,
  ): void {
    const delta = total - (this.sourceTotals.get(key) ?? 0);
    counter.inc(labels, Math.max(0, delta));
    this.sourceTotals.set(key, Math.max(total, this.sourceTotals.get(key) ?? 0));
  }

  /** Where the scrape-time values come from (set once the watch is wired). */
  /** The UI's metrics, registered when a UI is served beside the watch (README, "Metrics"). */
  observeUi(ui: ObservedUi): void {
    const registers = [this.registry];
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

  setSources(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** An event that leaves the event builder (delivered, or buffered on a standby). */
  observeEvent(event: ChangeEvent): void {
    const resource = qualifiedResource(event);
    this.events.inc({ type: event.type, resource });
    this.lastEventAt.set(resource, this.now());
  }

  /** InformerHandler.onState. */
  observeState(informer: Informer, state: ReflectorState): void {
    const resource = qualifiedName(informer.type);
    let seen = this.history.get(informer);
    if (!seen) {
      seen = { listed: false, watched: false };
      this.history.set(informer, seen);
    }
    if (state.phase === 'listing') {
      if (seen.listed) this.relists.inc({ resource });
      seen.listed = true;
    } else if (state.phase === 'watching') {
      if (seen.watched) this.watchRestarts.inc({ resource });
      seen.watched = true;
    } else if (state.phase === 'failing') {
      this.watchFailures.inc({ resource, reason: state.error.kind });
    }
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  close(): void {
    this.stopObserving();
    this.registry.clear();
  }
}
