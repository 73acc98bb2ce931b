// src/service/metrics.ts and its providers per area (src/service/metrics/): what /metrics says, from
// informer states, events, sink counters and the observer the sinks report their requests to.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { AdmissionSource } from '../../../src/events/admission-match.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import type { Handover } from '../../../src/events/pipeline.ts';
import { WhoJoin } from '../../../src/events/who-join.ts';
import type { Informer } from '../../../src/informer/informer.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import { KubediffMetrics } from '../../../src/service/metrics.ts';
import { registerWhoJoinMetrics } from '../../../src/service/who-metrics.ts';
import { TroubleReport } from '../../../src/sinks/core/delivery.ts';
import type { Sink, SinkStats } from '../../../src/sinks/core/sink.ts';
import { emptyStats } from '../../../src/sinks/core/sink.ts';
import { monotonicMs } from '../../../src/util/timestamp.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { parseMetrics } from '../../helpers/metrics.ts';

async function values(metrics: KubediffMetrics): Promise<Map<string, number>> {
  return parseMetrics((await metrics.render()).body);
}

const informer = (group: string, resource: string, extra: Partial<Informer> = {}) =>
  ({
    type: { group, version: 'v1', resource },
    hasSynced: true,
    failure: undefined,
    objectCount: 3,
    ...extra,
  }) as Informer;

test('events by cluster, type and resource; seconds since the last one', async () => {
  let now = 1_000_000;
  const metrics = new KubediffMetrics({ version: '1.2.3', defaultMetrics: false, now: () => now });
  try {
    const event = {
      type: 'UPDATED',
      cluster: 'eu',
      object: { apiVersion: 'apps/v1', resource: 'deployments' },
    } as ChangeEvent;
    metrics.observeEvent(event);
    metrics.observeEvent({ ...event, type: 'ADDED' });
    metrics.observeEvent({ ...event, cluster: 'us' });
    metrics.observeEvent({
      type: 'DELETED',
      cluster: 'eu',
      object: { apiVersion: 'v1', resource: 'pods' },
    } as ChangeEvent);
    now += 2_500;
    const scraped = await values(metrics);
    assert.equal(
      scraped.get('kubediff_events_total{cluster="eu",type="UPDATED",resource="deployments.apps"}'),
      1,
    );
    assert.equal(
      scraped.get('kubediff_events_total{cluster="eu",type="ADDED",resource="deployments.apps"}'),
      1,
    );
    assert.equal(
      scraped.get('kubediff_events_total{cluster="us",type="UPDATED",resource="deployments.apps"}'),
      1,
    );
    assert.equal(scraped.get('kubediff_events_total{cluster="eu",type="DELETED",resource="pods"}'), 1);
    assert.equal(
      scraped.get('kubediff_events_total{cluster="us",type="DELETED",resource="pods"}'),
      undefined,
    );
    assert.equal(scraped.get('kubediff_seconds_since_last_event{cluster="eu",resource="pods"}'), 2.5);
    assert.equal(scraped.get(`kubediff_build_info{version="1.2.3",node="${process.versions.node}"}`), 1);
  } finally {
    metrics.close();
  }
});

