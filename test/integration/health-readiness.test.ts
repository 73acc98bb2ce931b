// --listen against the real API server behind a fault proxy: /healthz answers from the start, /readyz and
// /startupz only once the initial sync is done; /readyz turns unready when the API server has been
// unreachable for longer than --ready-failure-threshold and ready again once every watch is back. /metrics
// counts events, watch restarts, failures, and the webhook sink's requests and retries.
// A part of the cluster failing (a custom resource whose conversion webhook does not answer, on an API
// server of its own) is a condition in /readyz's body and in kubediff_watch_failing, not unreadiness.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, KubeAdmin, uniqueName, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { needsSharedEtcd, startSideApiserver } from '../helpers/side-apiserver.ts';

const admin = adminClient();

async function get(url: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { method });
  return { status: response.status, body: await response.text() };
}

describe('health, readiness and metrics', () => {
  let namespace: string;
  let proxy: FaultProxy;
  let receiver: HttpReceiver;

  before(async () => {
    namespace = await admin.createNamespace('health');
    const { port, hostname } = new URL(testCluster().server);
    proxy = await startFaultProxy({ target: { host: hostname, port: Number(port) } });
    receiver = await HttpReceiver.start();
  });
  after(async () => {
    await proxy?.close();
    await receiver?.close();
    await admin.deleteNamespace(namespace).catch(() => {});
  });

  test('ready after the sync, unready while the API server is cut off, ready again after', async () => {
    const kubeconfig = await admin.writeKubeconfig(proxy.url());
    // The API server is unreachable at first: alive, not ready.
    proxy.blackhole(true);
    // The webhook fails once, then takes events.
    receiver.script({ status: 503 });
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        kubeconfig,
        '-o',
        'json',
        '-n',
        namespace,
        '-r',
        'configmaps,secrets',
        '--listen',
        '127.0.0.1:0',
        '--ready-failure-threshold',
        '2s',
        '--webhook',
        receiver.url('/hook'),
      ],
      {
        env: { KUBEDIFF_MAX_BACKOFF: '1s', KUBEDIFF_WATCH_IDLE_TIMEOUT: '3s' },
        timeoutMs: 60_000,
      },
    );
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      assert.equal((await get(`${base}/healthz`)).status, 200);
      const syncing = await get(`${base}/readyz`);
      assert.equal(syncing.status, 503);
      assert.match(syncing.body, /initial sync in progress/);
      assert.deepEqual(await get(`${base}/startupz`), {
        status: 503,
        body: 'not started: initial sync in progress\n',
      });
      proxy.blackhole(false);
      await kd.waitForStderr(/watching 2 resource types/);
      await waitFor(async () => (await get(`${base}/readyz`)).status === 200, {
        what: 'ready after the sync',
      });
      assert.deepEqual(await get(`${base}/startupz`), { status: 200, body: 'ok\n' });

      // Cut off once the watches are open: a change seen live proves the ConfigMaps watch is. The
      // webhook refuses it once (503), then takes the retry.
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'opened' },
        data: { a: '0' },
      });
      await kd.waitForEvent((event) => event.object.name === 'opened');
      await receiver.waitForRequests(2);
      proxy.refuse(true);
      proxy.cutAll();
      await kd.waitForStderr(/reconnecting with backoff/);
      assert.equal((await get(`${base}/readyz`)).status, 200, 'still ready within the threshold');
      const unready = await waitFor(
        async () => {
          const answer = await get(`${base}/readyz`);
          return answer.status === 503 ? answer : undefined;
        },
        { timeoutMs: 10_000, what: 'unready after 2s of failures' },
      );
      assert.match(
        unready.body,
        /^not ready: \d+ watch(es)? failing for more than 2s \((configmaps|secrets): cannot reach the API server; details in the log\)\n$/,
      );
      // Whoever reaches the port learns no internal address: not the API server's, not any other.
      assert.doesNotMatch(unready.body, /\d+\.\d+\.\d+\.\d+|https?:|localhost|\[[\da-f:]+\]/i);
      assert.ok(!unready.body.includes(String(proxy.port)), unready.body);
      // The log has the details.
      assert.match(kd.stderr, new RegExp(`127\\.0\\.0\\.1:${proxy.port}`));
      assert.equal((await get(`${base}/healthz`)).status, 200, 'alive all along');
      assert.equal((await get(`${base}/startupz`)).status, 200, 'started once, started for good');

      proxy.refuse(false);
      await kd.waitForStderr(/reconnected: every watch has resumed/, 20_000);
      await waitFor(async () => (await get(`${base}/readyz`)).status === 200, { what: 'ready again' });

      // Events and the webhook's delivery (two events, one retry: the 503 above).
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'counted' },
        data: { a: '1' },
      });
      await kd.waitForEvent((event) => event.object.name === 'counted');
      await receiver.waitForRequests(3);
      const sink = `webhook http://127.0.0.1:${receiver.port}/…`;
      const metrics = await waitFor(
        async () => {
          const values = await scrapeMetrics(base ?? '');
          return values.get(`kubediff_sink_events_total{sink="${sink}",outcome="delivered"}`) === 2
            ? values
            : undefined;
        },
        { what: 'the webhook delivery counted' },
      );
      assert.equal(
        metrics.get('kubediff_events_total{cluster="kubediff-test",type="ADDED",resource="configmaps"}'),
        2,
      );
      assert.ok(
        (metrics.get('kubediff_seconds_since_last_event{cluster="kubediff-test",resource="configmaps"}') ??
          -1) >= 0,
      );
      // A watch re-opened after the cut (one still opening when it came counts as a failure only).
      const restarts = ['configmaps', 'secrets'].map(
        (resource) =>
          metrics.get(`kubediff_watch_restarts_total{cluster="kubediff-test",resource="${resource}"}`) ?? 0,
      );
      assert.ok(restarts.reduce((sum, n) => sum + n, 0) >= 1, `watch restarts: ${restarts.join(', ')}`);
      assert.ok(
        (metrics.get(
          'kubediff_watch_failures_total{cluster="kubediff-test",resource="configmaps",reason="network"}',
        ) ?? 0) >= 1,
      );
      assert.equal(metrics.get('kubediff_informers_running{cluster="kubediff-test"}'), 2);
      assert.equal(metrics.get('kubediff_informers{cluster="kubediff-test",state="synced"}'), 2);
      assert.equal(metrics.get('kubediff_ready'), 1);
      assert.equal(metrics.get('kubediff_leader'), 1);
      assert.equal(metrics.get(`kubediff_sink_retries_total{sink="${sink}"}`), 1);
      assert.equal(metrics.get(`kubediff_sink_queue_depth{sink="${sink}"}`), 0);
      assert.equal(
        metrics.get(`kubediff_sink_request_duration_seconds_count{sink="${sink}",outcome="error"}`),
        1,
      );
      assert.equal(
        metrics.get(`kubediff_sink_request_duration_seconds_count{sink="${sink}",outcome="ok"}`),
        2,
      );
      assert.ok(metrics.has('process_resident_memory_bytes'), 'process metrics too');

      // Only GET and HEAD, only these paths.
      assert.equal((await get(`${base}/nope`)).status, 404);
      assert.equal((await get(`${base}/readyz`, 'POST')).status, 405);
      assert.equal((await get(`${base}/healthz`, 'HEAD')).status, 200);

      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
    } finally {
      proxy.blackhole(false);
      proxy.refuse(false);
      if (!kd.exitResult) await kd.kill();
    }
  });

  test('--listen on a port in use is a usage error (exit 2), one sentence', async () => {
    const kubeconfig = await admin.writeKubeconfig();
    const kd = runKubediff([
      'watch',
      '--kubeconfig',
      kubeconfig,
      '-r',
      'configmaps',
      '--listen',
      `127.0.0.1:${receiver.port}`,
    ]);
    const result = await kd.waitForExit(30_000);
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /^kubediff: cannot listen on 127\.0\.0\.1:\d+ \(--listen\): the port is in use; choose another address\.\n$/,
    );
  });
});

