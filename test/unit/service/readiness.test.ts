// src/service/readiness.ts: what /readyz and /startupz answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Informer } from '../../../src/informer/informer.ts';
import { KubeError, type KubeFailureKind } from '../../../src/kube/errors.ts';
import { Readiness, readinessReasonOf } from '../../../src/service/readiness.ts';

const informer = (resource: string, group = '') =>
  ({ type: { group, version: 'v1', resource, kind: resource } }) as unknown as Informer;
const failing = (kind: KubeFailureKind, slow = false) => ({
  phase: 'failing' as const,
  error: new KubeError(kind, `${kind} trouble at https://10.96.0.1:443`, { path: '/x' }),
  retryInMs: 1000,
  slow,
});
const watching = { phase: 'watching' as const };

test('not ready until synced; ready after', () => {
  const readiness = new Readiness({ thresholdMs: 60_000 });
  assert.deepEqual(readiness.report(), { ready: false, reason: 'initial sync in progress' });
  assert.equal(readiness.started, false);
  readiness.markSynced();
  assert.deepEqual(readiness.report(), { ready: true, reason: 'ok' });
  assert.equal(readiness.started, true);
});

test('several clusters: not ready while one is not synced, naming its context and why, never its address', () => {
  const readiness = new Readiness({ thresholdMs: 60_000 });
  readiness.markSynced();
  readiness.markClusterDown('context "eu"', undefined);
  readiness.markClusterDown('cluster "us"', readinessReasonOf(failing('network').error));
  const report = readiness.report();
  assert.deepEqual(report, {
    ready: false,
    reason:
      'not synced yet: context "eu": initial sync in progress; cluster "us": cannot reach the API server',
  });
  readiness.clusterSynced('context "eu"');
  readiness.clusterSynced('cluster "us"');
  assert.deepEqual(readiness.report(), { ready: true, reason: 'ok' });
  assert.equal(readinessReasonOf(new Error('at https://10.96.0.1')), 'cannot start (details in the log)');
});

test('started once each cluster has synced or said why it cannot start, not when it syncs later', () => {
  const readiness = new Readiness({ thresholdMs: 60_000 });
  readiness.markClusterDown('context "eu"', undefined);
  readiness.markClusterDown('context "us"', undefined);
  readiness.markSynced();
  assert.equal(readiness.started, false, 'both in their first attempt');
  readiness.clusterSynced('context "eu"');
  assert.equal(readiness.started, false, 'us still in its first attempt');
  readiness.markClusterDown('context "us"', 'cannot reach the API server');
  assert.equal(readiness.started, true, 'us is retried in the background: a restart would not help it');
  assert.equal(readiness.report().ready, false, 'but not ready until it syncs');
});

test('the API server itself unreadable: every core watch failing for longer than the threshold', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 60_000, now: () => now });
  readiness.markSynced();
  const pods = informer('pods');
  const configmaps = informer('configmaps');
  const deployments = informer('deployments', 'apps');
  for (const each of [pods, configmaps, deployments]) readiness.observeState(each, watching);
  readiness.observeState(pods, failing('network'));
  readiness.observeState(configmaps, failing('network'));
  now = 30_000;
  readiness.observeState(pods, { phase: 'listing' });
  readiness.observeState(pods, failing('network'));
  assert.equal(readiness.report().ready, true, 'within the threshold');
  now = 60_001;
  // The kind of failure, not the error's message: that names internal addresses.
  assert.deepEqual(readiness.report(), {
    ready: false,
    reason: '2 watches failing for more than 60s (pods: cannot reach the API server; details in the log)',
  });
  readiness.observeState(pods, watching);
  const report = readiness.report();
  assert.equal(report.ready, true, 'one core watch works: the API server can be read');
  assert.equal(
    report.degraded,
    '1 watch failing for more than 60s (configmaps: cannot reach the API server; details in the log)',
  );
});

test('a custom resource or an aggregated API failing is a condition, not unreadiness', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  const pods = informer('pods');
  const widgets = informer('widgets', 'example.com');
  const metrics = informer('pods', 'metrics.k8s.io');
  readiness.observeState(pods, watching);
  readiness.observeState(widgets, failing('server'));
  readiness.observeState(metrics, failing('server'));
  now = 10_000;
  assert.deepEqual(readiness.report(), {
    ready: true,
    reason: 'ok',
    degraded:
      '2 watches failing for more than 1s (widgets.example.com: the API server fails (5xx); details in the log)',
  });
  readiness.observeState(widgets, watching);
  readiness.observeState(metrics, { phase: 'stopped' });
  assert.deepEqual(readiness.report(), { ready: true, reason: 'ok' });
});

test('with no core type watched (-r), every watch failing makes it unready', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  const deployments = informer('deployments', 'apps');
  const widgets = informer('widgets', 'example.com');
  readiness.observeState(deployments, failing('unauthorized'));
  readiness.observeState(widgets, failing('unauthorized'));
  now = 5_000;
  assert.equal(readiness.report().ready, false);
  readiness.observeState(widgets, watching);
  assert.equal(readiness.report().ready, true);
});

test('several clusters: one whose API server cannot be read makes it unready; a failing watch of another does not', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  const euPods = informer('pods');
  const usPods = informer('pods');
  const usConfigmaps = informer('configmaps');
  readiness.observeState(euPods, failing('network'), 'eu');
  readiness.observeState(usPods, failing('server'), 'us');
  readiness.observeState(usConfigmaps, watching, 'us');
  now = 5_000;
  assert.equal(readiness.report().ready, false, 'eu cannot be read');
  readiness.observeState(euPods, watching, 'eu');
  assert.equal(readiness.report().ready, true, 'us can be read, its pods aside');
});

test('forbidden and not-found resources neither make it unready nor count as working', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  const secrets = informer('secrets');
  const pods = informer('pods');
  readiness.observeState(secrets, failing('forbidden', true));
  now = 10_000;
  assert.deepEqual(readiness.report(), { ready: true, reason: 'ok' });
  readiness.observeState(pods, failing('network'));
  now = 20_000;
  assert.equal(readiness.report().ready, false, 'the only core watch judged fails');
});

test('a stopped informer is not failing; stopping makes it unready', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  const pods = informer('pods');
  readiness.observeState(pods, failing('network'));
  readiness.observeState(pods, { phase: 'stopped' });
  now = 5_000;
  assert.equal(readiness.report().ready, true);
  readiness.markStopping();
  assert.deepEqual(readiness.report(), { ready: false, reason: 'shutting down' });
});
