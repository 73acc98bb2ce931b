// How kubediff connects to the API server (docs/watching.md), against the real API server:
// one HTTP/2 connection carries every watch (counted from the process's own sockets); a reset, a
// refused reconnect and a black hole each make every watch resume once, on one new connection, with
// one log line for the cluster and no event lost or repeated; a watch whose reader pauses does not
// stall the others; a proxy that offers only HTTP/1.1 gets a bounded number of connections; TLS client
// certificates are presented over HTTP/2.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, type TestContext, test } from 'node:test';
import { KubeClient } from '../../src/kube/client.ts';
import { STREAM_WINDOW } from '../../src/kube/http2-pool.ts';
import { loadKubeconfig } from '../../src/kube/kubeconfig.ts';
import {
  type KubediffProcess,
  killAll,
  runKubediff,
  runKubediffToCompletion,
  WATCHING,
} from '../helpers/cli.ts';
import { kubeconfigYaml } from '../helpers/cluster.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { assertStreamInvariants, describeEvent } from '../helpers/events.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { adminClient, type KubeObject, uniqueName } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { makeTestPki, type TestPki } from '../helpers/pki.ts';
import { establishedConnections } from '../helpers/sockets.ts';
import { startTlsProxy, type TlsProxy } from '../helpers/tls-proxy.ts';

const admin = adminClient();
const cluster = testCluster();
const apiPort = Number(new URL(cluster.server).port);

const DISCONNECTED = /kubediff: warning: .*; reconnecting with backoff\./g;
const RECONNECTED = /kubediff: reconnected: every watch has resumed\./g;

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

/** Resolves once `pattern` (global) has matched stderr at least `count` times. */
function waitForLines(kd: KubediffProcess, pattern: RegExp, count: number, timeoutMs?: number) {
  return kd.waitForStderr(new RegExp(`(?:${pattern.source}[\\s\\S]*){${count}}`), timeoutMs);
}

function linesMatching(kd: KubediffProcess, pattern: RegExp): string[] {
  return kd.stderr.match(pattern) ?? [];
}

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;

/** A kubeconfig for `server` whose CA is `caPem`, with the admin token and, optionally, a client certificate. */
async function kubeconfigFor(server: string, caPem: string | undefined, client?: TestPki): Promise<string> {
  const file = path.join(tmpdir(), `kubediff-kubeconfig-${uniqueName('k')}`);
  await writeFile(
    file,
    kubeconfigYaml({
      server,
      caPem,
      token: cluster.adminToken,
      clientCert: client?.clientCert,
      clientKey: client?.clientKey,
    }),
    { mode: 0o600 },
  );
  return file;
}

