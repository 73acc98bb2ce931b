// Several clusters in one `kubediff watch`: the default test cluster (context "alpha") and a second,
// independent kube-apiserver (its own etcd prefix; context "beta", reached through a fault proxy so
// that it can be cut off while the test still changes objects in it). Every event carries its
// cluster; one cluster cut off or unreachable never stops the other; bad input is one sentence, exit 2.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  KUBEDIFF_BIN,
  type KubediffProcess,
  killAll,
  kubediffEnv,
  runKubediff,
  runKubediffToCompletion,
} from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { matching, type TestEvent } from '../helpers/events.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { ADMIN_FIELD_MANAGER, adminClient, KubeAdmin, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { createTestDatabase } from '../helpers/postgres-env.ts';
import { freePorts } from '../helpers/processes.ts';
import {
  needsSharedEtcd,
  type SideApiserver,
  severalContextsKubeconfig,
  startSideApiserver,
} from '../helpers/side-apiserver.ts';

const alphaAdmin = adminClient();
const configmaps = (namespace: string) => `/api/v1/namespaces/${namespace}/configmaps`;
// Reconnect soon after a cut: the test awaits the catch-up, it does not sleep.
const ENV = { KUBEDIFF_MAX_BACKOFF: '1s', KUBEDIFF_WATCH_IDLE_TIMEOUT: '3s' };

