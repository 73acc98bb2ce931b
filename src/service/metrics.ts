// Prometheus metrics (`--listen`, GET /metrics), with prom-client. Everything
// is observed from outside the data path: events as they leave the event
// builder, informer health through InformerHandler.onState, sink counters
// through Sink.stats() when scraped, HTTP request timings and retries through
// the sinks' delivery observer. Nothing here is on a hot path beyond a
// counter increment per event.
//
// Names follow Prometheus conventions (`_total` counters, base units). The
// `resource` label is the kubectl-style qualified name (`deployments.apps`,
// `pods`); `sink` is the sink's name as in the logs (URLs elided); `cluster`
// is the events' `cluster` (the context's name, or --cluster-name), on every
// series about one cluster, also when only one is watched: a dashboard keeps
// its shape when a second cluster is added.

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
import { LISTENER_CLOSE_REASONS, type ListenerCloseReason } from './listener-guard.ts';

/** What the metrics learn of the UI (`watch --ui`, src/ui/server.ts); the UI works the same without. */
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
  readonly listener: ObservedListener;
  observe(observer: UiObserver): void;
}

/** A listener's guard (src/service/listener-guard.ts): connections it closed, by reason. */
export interface ObservedListener {
  readonly listener: string;
  stats(): ReadonlyMap<ListenerCloseReason, number>;
}

/** --state of one cluster: the writes held back for the sinks. */
export interface StateMetricsSource {
  readonly backlogBytes: number;
  readonly unconfirmedWrites: number;
  readonly droppedWrites: number;
  /** Whether this process records the cluster now (false on a leader-elected standby, PostgreSQL). */
  readonly recording: boolean;
}

/** One watched cluster as the metrics read it on each scrape. */
export interface MetricsCluster {
  /** The `cluster` label: its events' `cluster`. */
  readonly name: string;
  /** Its informers running now. */
  readonly informers: readonly Informer[];
  /** Its connections to its API server (undefined before its client exists). */
  readonly connections: ConnectionStats | undefined;
  readonly state: StateMetricsSource | undefined;
  /** Its initial sync is over (it has been reporting since). */
  readonly synced: boolean;
}

