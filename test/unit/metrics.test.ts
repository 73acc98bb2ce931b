// src/service/metrics.ts: what /metrics says, from informer states, events and sink counters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent } from '../../src/events/event.ts';
import type { Informer } from '../../src/informer/informer.ts';
import { KubeError } from '../../src/kube/errors.ts';
import { KubediffMetrics } from '../../src/service/metrics.ts';
import type { Sink, SinkStats } from '../../src/sinks/sink.ts';
import { emptyStats } from '../../src/sinks/sink.ts';
import { parseMetrics } from '../helpers/metrics.ts';

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

test('events by type and resource; seconds since the last one', async () => {
  let now = 1_000_000;
  const metrics = new KubediffMetrics({ version: '1.2.3', defaultMetrics: false, now: () => now });
  try {
    const event = {
      type: 'UPDATED',
      object: { apiVersion: 'apps/v1', resource: 'deployments' },
    } as ChangeEvent;
    metrics.observeEvent(event);
    metrics.observeEvent({ ...event, type: 'ADDED' });
    metrics.observeEvent({ type: 'DELETED', object: { apiVersion: 'v1', resource: 'pods' } } as ChangeEvent);
    now += 2_500;
    const scraped = await values(metrics);
    assert.equal(scraped.get('kubediff_events_total{type="UPDATED",resource="deployments.apps"}'), 1);
    assert.equal(scraped.get('kubediff_events_total{type="ADDED",resource="deployments.apps"}'), 1);
    assert.equal(scraped.get('kubediff_events_total{type="DELETED",resource="pods"}'), 1);
    assert.equal(scraped.get('kubediff_seconds_since_last_event{resource="pods"}'), 2.5);
    assert.equal(scraped.get(`kubediff_build_info{version="1.2.3",node="${process.versions.node}"}`), 1);
  } finally {
    metrics.close();
  }
});

test('watch restarts and relists count from the second; failures by reason', async () => {
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
      metrics.observeState(pods, state);
    }
    metrics.setSources({ informers: () => [pods, informer('apps', 'deployments', { hasSynced: false })] });
    const scraped = await values(metrics);
    assert.equal(scraped.get('kubediff_watch_restarts_total{resource="pods"}'), 2);
    assert.equal(scraped.get('kubediff_relists_total{resource="pods"}'), 1);
    assert.equal(scraped.get('kubediff_watch_failures_total{resource="pods",reason="network"}'), 1);
    assert.equal(scraped.get('kubediff_informers_running'), 2);
    assert.equal(scraped.get('kubediff_informers{state="synced"}'), 1);
    assert.equal(scraped.get('kubediff_informers{state="syncing"}'), 1);
    assert.equal(scraped.get('kubediff_objects{resource="pods"}'), 3);
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
    };
    metrics.setSources({ audit: { requests: () => requests, join: () => join } });
    const scraped = await values(metrics);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="accepted"}'), 5);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="unauthorized"}'), 2);
    assert.equal(scraped.get('kubediff_audit_requests_total{outcome="forbidden"}'), 0);
    assert.equal(scraped.get('kubediff_audit_events_joined_total{match="exact"}'), 10);
    assert.equal(scraped.get('kubediff_audit_events_joined_total{match="nearest"}'), 1);
    assert.equal(scraped.get('kubediff_audit_events_unmatched_total'), 4);
    assert.equal(scraped.get('kubediff_audit_pending_events'), 3);
    assert.equal(scraped.get('kubediff_audit_records'), 7);
    assert.equal(scraped.get('kubediff_audit_records_dropped_total'), 2);
    assert.equal(scraped.get('kubediff_audit_pending_released_total'), 0);
  } finally {
    metrics.close();
  }
});
