// Memory stays under its documented bound while a receiver is down and changes keep coming, with the real
// CLI against the real API server, measured through kubediff's own accounting (/metrics) after every change:
// - --state with a webhook that refuses connections: the writes held back for the sinks
//   (KUBEDIFF_STATE_MAX_BACKLOG);
// - --leader-elect on standby behind a leader that writes no checkpoint: the events held back
//   (KUBEDIFF_STANDBY_MAX_BUFFER).
// At the bound: the documented behaviour, logged once, counted, and nothing lost silently.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, test } from 'node:test';
import { killAll, runKubediff, runKubediffToCompletion, watchArgs } from '../helpers/cli.ts';
import type { TestEvent } from '../helpers/events.ts';
import { adminClient, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { freePorts } from '../helpers/processes.ts';

const admin = adminClient();

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

/** A value of about `size` characters that differs for each `n`. */
const value = (n: number, size: number) => `${n}:`.padEnd(size, String.fromCharCode(97 + (n % 26)));

test('--state with a webhook that is down: the backlog stays under KUBEDIFF_STATE_MAX_BACKLOG, nothing is lost', async (t) => {
  const ns = await admin.createNamespace('bounded-state');
  t.after(() => admin.deleteNamespace(ns));
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-bounded-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const stateFile = path.join(dir, 'state.db');
  // A loopback port nothing listens on: connections to it are refused (a receiver that is down).
  const [port] = (await freePorts(1)) as [number];
  const bound = 512 * 1024;

  const kd = runKubediff(
    watchArgs(
      ns,
      ['configmaps'],
      '--state',
      stateFile,
      '--webhook',
      `http://127.0.0.1:${port}/hook`,
      '--listen',
      '127.0.0.1:0',
      '--shutdown-timeout',
      '1s',
    ),
    { env: { KUBEDIFF_STATE_MAX_BACKLOG: '512KB' }, checkEvents: true, timeoutMs: 30_000 },
  );
  const [, base = ''] = await kd.waitForStderr(SERVING);
  await kd.waitForStderr(/watching 1 resource type/);

  // 25 changes of a 100 KB ConfigMap: about 300 KB each to record (the object, and the event's from and
  // to), 7 MB in all, which the webhook never takes. Measured after each one.
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const changes = 25;
  await admin.create(configMaps, { metadata: { name: 'big' }, data: { v: value(0, 100_000) } });
  const peaks: number[] = [];
  for (let n = 1; n <= changes; n++) {
    const updated = await admin.patch(`${configMaps}/big`, { data: { v: value(n, 100_000) } });
    await kd.waitForEvent(
      (event) => event.id === `${updated.metadata.uid}:${updated.metadata.resourceVersion}`,
    );
    const metrics = await scrapeMetrics(base);
    const backlog = metrics.get('kubediff_state_backlog_bytes{cluster="kubediff-test"}');
    assert.ok(backlog !== undefined && backlog <= bound, `backlog ${backlog} bytes after change ${n}`);
    peaks.push(backlog);
  }
  const metrics = await scrapeMetrics(base);
  assert.ok(
    (metrics.get('kubediff_state_unconfirmed_writes_total{cluster="kubediff-test"}') ?? 0) > 0,
    'the bound was reached',
  );
  assert.ok(
    (metrics.get(`kubediff_sink_queue_depth{sink="webhook http://127.0.0.1:${port}/…"}`) ?? 0) > 0,
    'the webhook is still down, holding events',
  );
  t.diagnostic(`backlog after each change (bytes): max ${Math.max(...peaks)} of ${bound}`);
  const warnings = kd.stderr.split('\n').filter((line) => line.includes('of changes behind'));
  assert.deepEqual(warnings, [
    `kubediff: warning: state: webhook http://127.0.0.1:${port}/… is more than 512 KiB of changes behind; the state ` +
      'store records them before it has delivered them, so that memory stays bounded. A kill -9 now could lose, ' +
      'for that sink only, what it still has queued (a clean stop reports it or writes it to the dead-letter ' +
      'file, as always). Counted in kubediff_state_unconfirmed_writes_total; logged once.',
  ]);

  // A clean stop: the webhook's events are reported as not delivered; the file records every change.
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.match(stopped.stderr, /webhook http:\/\/127\.0\.0\.1:\d+\/…: \d+ events not delivered/);
  const history = await runKubediffToCompletion(['history', '--state', stateFile, '-o', 'json']);
  assert.equal(history.code, 0, history.stderr);
  const recorded = history.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as TestEvent);
  assert.deepEqual(
    recorded.map((event) => event.type),
    ['ADDED', ...Array(changes).fill('UPDATED')],
  );
});