test('per cluster: watch restarts and relists count from the second; failures by reason; informers, objects, connections, state, synced', async () => {
  const metrics = new KubediffMetrics({ version: 'x', defaultMetrics: false });
  try {
    const pods = informer('', 'pods');
    const failing = {
      phase: 'failing' as const,
      error: new KubeError('network', 'reset', { path: '/api/v1/pods' }),
      retryInMs: 1,
      slow: false,
    };
    for (const state of [
      { phase: 'listing' as const },
      { phase: 'watching' as const },
      failing,
      { phase: 'watching' as const },
      { phase: 'listing' as const },
      { phase: 'watching' as const },
    ]) {
      metrics.observeState(pods, state, 'eu');
    }
    const usPods = informer('', 'pods', { objectCount: 5 });
    metrics.observeState(usPods, { phase: 'listing' }, 'us');
    const connections = (open: number) => ({
      protocol: 'h2' as const,
      open,
      opened: open + 1,
      waiting: 0,
      lost: { reset: 1, 'ping-timeout': 0, closed: 0, goaway: 0 },
    });
    metrics.setSources({
      clusters: () => [
        {
          name: 'eu',
          informers: [pods, informer('apps', 'deployments', { hasSynced: false })],
          connections: connections(1),
          state: { backlogBytes: 10, unconfirmedWrites: 2, droppedWrites: 0, recording: true },
          synced: true,
        },
        { name: 'us', informers: [usPods], connections: undefined, state: undefined, synced: false },
      ],
    });
    const scraped = await values(metrics);
    assert.equal(scraped.get('kubediff_watch_restarts_total{cluster="eu",resource="pods"}'), 2);
    assert.equal(scraped.get('kubediff_relists_total{cluster="eu",resource="pods"}'), 1);
    assert.equal(scraped.get('kubediff_relists_total{cluster="us",resource="pods"}'), undefined);
    assert.equal(
      scraped.get('kubediff_watch_failures_total{cluster="eu",resource="pods",reason="network"}'),
      1,
    );
    assert.equal(scraped.get('kubediff_informers_running{cluster="eu"}'), 2);
    assert.equal(scraped.get('kubediff_informers_running{cluster="us"}'), 1);
    assert.equal(scraped.get('kubediff_informers{cluster="eu",state="synced"}'), 1);
    assert.equal(scraped.get('kubediff_informers{cluster="eu",state="syncing"}'), 1);
    assert.equal(scraped.get('kubediff_objects{cluster="eu",resource="pods"}'), 3);
    assert.equal(scraped.get('kubediff_objects{cluster="us",resource="pods"}'), 5);
    assert.equal(scraped.get('kubediff_cluster_synced{cluster="eu"}'), 1);
    assert.equal(scraped.get('kubediff_cluster_synced{cluster="us"}'), 0);
    assert.equal(scraped.get('kubediff_api_connections{cluster="eu",protocol="h2"}'), 1);
    assert.equal(scraped.get('kubediff_api_connections_opened_total{cluster="eu"}'), 2);
    assert.equal(scraped.get('kubediff_api_connections_lost_total{cluster="eu",reason="reset"}'), 1);
    assert.equal(scraped.get('kubediff_api_connections_opened_total{cluster="us"}'), undefined);
    assert.equal(scraped.get('kubediff_state_recording{cluster="eu"}'), 1);
    assert.equal(scraped.get('kubediff_state_recording{cluster="us"}'), 0);
    assert.equal(scraped.get('kubediff_state_backlog_bytes{cluster="eu"}'), 10);
    assert.equal(scraped.get('kubediff_state_unconfirmed_writes_total{cluster="eu"}'), 2);
    assert.equal(scraped.get('kubediff_state_unconfirmed_writes_total{cluster="us"}'), 0);
  } finally {
    metrics.close();
  }
});

test('sink counters follow stats(), as counters that never go down', async () => {
  const metrics = new KubediffMetrics({ version: 'x', defaultMetrics: false });
  try {
    let stats: SinkStats = { ...emptyStats(), accepted: 5, delivered: 3, pending: 2 };
    const sink = { name: 'webhook https://example.com/…', stats: () => stats } as unknown as Sink;
    metrics.setSources({ sinks: () => [sink], isLeader: () => false, isReady: () => true });
    let scraped = await values(metrics);
    const label = 'sink="webhook https://example.com/…"';
    assert.equal(scraped.get(`kubediff_sink_events_total{${label},outcome="delivered"}`), 3);
    assert.equal(scraped.get(`kubediff_sink_events_total{${label},outcome="lost"}`), 0);
    assert.equal(scraped.get(`kubediff_sink_queue_depth{${label}}`), 2);
    assert.equal(scraped.get('kubediff_leader'), 0);
    assert.equal(scraped.get('kubediff_ready'), 1);
    stats = { ...stats, delivered: 4, lost: 1, pending: 0 };
    scraped = await values(metrics);
    assert.equal(scraped.get(`kubediff_sink_events_total{${label},outcome="delivered"}`), 4);
    assert.equal(scraped.get(`kubediff_sink_events_total{${label},outcome="lost"}`), 1);
    assert.equal(scraped.get(`kubediff_sink_queue_depth{${label}}`), 0);
  } finally {
    metrics.close();
  }
});