test('watching every resource type of the API server holds exactly one TCP connection to it', async (t) => {
  const listed = await runKubediffToCompletion([
    'resources',
    '-o',
    'json',
    '--kubeconfig',
    cluster.kubeconfigPath,
  ]);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = listed.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { name: string; watched: boolean; reason?: string });
  // Everything watch can watch: the default selection and the high-churn types, named.
  const names = rows.filter((row) => row.watched || row.reason === 'excluded by default (high churn)');
  assert.ok(names.length >= 50, `only ${names.length} types`);

  const ns = await admin.namespaceFor(t, 'conn-all', { settled: true });
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-o',
      'json',
      ...names.flatMap((row) => ['-r', row.name]),
    ],
    { timeoutMs: 30_000 },
  );
  const watching = await kd.waitForStderr(WATCHING);
  const created = await admin.create(`/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'probe' },
    data: { k: '1' },
  });
  await kd.waitForEvent((event) => event.id === id(created), { description: 'the probe ConfigMap' });
  assert.ok(kd.pid);
  assert.equal(
    establishedConnections(kd.pid, apiPort),
    1,
    `kubediff watches ${watching[1]} resource types (and CRDs, APIServices) over one connection`,
  );
  t.diagnostic(`${watching[1]} resource types watched over 1 connection`);
});

test('12 outages (reset, refused reconnect, black hole): every watch resumes once on one new connection, one log line each, nothing lost or repeated', async (t) => {
  const ns = await admin.namespaceFor(t, 'conn-outages', { settled: true });
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const created = await admin.create(configMaps, { metadata: { name: 'x' }, data: { k: 'start' } });
  const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: apiPort } });
  t.after(async () => {
    await killAll();
    await proxy.close();
  });
  // The PING timeout is what finds a black hole, so each black hole costs that long. A server starved of CPU
  // (the whole suite on 2 cores) left a PING unanswered for 3 s, and once for 6 s: 15 s is far beyond that, and the
  // proxy's own view of such a silence is accounted for below. Four of each kind: a black hole costs 15 s.
  const pingTimeoutMs = 15_000;
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      await admin.writeKubeconfig(proxy.url()),
      '-o',
      'json',
      '-n',
      ns,
      '--listen',
      '127.0.0.1:0',
    ],
    {
      env: {
        KUBEDIFF_MAX_BACKOFF: '1s',
        KUBEDIFF_READ_IDLE_TIMEOUT: '1s',
        KUBEDIFF_PING_TIMEOUT: `${pingTimeoutMs}ms`,
      },
      checkEvents: true,
      timeoutMs: 2 * pingTimeoutMs,
    },
  );
  const [, metricsBase = ''] = await kd.waitForStderr(SERVING);
  await kd.waitForStderr(WATCHING);
  const pid = kd.pid;
  assert.ok(pid);
  const watches = Number(/watching (\d+) resource types/.exec(kd.stderr)?.[1]);
  assert.equal(establishedConnections(pid, proxy.port), 1, 'one connection before the first outage');

  const kinds = ['reset', 'refused', 'black hole'] as const;
  const outages = 12;
  const expected: string[] = [];
  const recoveries: Record<(typeof kinds)[number], number[]> = { reset: [], refused: [], 'black hole': [] };
  for (let round = 0; round < outages; round++) {
    const kind = kinds[round % kinds.length] ?? 'reset';
    const broken = Date.now();
    // Counted from here: a silence of the server that the proxy saw (below) is a line of its own.
    const disconnected = linesMatching(kd, DISCONNECTED).length;
    const reconnected = linesMatching(kd, RECONNECTED).length;
    if (kind === 'reset') proxy.cutAll();
    if (kind === 'refused') {
      proxy.refuse(true);
      proxy.cutAll();
    }
    if (kind === 'black hole') proxy.blackhole(true);
    // One line for the whole cluster, however many watches the connection carried.
    await waitForLines(kd, DISCONNECTED, disconnected + 1);
    const changed = await admin.patch(`${configMaps}/x`, { data: { k: String(round) } });
    expected.push(id(changed));
    if (kind === 'refused') proxy.refuse(false);
    if (kind === 'black hole') proxy.blackhole(false);
    await waitForLines(kd, RECONNECTED, reconnected + 1);
    recoveries[kind].push(Date.now() - broken);
    await kd.waitForEvent((event) => event.id === id(changed), {
      description: `the change made during outage ${round + 1} (${kind})`,
    });
    assert.equal(
      establishedConnections(pid, proxy.port),
      1,
      `one connection after outage ${round + 1} (${kind}); stderr:\n${kd.stderr}`,
    );
  }
  const marker = await admin.patch(`${configMaps}/x`, { data: { k: 'marker' } });
  await kd.waitForEvent((event) => event.id === id(marker), { description: 'the marker' });

  const listing = `the events were:\n${kd.events.map(describeEvent).join('\n')}`;
  // Every watch resumed from its resourceVersion: each change once, live (a relist would say offline).
  assert.deepEqual(
    kd.events.map((event) => event.id),
    [...expected, id(marker)],
    listing,
  );
  assert.ok(
    kd.events.every((event) => event.offline === undefined && event.object.uid === created.metadata.uid),
    listing,
  );
  assertStreamInvariants(kd.events);
  // A server starved of CPU on a loaded machine can leave a PING unanswered for the whole timeout: the proxy
  // sees that silence on a healthy link, and kubediff is right to replace the connection. Only such silences,
  // seen by the proxy, may add a line; one kubediff imagines (the proxy passed bytes back in time) fails here.
  const starved = proxy.unansweredStretches(pingTimeoutMs / 2);
  if (starved > 0)
    t.diagnostic(`the server left ${starved} PING(s) unanswered for ${pingTimeoutMs / 2}ms or more`);
  const lines = outages + starved;
  assert.equal(linesMatching(kd, DISCONNECTED).length, lines, kd.stderr);
  assert.equal(linesMatching(kd, RECONNECTED).length, lines, kd.stderr);
  const silent = linesMatching(kd, DISCONNECTED).filter((line) =>
    line.includes(`no answer to a PING within ${pingTimeoutMs / 1000}s`),
  );
  assert.equal(
    silent.length,
    outages / kinds.length + starved,
    `each black hole is found by a PING:\n${kd.stderr}`,
  );
  // Once: every outage cost exactly one new connection (refused attempts are not accepted).
  assert.equal(
    proxy.totalConnections,
    1 + lines,
    `${watches} watches, ${proxy.totalConnections} connections`,
  );
  // Counted by the proxy as they open (sampling the kernel's socket table instead, every few ms, starved the
  // proxy of the CPU it needs to pass PING answers in time on a loaded machine).
  assert.ok(proxy.peakConnections <= 2, `at most two connections at once, saw ${proxy.peakConnections}`);
  // What /metrics says about it.
  const metrics = await scrapeMetrics(metricsBase);
  assert.equal(metrics.get('kubediff_api_connections{cluster="kubediff-test",protocol="h2"}'), 1);
  assert.equal(metrics.get('kubediff_api_connections_opened_total{cluster="kubediff-test"}'), 1 + lines);
  assert.equal(
    metrics.get('kubediff_api_connections_lost_total{cluster="kubediff-test",reason="ping_timeout"}'),
    outages / kinds.length + starved,
  );
  const lost = ['reset', 'ping_timeout', 'closed', 'goaway'].map(
    (reason) =>
      metrics.get(`kubediff_api_connections_lost_total{cluster="kubediff-test",reason="${reason}"}`) ?? 0,
  );
  assert.equal(
    lost.reduce((sum, count) => sum + count, 0),
    lines,
    `lost by reason: ${lost.join(', ')}`,
  );
  for (const kind of kinds)
    t.diagnostic(`${kind}: every watch resumed after ${recoveries[kind].join(', ')} ms`);
});

test('a reset right after startup, while requests are being written, is noticed at once: 10 fresh starts', async (t) => {
  // node:http2 reading its TLS socket itself loses a reset that races one of its writes (src/kube/http2-pool.ts);
  // it happened in about a third of such starts. With the PING pushed out of reach, only the reset itself
  // can end each wait below in time.
  const ns = await admin.namespaceFor(t, 'conn-fresh', { settled: true });
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  await admin.create(configMaps, { metadata: { name: 'x' }, data: { k: 'start' } });
  for (let round = 0; round < 10; round++) {
    const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: apiPort } });
    try {
      const kd = runKubediff(
        ['watch', '--kubeconfig', await admin.writeKubeconfig(proxy.url()), '-o', 'json', '-n', ns],
        {
          env: { KUBEDIFF_READ_IDLE_TIMEOUT: '5m', KUBEDIFF_MAX_BACKOFF: '1s' },
          checkEvents: true,
          timeoutMs: 20_000,
        },
      );
      await kd.waitForStderr(WATCHING);
      const changed = await admin.patch(`${configMaps}/x`, { data: { k: String(round) } });
      await kd.waitForEvent((event) => event.id === id(changed), {
        description: `the change of round ${round + 1}`,
      });
      proxy.refuse(true);
      proxy.cutAll();
      await kd.waitForStderr(
        /kubediff: warning: the connection to the API server at \S+ broke: connection reset; reconnecting with backoff\./,
        10_000,
      );
      await kd.stop();
    } finally {
      await killAll();
      await proxy.close();
    }
  }
});

test('a watch whose reader pauses holds at most its stream window and does not stall another watch on the same connection', async (t) => {
  const ns = await admin.namespaceFor(t, 'conn-flow', { settled: true });
  const slowNs = await admin.namespaceFor(t, 'conn-flow-slow', { settled: true });
  const client = await KubeClient.create(loadKubeconfig({ kubeconfig: cluster.kubeconfigPath }));
  t.after(() => client.close());
  const watch = (namespace: string) =>
    client.openStream(`/api/v1/namespaces/${namespace}/configmaps`, {
      query: { watch: 1, timeoutSeconds: 300 },
    });
  const slow = await watch(slowNs);
  slow.pause(); // its reader is stuck
  const fast = await watch(ns);
  const lines: string[] = [];
  fast.setEncoding('utf8');
  fast.on('data', (text: string) => lines.push(...text.split('\n').filter(Boolean)));

  // Four stream windows' worth of changes for the stuck reader.
  const payload = 'x'.repeat(200_000);
  for (let index = 0; index < Math.ceil((4 * STREAM_WINDOW) / payload.length); index++) {
    await admin.create(`/api/v1/namespaces/${slowNs}/configmaps`, {
      metadata: { name: `big-${index}` },
      data: { v: payload },
    });
  }
  const marker = await admin.create(`/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'marker' },
    data: { k: '1' },
  });
  await admin.waitFor(() => lines.some((line) => line.includes(id(marker).split(':')[0] ?? '')), {
    what: 'the other watch to deliver its event while the first one is not read',
  });
  assert.ok(
    slow.readableLength <= STREAM_WINDOW + slow.readableHighWaterMark,
    `the paused watch holds ${slow.readableLength} bytes, more than its window`,
  );
  assert.equal(client.connectionStats().open, 1, 'both watches share one connection');
  slow.destroy();
  fast.destroy();
});

