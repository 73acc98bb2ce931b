// src/service/health-server.ts: what /readyz answers, and --listen addresses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Informer } from '../../../src/informer/informer.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import { Readiness, readinessReasonOf } from '../../../src/service/health-server.ts';
import { parseListenAddress } from '../../../src/util/http-server.ts';

const informer = (resource: string) =>
  ({ type: { group: '', version: 'v1', resource, kind: resource } }) as unknown as Informer;
const failing = (kind: 'network' | 'forbidden', slow = false) => ({
  phase: 'failing' as const,
  error: new KubeError(kind, `${kind} trouble at https://10.96.0.1:443`, { path: '/x' }),
  retryInMs: 1000,
  slow,
});

test('not ready until synced; ready after', () => {
  const readiness = new Readiness({ thresholdMs: 60_000 });
  assert.deepEqual(readiness.report(), { ready: false, reason: 'initial sync in progress' });
  readiness.markSynced();
  assert.deepEqual(readiness.report(), { ready: true, reason: 'ok' });
});

test('several clusters: not ready while one is not synced, naming its context and why, never its address', () => {
  const readiness = new Readiness({ thresholdMs: 60_000 });
  readiness.markSynced();
  readiness.markClusterDown('context "eu"', 'initial sync in progress');
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

test('a watch failing for longer than the threshold makes it unready, until it watches again', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 60_000, now: () => now });
  readiness.markSynced();
  const pods = informer('pods');
  readiness.observeState(pods, failing('network'));
  now = 30_000;
  readiness.observeState(pods, { phase: 'listing' });
  readiness.observeState(pods, failing('network'));
  assert.equal(readiness.report().ready, true, 'within the threshold');
  now = 60_001;
  const report = readiness.report();
  assert.equal(report.ready, false, 'the episode started at 0');
  // The kind of failure, not the error's message: that names internal addresses.
  assert.equal(
    report.reason,
    '1 watch failing for more than 60s (pods: cannot reach the API server; details in the log)',
  );
  readiness.observeState(pods, { phase: 'watching' });
  assert.equal(readiness.report().ready, true);
});

test('forbidden and not-found resources do not make it unready', () => {
  let now = 0;
  const readiness = new Readiness({ thresholdMs: 1_000, now: () => now });
  readiness.markSynced();
  readiness.observeState(informer('secrets'), failing('forbidden', true));
  now = 10_000;
  assert.equal(readiness.report().ready, true);
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

test('--listen addresses', () => {
  assert.deepEqual(parseListenAddress(':8080'), { host: undefined, port: 8080 });
  assert.deepEqual(parseListenAddress('8080'), { host: undefined, port: 8080 });
  assert.deepEqual(parseListenAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(parseListenAddress('[::1]:9090'), { host: '::1', port: 9090 });
  assert.deepEqual(parseListenAddress('localhost:80'), { host: 'localhost', port: 80 });
  for (const bad of ['', 'http://x:80', ':99999', 'host', '::1:80', ':-1', ':80x']) {
    assert.throws(() => parseListenAddress(bad), /invalid --listen/, bad);
  }
});