test('a standby behind a leader that writes no checkpoint: the buffer stays under KUBEDIFF_STANDBY_MAX_BUFFER', async (t) => {
  const ns = await admin.createNamespace('bounded-standby');
  t.after(() => admin.deleteNamespace(ns));
  const leases = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
  // Held by a leader that renews no more and never wrote a checkpoint (an older kubediff, say), for an hour.
  const now = new Date().toISOString().replace('Z', '000Z');
  await admin.create(leases, {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'silent' },
    spec: { holderIdentity: 'silent-leader', leaseDurationSeconds: 3_600, acquireTime: now, renewTime: now },
  });
  const bound = 64 * 1024;

  const kd = runKubediff(
    watchArgs(
      ns,
      ['configmaps'],
      '--listen',
      '127.0.0.1:0',
      '--leader-elect',
      '--leader-election-namespace',
      ns,
      '--leader-election-id',
      'silent',
      '--leader-election-identity',
      'standby',
      '--leader-election-retry-period',
      '1s',
    ),
    { env: { KUBEDIFF_STANDBY_MAX_BUFFER: '64KB' }, checkEvents: true, timeoutMs: 30_000 },
  );
  const [, base = ''] = await kd.waitForStderr(SERVING);
  await kd.waitForStderr(/silent-leader leads; standing by/);

  // 30 changes of a 10 KB ConfigMap: about 20 KB each held back (from and to), 600 KB in all.
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const changes = 30;
  await admin.create(configMaps, { metadata: { name: 'cm' }, data: { v: value(0, 10_000) } });
  let last = await admin.patch(`${configMaps}/cm`, { data: { v: value(1, 10_000) } });
  for (let n = 1; n <= changes; n++) {
    if (n > 1) last = await admin.patch(`${configMaps}/cm`, { data: { v: value(n, 10_000) } });
    // The standby has seen the change once it counted it (it reports nothing while standing by).
    const metrics = await waitFor(
      async () => {
        const scraped = await scrapeMetrics(base);
        return (scraped.get(
          'kubediff_events_total{cluster="kubediff-test",type="UPDATED",resource="configmaps"}',
        ) ?? 0) >= n
          ? scraped
          : undefined;
      },
      { what: `the standby to see change ${n}` },
    );
    const held = metrics.get('kubediff_standby_buffer_bytes');
    assert.ok(held !== undefined && held <= bound, `${held} bytes held back after change ${n}`);
  }
  const metrics = await scrapeMetrics(base);
  const dropped = metrics.get('kubediff_standby_dropped_events_total') ?? 0;
  const held = metrics.get('kubediff_standby_buffer_events') ?? 0;
  assert.ok(dropped > 0, 'the bound was reached');
  assert.equal(dropped + held, changes + 1, 'every change is either held or counted as dropped');
  assert.equal(kd.events.length, 0, 'a standby delivers nothing');
  assert.equal(kd.stderr.split('\n').filter((line) => line.includes('dropping the oldest')).length, 1);

  // The silent leader is gone for good: the standby takes over and delivers what it held, the newest.
  await admin.delete(`${leases}/silent`);
  await kd.waitForStderr(/became the leader/);
  await kd.waitForEvent((event) => event.id === `${last.metadata.uid}:${last.metadata.resourceVersion}`, {
    description: 'the last change, delivered on takeover',
  });
  assert.equal(kd.events.length, held);
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});