describe('a part of the cluster failing', { skip: needsSharedEtcd() }, () => {
  test('a custom resource whose conversion webhook does not answer: still ready, the type named and counted', async (t) => {
    // An API server of its own: the shared cluster's other test files watch every type, and this one fails.
    const api = await startSideApiserver({
      what: 'the API server of the readiness test',
      processName: 'kube-apiserver-readiness',
    });
    t.after(() => api.stop());
    const side = new KubeAdmin(api);
    t.after(() => side.close());
    const namespace = await side.createNamespace('partial');
    const group = `${uniqueName('conv')}.example.com`;
    // Stored as v1, served as v2 too (the preferred version, which kubediff reads) through a conversion
    // webhook nobody serves: every LIST and WATCH of v2 fails with 500, as with a crashed webhook's pods.
    await side.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
        versions: ['v1', 'v2'].map((name) => ({
          name,
          served: true,
          storage: name === 'v1',
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        })),
        conversion: {
          strategy: 'Webhook',
          webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:1/convert' } },
        },
      },
    });
    await side.waitFor(
      () =>
        side
          .create(`/apis/${group}/v1/namespaces/${namespace}/widgets`, {
            apiVersion: `${group}/v1`,
            kind: 'Widget',
            metadata: { name: 'stored' },
          })
          .then(() => true),
      { what: 'the custom resource served' },
    );
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        api.kubeconfigPath,
        '-o',
        'json',
        '-n',
        namespace,
        '-r',
        `widgets.${group}`,
        '-r',
        'configmaps',
        '--listen',
        '127.0.0.1:0',
        '--ready-failure-threshold',
        '1s',
      ],
      { env: { KUBEDIFF_MAX_BACKOFF: '1s' }, timeoutMs: 60_000 },
    );
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/watching 2 resource types .*; 1 of them failing/);
      assert.deepEqual(await get(`${base}/startupz`), { status: 200, body: 'ok\n' });
      // Past the threshold: named in the body of a 200, never an address.
      const degraded = await waitFor(
        async () => {
          const answer = await get(`${base}/readyz`);
          return answer.body.startsWith('ok;') || answer.status !== 200 ? answer : undefined;
        },
        { what: '/readyz naming the failing type' },
      );
      assert.deepEqual(degraded, {
        status: 200,
        body: `ok; 1 watch failing for more than 1s (widgets.${group}: the API server fails (5xx); details in the log)\n`,
      });
      const metrics = await scrapeMetrics(base ?? '');
      const failing = [...metrics].filter(([key]) => key.startsWith('kubediff_watch_failing{'));
      assert.deepEqual(
        failing.map(([key, value]) => [key.replace(/cluster="[^"]*",/, ''), value]),
        [[`kubediff_watch_failing{resource="widgets.${group}",reason="server"}`, 1]],
      );
      assert.equal(metrics.get('kubediff_ready'), 1);
      // And it does its job: the rest of the cluster is reported.
      await side.create(`/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name: 'seen' } });
      await kd.waitForEvent((event) => event.object.name === 'seen');
      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