async function tlsProxyFor(
  t: TestContext,
  pki: TestPki,
  alpn: string[],
  requireClientCert = false,
): Promise<TlsProxy> {
  assert.ok(cluster.caPem, 'the test cluster has a CA');
  const proxy = await startTlsProxy({
    target: { host: '127.0.0.1', port: apiPort, caPem: cluster.caPem },
    pki,
    alpn,
    requireClientCert,
  });
  t.after(async () => {
    await killAll();
    await proxy.close();
  });
  return proxy;
}

test('a proxy that offers only HTTP/1.1: kubediff says so once, stays within KUBEDIFF_MAX_CONNECTIONS, and reports every change', async (t) => {
  const ns = await admin.namespaceFor(t, 'conn-http1', { settled: true });
  const pki = makeTestPki();
  const proxy = await tlsProxyFor(t, pki, ['http/1.1']);
  const types = ['configmaps', 'secrets', 'serviceaccounts', 'podtemplates', 'limitranges', 'resourcequotas'];
  // Eight watches (six types, CRDs and APIServices) for the four connections left to watches.
  const maxConnections = 8;
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      await kubeconfigFor(proxy.url(), pki.caPem),
      '-o',
      'json',
      '-n',
      ns,
      ...types.flatMap((type) => ['-r', type]),
    ],
    {
      // Watches end every second or two, so that the ones waiting for a connection get their turn.
      env: { KUBEDIFF_MAX_CONNECTIONS: String(maxConnections), KUBEDIFF_WATCH_TIMEOUT: '1s' },
      checkEvents: true,
      timeoutMs: 30_000,
    },
  );
  await kd.waitForStderr(WATCHING);
  const collection = (resource: string) => `/api/v1/namespaces/${ns}/${resource}`;
  const made = [
    await admin.create(collection('configmaps'), { metadata: { name: 'c' }, data: { k: '1' } }),
    await admin.create(collection('secrets'), { metadata: { name: 's' }, stringData: { k: 'v' } }),
    await admin.create(collection('serviceaccounts'), { metadata: { name: 'sa' } }),
    await admin.create(collection('podtemplates'), {
      metadata: { name: 'pt' },
      template: { spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] } },
    }),
    await admin.create(collection('limitranges'), {
      metadata: { name: 'lr' },
      spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] },
    }),
    await admin.create(collection('resourcequotas'), {
      metadata: { name: 'rq' },
      spec: { hard: { pods: '10' } },
    }),
  ];
  for (const object of made) {
    await kd.waitForEvent((event) => event.id === id(object), {
      description: `the creation of ${object.kind ?? 'an object'} ${object.metadata.name}`,
    });
  }
  assert.ok(
    proxy.protocols.length > 0 && proxy.protocols.every((protocol) => protocol === 'http/1.1'),
    proxy.protocols.join(','),
  );
  assert.ok(proxy.peakOpen <= maxConnections, `${proxy.peakOpen} connections open at once`);
  assert.equal(
    linesMatching(kd, /does not offer HTTP\/2 \(ALPN answered http\/1\.1\): using HTTP\/1\.1/g).length,
    1,
    kd.stderr,
  );
  assert.equal(
    linesMatching(kd, /every HTTP\/1\.1 connection kubediff may open .* is busy/g).length,
    1,
    kd.stderr,
  );
  assert.equal(kd.events.length, made.length, `the events were:\n${kd.events.map(describeEvent).join('\n')}`);
  assertStreamInvariants(kd.events);
  t.diagnostic(`${proxy.protocols.length} HTTP/1.1 connections in all, at most ${proxy.peakOpen} at once`);
});