export interface MetricsSources {
  /** Every watched cluster (read on each scrape). */
  clusters?: () => readonly MetricsCluster[];
  /** Changes that failed at one stage of processing (src/util/event-failures.ts). */
  failures?: EventFailures;
  /** --leader-elect: the events a standby holds back. */
  standby?: {
    readonly buffered: number;
    readonly bufferedBytes: number;
    readonly droppedEvents: number;
    readonly refusedFloors: number;
    readonly skippedEvents: number;
  };
  /** The sinks (read on each scrape). */
  sinks?: () => readonly Sink[];
  /** The dead-letter files (read on each scrape). */
  deadLetterFiles?: () => readonly DeadLetterFile[];
  /** 1 while this replica is the leader, or always when leader election is off. */
  isLeader?: () => boolean;
  isReady?: () => boolean;
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
  private readonly events: Counter<'cluster' | 'type' | 'resource'>;
  private readonly watchRestarts: Counter<'cluster' | 'resource'>;
  private readonly relists: Counter<'cluster' | 'resource'>;
  private readonly watchFailures: Counter<'cluster' | 'resource' | 'reason'>;
  private readonly sinkRequests: Histogram<'sink' | 'outcome'>;
  private readonly sinkRetries: Counter<'sink'>;
  /** When each (cluster, resource) last had an event, keyed by `${cluster}\u0000${resource}`. */
  private readonly lastEventAt = new Map<string, number>();
  /** Per informer: phases seen so far, to tell a first LIST/WATCH from a relist/restart. */
  private readonly history = new WeakMap<Informer, { listed: boolean; watched: boolean }>();
  /** Cumulative counts read from sources at the last scrape (see incrementTo). */
  private readonly sourceTotals = new Map<string, number>();
  private sources: MetricsSources = {};
  /** The listeners served (health, UI, audit webhook): their guards. */
  private readonly listeners: ObservedListener[] = [];
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
      help: 'Change events reported (before sink filters), by cluster, type and resource.',
      labelNames: ['cluster', 'type', 'resource'],
      registers,
    });
    const self = this;
    new Gauge({
      name: 'kubediff_seconds_since_last_event',
      help: 'Seconds since the last change event of each resource of each cluster (only resources that had one).',
      labelNames: ['cluster', 'resource'],
      registers,
      collect() {
        this.reset();
        const now = self.now();
        for (const [key, at] of self.lastEventAt) {
          const [cluster = '', resource = ''] = key.split('\u0000');
          this.set({ cluster, resource }, (now - at) / 1000);
        }
      },
    });
    this.watchRestarts = new Counter({
      name: 'kubediff_watch_restarts_total',
      help: 'Watches re-opened after the first one (server timeouts, dropped connections, errors), by cluster and resource.',
      labelNames: ['cluster', 'resource'],
      registers,
    });
    this.relists = new Counter({
      name: 'kubediff_relists_total',
      help: 'LISTs after the first one (after 410 Gone, 403/404 or a long failure), by cluster and resource.',
      labelNames: ['cluster', 'resource'],
      registers,
    });
    this.watchFailures = new Counter({
      name: 'kubediff_watch_failures_total',
      help: 'Failed LIST or WATCH attempts, by cluster, resource and kind of failure (network, forbidden, server, …).',
      labelNames: ['cluster', 'resource', 'reason'],
      registers,
    });
    new Gauge({
      name: 'kubediff_informers',
      help: 'Informers (one per resource type, or per type and namespace with -n), by cluster and state.',
      labelNames: ['cluster', 'state'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters()) {
          const counts = { synced: 0, syncing: 0, failing: 0 };
          for (const informer of cluster.informers) {
            if (informer.failure) counts.failing++;
            else if (informer.hasSynced) counts.synced++;
            else counts.syncing++;
          }
          for (const [state, value] of Object.entries(counts))
            this.set({ cluster: cluster.name, state }, value);
        }
      },
    });
    new Gauge({
      name: 'kubediff_informers_running',
      help: 'Informers running (listing, watching or retrying), by cluster.',
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters()) this.set({ cluster: cluster.name }, cluster.informers.length);
      },
    });
    new Gauge({
      name: 'kubediff_objects',
      help: 'Objects held in the informer caches, by cluster and resource.',
      labelNames: ['cluster', 'resource'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters()) {
          const totals = new Map<string, number>();
          for (const informer of cluster.informers) {
            const resource = qualifiedName(informer.type);
            totals.set(resource, (totals.get(resource) ?? 0) + informer.objectCount);
          }
          for (const [resource, value] of totals) this.set({ cluster: cluster.name, resource }, value);
        }
      },
    });
    new Gauge({
      name: 'kubediff_cluster_synced',
      help: '1 once the cluster finished its initial sync (it reports since), 0 while it syncs or cannot start.',
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters()) this.set({ cluster: cluster.name }, cluster.synced ? 1 : 0);
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
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters())
          this.set({ cluster: cluster.name }, cluster.state?.recording ? 1 : 0);
      },
    });
    new Gauge({
      name: 'kubediff_state_backlog_bytes',
      help: 'Bytes of --state writes held back until every sink has finished with their events (bounded by KUBEDIFF_STATE_MAX_BACKLOG).',
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusters())
          this.set({ cluster: cluster.name }, cluster.state?.backlogBytes ?? 0);
      },
    });
    new Counter({
      name: 'kubediff_state_unconfirmed_writes_total',
      help: '--state writes committed before every sink had finished with their events, because the backlog was at its bound (a slow or failing sink).',
      labelNames: ['cluster'],
      registers,
      collect() {
        for (const { name, state } of self.clusters()) {
          self.incrementTo(
            this,
            { cluster: name },
            state?.unconfirmedWrites ?? 0,
            `state-unconfirmed\u0000${name}`,
          );
        }
      },
    });
    new Counter({
      name: 'kubediff_state_dropped_writes_total',
      help: '--state writes not recorded because the store (a PostgreSQL database down or slow) could not take them before the backlog reached its bound.',
      labelNames: ['cluster'],
      registers,
      collect() {
        for (const { name, state } of self.clusters()) {
          self.incrementTo(this, { cluster: name }, state?.droppedWrites ?? 0, `state-dropped\u0000${name}`);
        }
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
      name: 'kubediff_checkpoint_refused_total',
      help: "Floors of a previous leader's checkpoint (the Lease annotation) refused at a takeover: above what the API server is at, or not confirmed by it.",
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.standby?.refusedFloors ?? 0, 'checkpoint-refused');
      },
    });
    new Counter({
      name: 'kubediff_checkpoint_skipped_events_total',
      help: "Events not delivered because the previous leader's checkpoint says it delivered them.",
      registers,
      collect() {
        self.incrementTo(this, {}, self.sources.standby?.skippedEvents ?? 0, 'checkpoint-skipped');
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
      help: 'Connections open to the API server, by cluster and protocol (h2: one carries every request; http/1.1: one per watch).',
      labelNames: ['cluster', 'protocol'],
      registers,
      collect() {
        this.reset();
        for (const { name, connections } of self.clusters()) {
          if (connections) this.set({ cluster: name, protocol: connections.protocol }, connections.open);
        }
      },
    });
    new Counter({
      name: 'kubediff_api_connections_opened_total',
      help: 'Connections opened to the API server since the start, by cluster.',
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const { name, connections } of self.clusters()) {
          if (connections) this.inc({ cluster: name }, connections.opened);
        }
      },
    });
    new Counter({
      name: 'kubediff_api_connections_lost_total',
      help: 'HTTP/2 connections given up, by cluster and reason: reset, ping_timeout (no answer to a PING), closed by the server, goaway (replaced gracefully).',
      labelNames: ['cluster', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const { name, connections } of self.clusters()) {
          if (!connections) continue;
          for (const [reason, count] of Object.entries(connections.lost))
            this.inc({ cluster: name, reason: reason.replace('-', '_') }, count);
        }
      },
    });
    new Gauge({
      name: 'kubediff_api_requests_waiting',
      help: 'Requests waiting for a connection because every one allowed (KUBEDIFF_MAX_CONNECTIONS) is busy, by cluster.',
      labelNames: ['cluster'],
      registers,
      collect() {
        this.reset();
        for (const { name, connections } of self.clusters()) {
          if (connections) this.set({ cluster: name }, connections.waiting);
        }
      },
    });

    this.registerAuditMetrics(registers);
    new Counter({
      name: 'kubediff_listener_connections_closed_total',
      help: 'Connections to a listener (health, ui, audit) closed by kubediff, by reason: error (a failed connection, contained), limit (at the connection cap), handshake_timeout (TLS).',
      labelNames: ['listener', 'reason'],
      registers,
      collect() {
        for (const guard of self.listeners) {
          const stats = guard.stats();
          for (const reason of LISTENER_CLOSE_REASONS) {
            const key = `listener\u0000${guard.listener}\u0000${reason}`;
            self.incrementTo(this, { listener: guard.listener, reason }, stats.get(reason) ?? 0, key);
          }
        }
      },
    });

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

  /** The clusters watched, as of this scrape. */
  private clusters(): readonly MetricsCluster[] {
    return this.sources.clusters?.() ?? [];
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

  /** A listener's closed connections, in kubediff_listener_connections_closed_total. */
  observeListener(listener: ObservedListener): void {
    this.listeners.push(listener);
  }

  /** Where the scrape-time values come from (set once the watch is wired). */
  /** The UI's metrics, registered when a UI is served beside the watch (docs/deploy.md, "Health and metrics"). */
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
      help: 'UI requests refused with 503 at a limit: queue (history queries or object answers waiting), streams (live streams open), time (an object answer took too long); stream_buffer: a live stream closed, its client having left 1 MiB unread.',
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
    this.observeListener(ui.listener);
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
    const cluster = event.cluster ?? '';
    this.events.inc({ cluster, type: event.type, resource });
    this.lastEventAt.set(`${cluster}\u0000${resource}`, this.now());
  }

  /** InformerHandler.onState. */
  observeState(informer: Informer, state: ReflectorState, cluster = ''): void {
    const resource = qualifiedName(informer.type);
    const labels = { cluster, resource };
    let seen = this.history.get(informer);
    if (!seen) {
      seen = { listed: false, watched: false };
      this.history.set(informer, seen);
    }
    if (state.phase === 'listing') {
      if (seen.listed) this.relists.inc(labels);
      seen.listed = true;
    } else if (state.phase === 'watching') {
      if (seen.watched) this.watchRestarts.inc(labels);
      seen.watched = true;
    } else if (state.phase === 'failing') {
      this.watchFailures.inc({ ...labels, reason: state.error.kind });
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