test('the audit webhook and the join: requests by outcome, joins by match, waits and bounds', async () => {
  const metrics = new KubediffMetrics({ version: '1.2.3', defaultMetrics: false });
  try {
    const requests = new Map([
      ['accepted', 5],
      ['unauthorized', 2],
    ] as const);
    const join = {
      pending: 3,
      records: 7,
      joinedExact: 10,
      joinedNearest: 1,
      unmatched: 4,
      releasedAtLimit: 0,
      recordsDropped: 2,
      recordsDuplicate: 1,
      held: 3,
    };
    metrics.setSources({ audit: { requests: () => requests, join: () => join, records: () => join } });
    const scraped = await values(metrics);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="accepted"}'), 5);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="unauthorized"}'), 2);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="forbidden"}'), 0);
    assert.equal(scraped.get('kubediff_audit_events_joined_total{match="exact"}'), 10);
    assert.equal(scraped.get('kubediff_audit_events_joined_total{match="nearest"}'), 1);
    assert.equal(scraped.get('kubediff_audit_events_unmatched_total'), 4);
    assert.equal(scraped.get('kubediff_audit_records'), 7);
    assert.equal(scraped.get('kubediff_audit_records_dropped_total'), 2);
    assert.equal(scraped.get('kubediff_audit_records_duplicate_total'), 1);
    // The join's own metrics are the join's, whatever its sources (below).
    assert.equal(scraped.get('kubediff_audit_pending_events'), undefined);
  } finally {
    metrics.close();
  }
});

test('the join with the admission webhook alone: changes waiting and those released at the bound are counted', async () => {
  const warnings: string[] = [];
  const log = { info: () => {}, debug: () => {}, warn: (message: string) => warnings.push(message) };
  const admission = new AdmissionSource({ maxRecords: 10, retainMs: 60_000, log });
  const join = new WhoJoin({ waitMs: 60_000, maxPending: 2, log }, [admission]);
  const enter = join.connect(() => {});
  for (const [name, uid] of [
    ['web', 'u1'],
    ['api', 'u2'],
    ['db', 'u3'],
  ] as const) {
    enter({
      change: { kind: 'updated', object: { name } },
      event: sampleEvent({ id: `${uid}:5`, time: new Date().toISOString(), object: { name, uid } }),
    } as unknown as Handover);
  }
  const registry = new Registry();
  registerWhoJoinMetrics(registry, () => join.stats());
  const scraped = parseMetrics(await registry.metrics());
  assert.equal(scraped.get('kubediff_who_pending_events'), 2);
  assert.equal(scraped.get('kubediff_who_pending_released_total'), 1);
  assert.match(warnings.join('\n'), /Counted in kubediff_who_pending_released_total; logged once\./);
  join.close();
});

test('HTTP requests and retries reach the metrics through the observer each sink is given, not a global one', async () => {
  const first = new KubediffMetrics({ version: 'x', defaultMetrics: false });
  const second = new KubediffMetrics({ version: 'x', defaultMetrics: false });
  try {
    const quiet = { info: () => {}, warn: () => {}, debug: () => {} };
    const one = new TroubleReport('webhook one', quiet, first.deliveries);
    const other = new TroubleReport('webhook other', quiet, second.deliveries);
    one.requestDone(monotonicMs(), true);
    one.retrying('503 Service Unavailable', 1_000, 1);
    other.requestDone(monotonicMs(), false);
    const [a, b] = [await values(first), await values(second)];
    assert.equal(a.get('kubediff_sink_request_duration_seconds_count{sink="webhook one",outcome="ok"}'), 1);
    assert.equal(a.get('kubediff_sink_retries_total{sink="webhook one"}'), 1);
    assert.equal(
      a.get('kubediff_sink_request_duration_seconds_count{sink="webhook other",outcome="error"}'),
      undefined,
    );
    assert.equal(
      b.get('kubediff_sink_request_duration_seconds_count{sink="webhook other",outcome="error"}'),
      1,
    );
    assert.equal(b.get('kubediff_sink_retries_total{sink="webhook one"}'), undefined);
  } finally {
    first.close();
    second.close();
  }
});