test('the client certificate of the kubeconfig is presented on the one HTTP/2 connection', async (t) => {
  const ns = await admin.namespaceFor(t, 'conn-mtls', { settled: true });
  const pki = makeTestPki();
  const proxy = await tlsProxyFor(t, pki, ['h2', 'http/1.1'], true);
  const kd = runKubediff(
    ['watch', '--kubeconfig', await kubeconfigFor(proxy.url(), pki.caPem, pki), '-o', 'json', '-n', ns],
    { checkEvents: true, timeoutMs: 20_000 },
  );
  await kd.waitForStderr(WATCHING);
  const created = await admin.create(`/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'c' },
    data: { k: '1' },
  });
  await kd.waitForEvent((event) => event.id === id(created), { description: 'the ConfigMap' });
  assert.deepEqual(proxy.protocols, ['h2']);
  assert.deepEqual(proxy.clientNames, [pki.clientName]);
});

test('connection settings: a bad value exits 2 naming the variable; a read limit too small for discovery exits 1 saying so', async () => {
  const resources = (env: Record<string, string>) =>
    runKubediffToCompletion(['resources', '--kubeconfig', cluster.kubeconfigPath], { env });
  for (const [name, value, expected] of [
    [
      'KUBEDIFF_HTTP_VERSION',
      '3',
      'kubediff: invalid KUBEDIFF_HTTP_VERSION="3": use 2 (HTTP/2 when the server offers it, the default) or 1.1.\n',
    ],
    [
      'KUBEDIFF_PING_TIMEOUT',
      '0s',
      'kubediff: invalid KUBEDIFF_PING_TIMEOUT="0s": expected a duration longer than 0.\n',
    ],
    [
      'KUBEDIFF_MAX_CONNECTIONS',
      'many',
      'kubediff: invalid KUBEDIFF_MAX_CONNECTIONS="many": use a whole number of connections such as 256.\n',
    ],
    [
      'KUBEDIFF_MAX_READ_SIZE',
      'big',
      'kubediff: invalid KUBEDIFF_MAX_READ_SIZE="big": use a size such as 64MB or 1GB.\n',
    ],
  ] as const) {
    const result = await resources({ [name]: value });
    assert.equal(result.code, 2, `${name}=${value}: ${result.stderr}`);
    assert.equal(result.stderr, expected);
  }
  const tiny = await resources({ KUBEDIFF_MAX_READ_SIZE: '2KB' });
  assert.equal(tiny.code, 1, tiny.stderr);
  assert.match(
    tiny.stderr,
    /^kubediff: the API server at \S+ \(context "[^"]+"\) answered \/apis? with more than 2 KiB, the most kubediff reads at once; raise KUBEDIFF_MAX_READ_SIZE\.\n$/,
  );
});