describe('several clusters in one watch', { skip: needsSharedEtcd() }, () => {
  let beta: SideApiserver;
  let betaAdmin: KubeAdmin;
  let betaProxy: FaultProxy;
  /** Contexts alpha and beta. */
  let kubeconfig: string;
  /** Contexts alpha and down (nothing listens there). */
  let withDown: string;
  let namespace: string;

  before(async () => {
    beta = await startSideApiserver({ what: 'the second API server', processName: 'kube-apiserver-beta' });
    betaAdmin = new KubeAdmin(beta);
    const { port } = new URL(beta.server);
    betaProxy = await startFaultProxy({ target: { host: '127.0.0.1', port: Number(port) } });
    const alpha = testCluster();
    const alphaContext = { name: 'alpha', server: alpha.server, caPem: alpha.caPem, token: alpha.adminToken };
    kubeconfig = path.join(beta.dir ?? '', 'two-clusters.kubeconfig');
    await writeFile(
      kubeconfig,
      severalContextsKubeconfig([
        alphaContext,
        { name: 'beta', server: betaProxy.url(), caPem: beta.caPem, token: beta.adminToken },
      ]),
      { mode: 0o600 },
    );
    const [closedPort] = (await freePorts(1)) as [number];
    withDown = path.join(beta.dir ?? '', 'down.kubeconfig');
    await writeFile(
      withDown,
      severalContextsKubeconfig([
        alphaContext,
        { name: 'down', server: `https://127.0.0.1:${closedPort}`, caPem: beta.caPem, token: 'x' },
      ]),
      { mode: 0o600 },
    );
    // The same namespace in both clusters: one -n for both.
    namespace = await alphaAdmin.createNamespace('clusters');
    await betaAdmin.create('/api/v1/namespaces', { metadata: { name: namespace } });
  });
  after(async () => {
    await killAll();
    await betaProxy?.close();
    await betaAdmin?.close();
    await beta?.stop();
    await alphaAdmin.deleteNamespace(namespace).catch(() => {});
  });

  function watch(kubeconfigFile: string, ...extra: string[]): KubediffProcess {
    return runKubediff(
      ['watch', '--kubeconfig', kubeconfigFile, '-n', namespace, '-r', 'configmaps', ...extra],
      { env: ENV, timeoutMs: 60_000 },
    );
  }

  it('reports each cluster’s changes with its own cluster; one cut off never stops the other, and its change while cut off is reported once', async () => {
    const kd = watch(
      kubeconfig,
      '-o',
      'json',
      '--context',
      'alpha',
      '--context',
      'beta',
      '--listen',
      '127.0.0.1:0',
    );
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "beta"\)/);
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'in-alpha' }, data: { k: '1' } });
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'in-beta' }, data: { k: '1' } });
      const addedAlpha = await kd.waitForEvent(matching({ type: 'ADDED', name: 'in-alpha' }));
      const addedBeta = await kd.waitForEvent(matching({ type: 'ADDED', name: 'in-beta' }));
      assert.equal(addedAlpha.cluster, 'alpha');
      assert.equal(addedBeta.cluster, 'beta');

      await betaAdmin.patch(`${configmaps(namespace)}/in-beta`, { data: { k: '2' } });
      const updatedBeta = await kd.waitForEvent(matching({ type: 'UPDATED', name: 'in-beta' }));
      assert.equal(updatedBeta.cluster, 'beta');
      assert.deepEqual(updatedBeta.changes, [
        { op: 'replace', path: '/data/k', from: '1', to: '2', manager: ADMIN_FIELD_MANAGER },
      ]);

      // Beta cut off: alpha's changes keep flowing; beta changes meanwhile (straight to its server).
      betaProxy.refuse(true);
      betaProxy.cutAll();
      await betaAdmin.patch(`${configmaps(namespace)}/in-beta`, { data: { k: '3' } });
      await alphaAdmin.patch(`${configmaps(namespace)}/in-alpha`, { data: { k: '2' } });
      const updatedAlpha = await kd.waitForEvent(matching({ type: 'UPDATED', name: 'in-alpha' }));
      assert.equal(updatedAlpha.cluster, 'alpha');
      assert.deepEqual(updatedAlpha.changes, [
        { op: 'replace', path: '/data/k', from: '1', to: '2', manager: ADMIN_FIELD_MANAGER },
      ]);

      const isCaughtUp = (event: TestEvent) =>
        event.object.name === 'in-beta' && event.changes?.[0]?.to === '3';
      assert.equal(kd.events.filter(isCaughtUp).length, 0, 'beta is cut off: its change waits');

      // Back: beta's change while cut off is reported, then a later one; the first exactly once.
      betaProxy.refuse(false);
      const caughtUp = await kd.waitForEvent(isCaughtUp);
      assert.equal(caughtUp.cluster, 'beta');
      assert.deepEqual(caughtUp.changes, [
        { op: 'replace', path: '/data/k', from: '2', to: '3', manager: ADMIN_FIELD_MANAGER },
      ]);
      await betaAdmin.patch(`${configmaps(namespace)}/in-beta`, { data: { k: '4' } });
      await kd.waitForEvent((event) => event.object.name === 'in-beta' && event.changes?.[0]?.to === '4');
      assert.equal(kd.events.filter(isCaughtUp).length, 1);

      // The metrics tell the clusters apart: each one's events, objects, sync and connections (beta's
      // outage made it reconnect and restart its watch).
      const metrics = await scrapeMetrics(base ?? '');
      const series = (name: string, cluster: string, labels = '') =>
        metrics.get(`${name}{cluster="${cluster}"${labels}}`);
      assert.equal(series('kubediff_events_total', 'alpha', ',type="UPDATED",resource="configmaps"'), 1);
      assert.equal(series('kubediff_events_total', 'beta', ',type="UPDATED",resource="configmaps"'), 3);
      assert.equal(series('kubediff_events_total', 'beta', ',type="ADDED",resource="configmaps"'), 1);
      assert.ok((series('kubediff_objects', 'beta', ',resource="configmaps"') ?? 0) >= 1);
      assert.equal(series('kubediff_cluster_synced', 'alpha'), 1);
      assert.equal(series('kubediff_cluster_synced', 'beta'), 1);
      assert.ok((series('kubediff_api_connections_opened_total', 'beta') ?? 0) >= 2, 'beta reconnected');
      assert.ok((series('kubediff_watch_restarts_total', 'beta', ',resource="configmaps"') ?? 0) >= 1);
    } finally {
      betaProxy.refuse(false);
      await kd.stop();
    }
  });

  it('an API server really stopped: the other cluster’s events keep flowing; restarted, its change made meanwhile (through another API server of that cluster) is reported once', async () => {
    const alpha = testCluster();
    const direct = path.join(beta.dir ?? '', 'direct.kubeconfig');
    await writeFile(
      direct,
      severalContextsKubeconfig([
        { name: 'alpha', server: alpha.server, caPem: alpha.caPem, token: alpha.adminToken },
        { name: 'beta', server: beta.server, caPem: beta.caPem, token: beta.adminToken },
      ]),
      { mode: 0o600 },
    );
    // Another kube-apiserver of beta's control plane: it takes the change while the first one is down.
    const replica = await beta.replica();
    const replicaAdmin = new KubeAdmin(replica);
    const kd = watch(direct, '-o', 'json', '--all-contexts');
    try {
      await kd.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "beta"\)/);
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'restarted' }, data: { k: '1' } });
      await kd.waitForEvent(matching({ type: 'ADDED', name: 'restarted' }));

      await beta.stopServer();
      await kd.waitForStderr(/context "beta": .*(went silent|lost|reconnecting)/);
      await replicaAdmin.patch(`${configmaps(namespace)}/restarted`, { data: { k: '2' } });
      // Meanwhile alpha reports as ever.
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'while-beta-stopped' } });
      const alphaEvent = await kd.waitForEvent(matching({ type: 'ADDED', name: 'while-beta-stopped' }));
      assert.equal(alphaEvent.cluster, 'alpha');
      const isMeanwhile = (event: TestEvent) =>
        event.object.name === 'restarted' && event.changes?.[0]?.to === '2';
      assert.equal(kd.events.filter(isMeanwhile).length, 0, 'beta is down: its change waits');

      await beta.startServer();
      const meanwhile = await kd.waitForEvent(isMeanwhile);
      assert.equal(meanwhile.cluster, 'beta');
      assert.deepEqual(meanwhile.changes, [
        { op: 'replace', path: '/data/k', from: '1', to: '2', manager: ADMIN_FIELD_MANAGER },
      ]);
      // A later change, then: the one made while down was reported exactly once.
      await betaAdmin.patch(`${configmaps(namespace)}/restarted`, { data: { k: '3' } });
      await kd.waitForEvent((event) => event.object.name === 'restarted' && event.changes?.[0]?.to === '3');
      assert.equal(kd.events.filter(isMeanwhile).length, 1);
      assert.equal((await kd.stop('SIGTERM')).code, 0);
    } finally {
      await kd.stop();
      await replicaAdmin.close();
      await replica.stop();
      // Whatever happened above, beta serves the tests after this one.
      await beta.startServer().catch(() => {});
    }
  });

  it('a context unreachable from the start: the other reports, the sentence names it, /readyz is unready naming it', async () => {
    const kd = watch(withDown, '-o', 'json', '--all-contexts', '--listen', '127.0.0.1:0');
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await kd.waitForStderr(/\(context "down"\).*; retried in the background\./);
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'while-down' } });
      const added = await kd.waitForEvent(matching({ type: 'ADDED', name: 'while-down' }));
      assert.equal(added.cluster, 'alpha');
      const readyz = await waitFor(
        async () => {
          const response = await fetch(`${base}/readyz`);
          const body = await response.text();
          return response.status === 503 && body.includes('context "down"') ? body : undefined;
        },
        { what: '/readyz naming the context that is down' },
      );
      assert.match(readyz, /context "down": cannot reach the API server/);
      assert.doesNotMatch(readyz, /127\.0\.0\.1/);
      // The metrics, per cluster: the one down has not synced, has no connection, and reported nothing.
      const metrics = await scrapeMetrics(base ?? '');
      assert.equal(metrics.get('kubediff_cluster_synced{cluster="alpha"}'), 1);
      assert.equal(metrics.get('kubediff_cluster_synced{cluster="down"}'), 0);
      assert.equal(
        metrics.get('kubediff_events_total{cluster="alpha",type="ADDED",resource="configmaps"}'),
        1,
      );
      assert.equal(metrics.get('kubediff_api_connections{cluster="alpha",protocol="h2"}'), 1);
      assert.equal(metrics.get('kubediff_api_connections{cluster="down",protocol="h2"}') ?? 0, 0);
      assert.equal(metrics.get('kubediff_informers_running{cluster="down"}'), 0);
    } finally {
      await kd.stop();
    }
  });

  it('a context that never answers at start (black hole) holds nothing back, and a stop exits cleanly', async () => {
    betaProxy.blackhole(true);
    const kd = watch(kubeconfig, '-o', 'json', '--all-contexts');
    try {
      await kd.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'beside-a-hole' } });
      const added = await kd.waitForEvent(matching({ type: 'ADDED', name: 'beside-a-hole' }));
      assert.equal(added.cluster, 'alpha');
      assert.doesNotMatch(kd.stderr, /context "beta"\)/);
      const stopped = await kd.stop('SIGTERM');
      assert.equal(stopped.code, 0, stopped.stderr);
    } finally {
      betaProxy.blackhole(false);
      await kd.stop();
    }
  });

  it('on a terminal, the sync progress names each cluster still syncing and leaves the log lines whole', async () => {
    // A real terminal: `script` runs kubediff on a pseudo-terminal and copies what it shows; Ctrl-C is
    // typed into it as a user would.
    betaProxy.blackhole(true);
    const command = [process.execPath, KUBEDIFF_BIN, 'watch', '--kubeconfig', kubeconfig, '--all-contexts']
      .concat(['-n', namespace, '-r', 'configmaps', '-o', 'json'])
      .map((word) => `'${word}'`)
      .join(' ');
    const terminal = spawn('script', ['-q', '-e', '-f', '-c', `exec ${command}`, '/dev/null'], {
      env: kubediffEnv({ ...ENV, KUBEDIFF_LOG_FORMAT: undefined, COLUMNS: '200' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let shown = '';
    const shows = (pattern: RegExp, what: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(shown)) return;
          clearTimeout(timer);
          terminal.stdout.off('data', check);
          resolve();
        };
        const timer = setTimeout(() => {
          terminal.stdout.off('data', check);
          reject(new Error(`the terminal never showed ${what}; it showed:\n${JSON.stringify(shown)}`));
        }, 30_000);
        terminal.stdout.on('data', check);
        check();
      });
    terminal.stdout.on('data', (chunk: Buffer) => {
      shown += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => terminal.on('exit', (code) => resolve(code)));
    try {
      await shows(/syncing: [^\r\n]*beta: discovering resource types/, 'the progress line naming beta');
      await shows(/kubediff: watching 1 resource type on .* \(context "alpha"\)/, 'alpha’s "watching" line');
      // Beta's first attempt gives up (the connect timeout): the progress line ends, and the sentence saying
      // so stands on a row of its own.
      await shows(/kubediff: warning: .*retried in the background\./, 'beta’s sentence');
      // Each log line starts a row of its own (after a newline, or after the progress line was cleared),
      // never appended to the progress line.
      const rows = shown.replaceAll('\x1b[K', '').split(/\r\n|\r|\n/);
      const watching = /^kubediff: watching 1 resource type on \S+ \(context "alpha"\)/;
      assert.ok(
        rows.some((row) => watching.test(row)),
        JSON.stringify(shown),
      );
      assert.ok(!rows.some((row) => /syncing: .*kubediff:/.test(row)), JSON.stringify(shown));
      assert.ok(
        rows.some((row) => /^kubediff: warning: .*retried in the background\./.test(row)),
        JSON.stringify(shown),
      );
      assert.doesNotMatch(shown.slice(shown.indexOf('retried in the background')), /syncing:/);
      terminal.stdin.write('\x03');
      assert.equal(await exited, 0, JSON.stringify(shown));
    } finally {
      betaProxy.blackhole(false);
      terminal.kill('SIGKILL');
    }
  });

  it('a context refused at start starts reporting once reachable, and /readyz turns ready', async () => {
    betaProxy.refuse(true);
    const kd = watch(kubeconfig, '-o', 'json', '--all-contexts', '--listen', '127.0.0.1:0');
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/\(context "beta"\).*; retried in the background\./);
      const unready = await fetch(`${base}/readyz`);
      assert.equal(unready.status, 503);
      assert.match(await unready.text(), /context "beta": cannot reach the API server/);
      betaProxy.refuse(false);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "beta"\)/);
      await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, {
        what: 'ready once beta synced',
      });
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'after-start' } });
      const added = await kd.waitForEvent(matching({ type: 'ADDED', name: 'after-start' }));
      assert.equal(added.cluster, 'beta');
    } finally {
      betaProxy.refuse(false);
      await kd.stop();
    }
  });

  it('--state postgres://…: each cluster its own snapshot; a restart catches up each cluster’s changes once, offline', async () => {
    const database = await createTestDatabase('several clusters');
    const url = new URL(database.info.url);
    url.password = '';
    const env = { ...ENV, PGPASSWORD: database.info.password };
    const run = () =>
      runKubediff(
        ['watch', '--kubeconfig', kubeconfig, '-n', namespace, '-r', 'configmaps', '-o', 'json'].concat([
          '--all-contexts',
          '--state',
          url.href,
        ]),
        { env, timeoutMs: 60_000 },
      );
    try {
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'kept' }, data: { k: 'a1' } });
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'kept' }, data: { k: 'b1' } });
      const first = run();
      await first.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await first.waitForStderr(/watching 1 resource type on .* \(context "beta"\)/);
      assert.equal((await first.stop()).code, 0);

      // While kubediff is down, each cluster's `kept` changes its own way.
      await alphaAdmin.patch(`${configmaps(namespace)}/kept`, { data: { k: 'a2' } });
      await betaAdmin.patch(`${configmaps(namespace)}/kept`, { data: { k: 'b2' } });
      const second = run();
      try {
        const isKept = (cluster: string) => (event: TestEvent) =>
          event.cluster === cluster && event.object.name === 'kept' && event.type === 'UPDATED';
        const alphaCatchUp = await second.waitForEvent(isKept('alpha'));
        const betaCatchUp = await second.waitForEvent(isKept('beta'));
        assert.equal(alphaCatchUp.offline, true);
        assert.equal(betaCatchUp.offline, true);
        assert.deepEqual(
          alphaCatchUp.changes?.map(({ op, path, from, to }) => ({ op, path, from, to })),
          [{ op: 'replace', path: '/data/k', from: 'a1', to: 'a2' }],
        );
        assert.deepEqual(
          betaCatchUp.changes?.map(({ op, path, from, to }) => ({ op, path, from, to })),
          [{ op: 'replace', path: '/data/k', from: 'b1', to: 'b2' }],
        );
        // A later change (live) as the sentinel: each catch-up reported once.
        await alphaAdmin.patch(`${configmaps(namespace)}/kept`, { data: { k: 'a3' } });
        await second.waitForEvent((event) => isKept('alpha')(event) && event.changes?.[0]?.to === 'a3');
        assert.equal(second.events.filter(isKept('beta')).length, 1);
        assert.equal(
          second.events.filter((event) => isKept('alpha')(event) && event.offline === true).length,
          1,
        );
      } finally {
        await second.stop();
      }
    } finally {
      await database.drop();
    }
  });

  it('the file’s contexts: watches each; pretty output shows each line’s cluster', async () => {
    const config = path.join(beta.dir ?? '', 'contexts.yaml');
    await writeFile(config, 'contexts: [alpha, beta]\n');
    const kd = watch(kubeconfig, '-o', 'pretty', '-c', config);
    try {
      await kd.waitForStderr(/watching 1 resource type on .* \(context "alpha"\)/);
      await kd.waitForStderr(/watching 1 resource type on .* \(context "beta"\)/);
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'pretty-alpha' } });
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'pretty-beta' } });
      await kd.waitForStdout(/ADDED\s+configmaps \S+\/pretty-alpha.* \[alpha\]/);
      await kd.waitForStdout(/ADDED\s+configmaps \S+\/pretty-beta.* \[beta\]/);
    } finally {
      await kd.stop();
    }
  });

  it('kubediff resources lists each cluster’s types; one that cannot be listed is said, the other listed, exit 1', async () => {
    const both = await runKubediffToCompletion(
      ['resources', '--kubeconfig', kubeconfig, '--all-contexts', '-r', 'configmaps', '-o', 'json'],
      { env: ENV },
    );
    assert.equal(both.code, 0, both.stderr);
    const rows = both.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { cluster?: string; name: string; watched: boolean });
    assert.deepEqual(
      rows.filter((entry) => entry.watched).map((entry) => `${entry.cluster} ${entry.name}`),
      ['alpha configmaps', 'beta configmaps'],
    );
    assert.ok(
      rows.every((entry) => entry.cluster === 'alpha' || entry.cluster === 'beta'),
      'every row names its cluster',
    );
    const table = await runKubediffToCompletion(
      [
        'resources',
        '--kubeconfig',
        kubeconfig,
        '--context',
        'beta',
        '--context',
        'alpha',
        '-r',
        'configmaps',
      ],
      { env: ENV },
    );
    assert.equal(table.code, 0, table.stderr);
    const watchedLines = table.stdout.split('\n').filter((line) => /\byes$/.test(line));
    assert.match(table.stdout, /^CLUSTER\s+NAME\s+APIVERSION\s+KIND\s+SCOPE\s+WATCHED\n/);
    assert.deepEqual(
      watchedLines.map((line) => line.split(/\s+/).slice(0, 2).join(' ')),
      ['beta configmaps', 'alpha configmaps'],
      'in the order the contexts were given',
    );

    const down = await runKubediffToCompletion(
      ['resources', '--kubeconfig', withDown, '--all-contexts', '-r', 'configmaps', '-o', 'json'],
      { env: ENV },
    );
    assert.equal(down.code, 1, down.stderr);
    assert.deepEqual(
      down.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { cluster: string; name: string; watched: boolean })
        .filter((entry) => entry.watched)
        .map((entry) => `${entry.cluster} ${entry.name}`),
      ['alpha configmaps'],
    );
    assert.match(
      down.stderr,
      /context "down": cannot reach the API server at https:\/\/127\.0\.0\.1:\d+ \(context "down"\)/,
    );
    assert.match(
      down.stderr,
      /kubediff: 1 of 2 clusters could not be listed \("down"; the reasons are above\)\.\n$/,
    );
  });

  it('the file’s clusters: each with its own kubeconfig, name and selection; an optional one down keeps /readyz ready', async () => {
    const dir = beta.dir ?? '';
    const alpha = testCluster();
    // One kubeconfig per cluster, as fleets keep them; both files call their context "default".
    const euFile = path.join(dir, 'eu.kubeconfig');
    const usFile = path.join(dir, 'us.kubeconfig');
    const labFile = path.join(dir, 'lab.kubeconfig');
    const [closedPort] = (await freePorts(1)) as [number];
    await writeFile(
      euFile,
      severalContextsKubeconfig([
        { name: 'default', server: alpha.server, caPem: alpha.caPem, token: alpha.adminToken },
      ]),
      { mode: 0o600 },
    );
    await writeFile(
      usFile,
      severalContextsKubeconfig([
        { name: 'default', server: betaProxy.url(), caPem: beta.caPem, token: beta.adminToken },
      ]),
      { mode: 0o600 },
    );
    await writeFile(
      labFile,
      severalContextsKubeconfig([
        { name: 'lab', server: `https://127.0.0.1:${closedPort}`, caPem: beta.caPem, token: 'x' },
      ]),
      { mode: 0o600 },
    );
    const other = await alphaAdmin.createNamespace('clusters-other');
    const config = path.join(dir, 'clusters.yaml');
    await writeFile(
      config,
      [
        'resources: [configmaps, secrets]',
        'clusters:',
        `  - name: eu`,
        `    kubeconfig: ${euFile}`,
        `    namespaces: [${namespace}]`,
        `    resources: [configmaps]`,
        `  - name: us`,
        `    kubeconfig: ${usFile}`,
        `    namespaces: [${namespace}]`,
        `    selector: team=b`,
        `  - kubeconfig: ${labFile}`,
        `    optional: true`,
        '',
      ].join('\n'),
    );
    const kd = runKubediff(['watch', '-c', config, '-o', 'json', '--listen', '127.0.0.1:0'], {
      env: ENV,
      timeoutMs: 60_000,
    });
    try {
      const [, base] = await kd.waitForStderr(SERVING);
      await kd.waitForStderr(/watching 1 resource type on .* \(cluster "eu", context "default"\)/);
      // us: the file's two types (its own selector, the global resources).
      await kd.waitForStderr(/watching 2 resource types on .* \(cluster "us", context "default"\)/);
      await kd.waitForStderr(
        /cannot reach the API server at \S+ \(context "lab"\).*; retried in the background \(optional: \/readyz does not wait for it\)\./,
      );
      // Ready: eu and us synced; lab, optional, is not waited for.
      await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: '/readyz ready' });

      // eu: its namespace's ConfigMaps, named eu; another namespace of the same API server is not watched.
      await alphaAdmin.create(configmaps(other), { metadata: { name: 'elsewhere' } });
      await alphaAdmin.create(configmaps(namespace), { metadata: { name: 'eu-cm' }, data: { k: '1' } });
      const eu = await kd.waitForEvent(matching({ type: 'ADDED', name: 'eu-cm' }));
      assert.equal(eu.cluster, 'eu');
      // us: only what carries team=b. The unlabelled one comes first in the same watch: never reported.
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'unlabelled' } });
      await betaAdmin.create(configmaps(namespace), { metadata: { name: 'us-cm', labels: { team: 'b' } } });
      const us = await kd.waitForEvent(matching({ type: 'ADDED', name: 'us-cm' }));
      assert.equal(us.cluster, 'us');
      assert.deepEqual(
        kd.events.filter((event) => ['unlabelled', 'elsewhere'].includes(event.object.name)),
        [],
      );
      const metrics = await scrapeMetrics(base ?? '');
      assert.equal(
        metrics.get('kubediff_informers_running{cluster="eu"}'),
        1,
        'eu: configmaps in one namespace',
      );
      assert.equal(metrics.get('kubediff_informers_running{cluster="us"}'), 2, 'us: configmaps and secrets');
      assert.equal(metrics.get('kubediff_cluster_synced{cluster="lab"}'), 0);
      assert.equal((await kd.stop('SIGTERM')).code, 0);

      // `kubediff resources` reads the same clusters.
      const listed = await runKubediffToCompletion(['resources', '-c', config, '-o', 'json'], { env: ENV });
      assert.equal(listed.code, 1, listed.stderr);
      assert.deepEqual(
        listed.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { cluster: string; name: string; watched: boolean })
          .filter((entry) => entry.watched)
          .map((entry) => `${entry.cluster} ${entry.name}`),
        ['eu configmaps', 'us configmaps', 'us secrets'],
      );
      assert.match(
        listed.stderr,
        /kubediff: 1 of 3 clusters could not be listed \("lab"; the reasons are above\)\./,
      );
    } finally {
      await kd.stop();
      await alphaAdmin.deleteNamespace(other).catch(() => {});
    }
  });

  it('bad input: one sentence, exit 2', async () => {
    const cases: [string[], string][] = [
      [
        ['--context', 'alpha', '--context', 'nope'],
        `kubediff: context "nope" is not in kubeconfig ${kubeconfig}; known contexts: alpha, beta.`,
      ],
      [
        ['--context', 'alpha', '--context', 'alpha'],
        'kubediff: --context "alpha" is given twice; name each context once.',
      ],
      [
        ['--context', 'alpha', '--all-contexts'],
        'kubediff: --context and --all-contexts both choose the clusters to watch; pass one of them, not both.',
      ],
      [
        ['--all-contexts', '--cluster-name', 'prod'],
        'kubediff: --cluster-name names one cluster, but several contexts are watched; each cluster is named after its context, so drop --cluster-name.',
      ],
      [
        ['--all-contexts', '--state', path.join(beta.dir ?? '', 'state.db')],
        `kubediff: the state file ${path.join(beta.dir ?? '', 'state.db')} holds one cluster, but 2 are watched; use --state postgres://… for several clusters in one process, or one process (and file) per cluster.`,
      ],
      [
        ['--all-contexts', '--leader-elect'],
        'kubediff: --leader-elect elects one replica per cluster (its Lease lives in that cluster), so it watches one cluster; run one leader-elected pair per cluster, without --context repeated, --all-contexts or several clusters:.',
      ],
    ];
    const config = path.join(beta.dir ?? '', 'twice.yaml');
    await writeFile(config, 'contexts: [beta, beta]\n');
    cases.push([['-c', config], 'kubediff: contexts: "beta" is given twice; name each context once.']);
    // clusters: in the file.
    const dir = beta.dir ?? '';
    const fileCases: [string, string][] = [
      ['contexts: [alpha]\nclusters: [{context: beta}]\n', 'both'],
      ['clusters: [{name: a, context: alpha}, {name: a, context: beta}]\n', 'same-name'],
      ['clusters: [{context: alpha, namespaces: ["team-*"]}]\n', 'glob'],
      ['clusters: [{context: alpha}, {context: alpha, kubeconfig: KUBECONFIG}]\n', 'defaults'],
    ];
    const fileSentences: Record<string, RegExp> = {
      both: /contexts.*clusters: chooses the clusters to watch; drop contexts: \(or clusters:\)/,
      'same-name':
        /clusters\[1\]\.name.*"a" is the name of clusters\[0\] too; give each cluster a name of its own/,
      glob: /clusters\[0\]\.namespaces\[0\].*a glob: a cluster takes exact names/,
      defaults:
        /^kubediff: clusters: two clusters are named "alpha" \(after their contexts\); give each a name: of its own\.$/,
    };
    for (const [yaml, key] of fileCases) {
      const file = path.join(dir, `clusters-${key}.yaml`);
      await writeFile(file, yaml.replace('KUBECONFIG', kubeconfig));
      const result = await runKubediffToCompletion(['watch', '--kubeconfig', kubeconfig, '-c', file], {
        env: ENV,
      });
      assert.equal(result.code, 2, `${key}: ${result.stderr}`);
      assert.match(result.stderr.trim(), fileSentences[key] as RegExp, key);
      assert.doesNotMatch(result.stderr, /\n\s+at /, `${key}: no stack trace`);
    }
    for (const [flags, sentence] of cases) {
      const result = await runKubediffToCompletion(
        ['watch', '--kubeconfig', kubeconfig, '-o', 'json', ...flags],
        { env: ENV },
      );
      assert.equal(result.code, 2, `${flags.join(' ')}: ${result.stderr}`);
      assert.equal(result.stderr.trim(), sentence, flags.join(' '));
    }
  });
});
