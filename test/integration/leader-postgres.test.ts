// A leader-elected pair recording one cluster in PostgreSQL (issue 17, docs/state.md "A leader-elected
// pair"), against the real API server and the real PostgreSQL: the standby starts and stands by without
// claiming the cluster or writing; when the leader stops (SIGTERM) or dies (SIGKILL), the standby takes
// the claim and records, and the history then holds every change made exactly once, before, during and
// after the handover, including changes the dead leader delivered but never recorded; a leader cut off from the API server stops leading and releases the claim. A
// previous holder whose session lingers (a node lost) is ended after the lease duration. Without --leader-elect a second claimant is still refused (test/integration/state-postgres).
import assert from 'node:assert/strict';
import { after, afterEach, type TestContext, test } from 'node:test';
import pg from 'pg';
import {
  type KubediffProcess,
  killAll,
  runKubediff,
  runKubediffToCompletion,
  watchArgs,
} from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, type KubeObject, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { psql } from '../helpers/postgres.ts';
import { createTestDatabase, stateUrl, type TestDatabase } from '../helpers/postgres-env.ts';

const admin = adminClient();
const LEASE_MS = 4_000;

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
});

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;

interface Pair {
  ns: string;
  database: TestDatabase;
  url: string;
  /** A replica; `kubeconfig` to reach the API server another way (through a fault proxy). */
  replica(identity: string, kubeconfig?: string, ...extra: string[]): KubediffProcess;
  /** Every change made through it, as `type id`, in order. */
  made: string[];
  create(name: string): Promise<KubeObject>;
  patch(name: string, value: string): Promise<KubeObject>;
  remove(name: string): Promise<void>;
  /** The history of the pair's cluster in this namespace, as `type id`. */
  history(): Promise<string[]>;
}

async function pair(t: TestContext, label: string): Promise<Pair> {
  const ns = await admin.createNamespace(label);
  t.after(() => admin.deleteNamespace(ns));
  const database = await createTestDatabase(label);
  t.after(() => database.drop());
  const url = stateUrl(database.info);
  const env = { PGPASSWORD: database.info.password };
  const made: string[] = [];
  const note = (type: string, object: KubeObject) =>
    made.push(`${type} ${object.metadata.uid}:${object.metadata.resourceVersion}`);
  return {
    ns,
    database,
    url,
    made,
    replica: (identity, kubeconfig, ...extra) =>
      runKubediff(
        watchArgs(
          ns,
          ['configmaps'],
          ...(kubeconfig ? ['--kubeconfig', kubeconfig] : []),
          '--state',
          url,
          '--cluster-name',
          'pair',
          '--leader-elect',
          '--leader-election-namespace',
          ns,
          '--leader-election-identity',
          identity,
          '--leader-election-lease-duration',
          `${LEASE_MS / 1000}s`,
          '--leader-election-renew-deadline',
          '3s',
          '--leader-election-retry-period',
          '1s',
          ...extra,
        ),
        { checkEvents: true, timeoutMs: 60_000, env },
      ),
    async create(name) {
      const object = await admin.create(cmPath(ns), { metadata: { name }, data: { v: '0' } });
      note('ADDED', object);
      return object;
    },
    async patch(name, value) {
      const object = await admin.patch(cmPath(ns, name), { data: { v: value } });
      note('UPDATED', object);
      return object;
    },
    async remove(name) {
      const last = await admin.get(cmPath(ns, name));
      await admin.delete(cmPath(ns, name));
      // A deletion's event carries the object's last resourceVersion as the watch reports it.
      made.push(`DELETED ${last.metadata.uid}:`);
    },
    async history() {
      const result = await runKubediffToCompletion(
        ['history', '--state', url, '--cluster', 'pair', '-n', ns, '-o', 'json'],
        { timeoutMs: 20_000, env },
      );
      assert.equal(result.code, 0, result.stderr);
      return (
        result.stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { type: string; id: string; object: { name: string } })
          // The root CA ConfigMap a controller adds to every namespace is not one of the test's changes.
          .filter((event) => event.object.name !== 'kube-root-ca.crt')
          .map((event) => `${event.type} ${event.id}`)
      );
    },
  };
}

/** `made` against the history: each change once, nothing else (a deletion matched by uid and type). */
function assertExactlyOnce(made: readonly string[], history: readonly string[]): void {
  const normalize = (entry: string) => (entry.startsWith('DELETED ') ? entry.replace(/:[^:]*$/, ':') : entry);
  assert.deepEqual(
    [...history].map(normalize).sort(),
    [...made].sort(),
    'every change recorded exactly once',
  );
}

/** Claims held in the test's own database (pg_locks is the server's: other test files hold theirs). */
async function claimHolders(database: TestDatabase): Promise<number> {
  const count = await psql(
    database.info,
    `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${0x4b446966} AND objsubid = 2
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return Number(count.trim());
}

test('a leader-elected pair shares one database: the standby does not claim, takes over on SIGTERM, and the history has every change once', async (t) => {
  const p = await pair(t, 'pg-pair-term');
  const a = p.replica('pair-a', undefined, '--listen', '127.0.0.1:0');
  await a.waitForStderr(/became the leader/);
  await a.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/);
  const b = p.replica('pair-b', undefined, '--listen', '127.0.0.1:0');
  await b.waitForStderr(/pair-a leads; standing by/);
  // The standby runs: not refused by the claim, and holding none.
  assert.doesNotMatch(b.stderr, /already recording/);
  assert.equal(await claimHolders(p.database), 1, 'one claim: the leader');
  const recording = async (kd: KubediffProcess) =>
    (await scrapeMetrics((await kd.waitForStderr(SERVING))[1] as string)).get(
      'kubediff_state_recording{cluster="pair"}',
    );
  assert.equal(await recording(a), 1);
  assert.equal(await recording(b), 0);

  for (let i = 0; i < 5; i++) await p.create(`cm-${i}`);
  for (let i = 0; i < 5; i++) await p.patch(`cm-${i}`, '1');
  await p.remove('cm-0');
  const sentinel = await p.create('sentinel-a');
  await a.waitForEvent(
    (e) => e.object.name === 'sentinel-a' && e.object.resourceVersion === sentinel.metadata.resourceVersion,
  );

  const stopped = await a.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
  // While nobody leads, and right after.
  await p.patch('cm-1', '2');
  await p.create('during');
  await p.remove('cm-2');

  const exited = Date.now();
  await b.waitForStderr(/became the leader/, 3 * LEASE_MS);
  const [line] = await b.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader.*/, 3 * LEASE_MS);
  t.diagnostic(`${Date.now() - exited} ms from the old leader's exit to: ${line}`);
  assert.equal(await recording(b), 1);
  await p.patch('cm-3', '2');
  await p.patch('during', '1');
  const last = await p.create('sentinel-b');
  await b.waitForEvent(
    (e) => e.object.name === 'sentinel-b' && e.object.resourceVersion === last.metadata.resourceVersion,
  );
  const stoppedB = await b.stop('SIGTERM');
  assert.equal(stoppedB.code, 0, stoppedB.stderr);

  assertExactlyOnce(p.made, await p.history());
  // The snapshot is the cluster's as the new leader left it: a restart catches up from there.
  const objects = await psql(
    p.database.info,
    `SELECT name FROM kubediff_objects WHERE cluster = 'pair' AND namespace = '${p.ns}' AND name <> 'kube-root-ca.crt' ORDER BY name`,
  );
  assert.deepEqual(objects.trim().split('\n'), [
    'cm-1',
    'cm-3',
    'cm-4',
    'during',
    'sentinel-a',
    'sentinel-b',
  ]);
});

test('the leader dies (SIGKILL): the standby claims at once and records; the history has nothing twice and no gap', async (t) => {
  const p = await pair(t, 'pg-pair-kill');
  const a = p.replica('kill-a');
  await a.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/);
  const b = p.replica('kill-b');
  await b.waitForStderr(/kill-a leads; standing by/);
  for (let i = 0; i < 4; i++) await p.create(`cm-${i}`);
  for (let i = 0; i < 4; i++) await p.patch(`cm-${i}`, '1');
  const sentinel = await p.create('sentinel-a');
  await a.waitForEvent(
    (e) => e.object.name === 'sentinel-a' && e.object.resourceVersion === sentinel.metadata.resourceVersion,
  );

  await a.kill();
  await p.patch('cm-1', '2');
  await p.remove('cm-2');
  await b.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/, 4 * LEASE_MS);
  const last = await p.create('sentinel-b');
  await b.waitForEvent(
    (e) => e.object.name === 'sentinel-b' && e.object.resourceVersion === last.metadata.resourceVersion,
  );
  const stoppedB = await b.stop('SIGTERM');
  assert.equal(stoppedB.code, 0, stoppedB.stderr);
  assertExactlyOnce(p.made, await p.history());
});

test('the leader dies with deliveries it never recorded (its webhook does not answer): the new leader records them from its trail', async (t) => {
  const p = await pair(t, 'pg-pair-trail');
  // The old leader's recorder commits an event once every sink has finished with it: never, here.
  const webhook = await HttpReceiver.start({ defaultReply: { hang: true } });
  t.after(() => webhook.close());
  const a = p.replica('trail-a', undefined, '--webhook', webhook.url('/hook'));
  await a.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/);
  const b = p.replica('trail-b', undefined, '--listen', '127.0.0.1:0');
  await b.waitForStderr(/trail-a leads; standing by/);
  const metrics = (await b.waitForStderr(SERVING))[1] as string;
  /** The standby has seen `count` changes and read a checkpoint covering them all (it holds none back). */
  const covered = (count: number) =>
    waitFor(
      async () => {
        const scraped = await scrapeMetrics(metrics);
        const events = [...scraped]
          .filter(([name]) => name.startsWith('kubediff_events_total{'))
          .reduce((sum, [, value]) => sum + value, 0);
        return events >= count && scraped.get('kubediff_standby_buffer_events') === 0;
      },
      {
        timeoutMs: 10 * LEASE_MS,
        what: `the standby to have seen ${count} changes, all covered by a checkpoint`,
      },
    );
  const seen = (object: KubeObject) =>
    a.waitForEvent((e) => e.id === `${object.metadata.uid}:${object.metadata.resourceVersion}`);

  for (let i = 0; i < 3; i++) await seen(await p.create(`cm-${i}`));
  await seen(await p.patch('cm-0', '1'));
  await covered(4);
  // Later changes, covered by later checkpoints: the first ones are no longer the latest read's.
  await seen(await p.patch('cm-1', '1'));
  await covered(5);
  await seen(await p.create('cm-3'));
  await covered(6);
  assert.equal(
    (await psql(p.database.info, `SELECT count(*) FROM kubediff_events WHERE cluster = 'pair'`)).trim(),
    '0',
    'the old leader has recorded nothing (its webhook holds every event)',
  );

  await a.kill();
  await b.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/, 4 * LEASE_MS);
  const last = await p.create('sentinel-b');
  await b.waitForEvent(
    (e) => e.object.name === 'sentinel-b' && e.object.resourceVersion === last.metadata.resourceVersion,
  );
  assert.deepEqual(
    b.events.filter((e) => e.object.name.startsWith('cm-')).map((e) => e.id),
    [],
    'the new leader delivers nothing the old one had delivered',
  );
  assert.equal((await b.stop('SIGTERM')).code, 0);
  assertExactlyOnce(p.made, await p.history());
});

test('a leader cut off from the API server stops leading and releases the claim: the standby records, nothing twice', async (t) => {
  const p = await pair(t, 'pg-pair-cut');
  const { hostname, port } = new URL(testCluster().server);
  const proxy = await startFaultProxy({ target: { host: hostname, port: Number(port) } });
  t.after(() => proxy.close());
  const a = p.replica('cut-a', await admin.writeKubeconfig(proxy.url()));
  await a.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/);
  const b = p.replica('cut-b');
  await b.waitForStderr(/cut-a leads; standing by/);
  for (let i = 0; i < 3; i++) await p.create(`cm-${i}`);
  const sentinel = await p.patch('cm-0', '1');
  await a.waitForEvent((e) => e.id === `${sentinel.metadata.uid}:${sentinel.metadata.resourceVersion}`);

  proxy.blackhole(true);
  await a.waitForStderr(/lost the lease/, 3 * LEASE_MS);
  await p.patch('cm-1', '1');
  await b.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/, 4 * LEASE_MS);
  await p.remove('cm-2');
  const last = await p.create('sentinel-b');
  await b.waitForEvent(
    (e) => e.object.name === 'sentinel-b' && e.object.resourceVersion === last.metadata.resourceVersion,
  );
  // Back online, the old leader stands by: it neither delivers nor records what it now sees.
  proxy.blackhole(false);
  await a.waitForStderr(/cut-b leads; standing by/, 3 * LEASE_MS);
  const late = await p.patch('cm-0', '2');
  await b.waitForEvent((e) => e.id === `${late.metadata.uid}:${late.metadata.resourceVersion}`);
  assert.equal((await a.stop('SIGTERM')).code, 0);
  assert.equal((await b.stop('SIGTERM')).code, 0);
  assert.equal(
    a.events.filter((e) => e.id === `${late.metadata.uid}:${late.metadata.resourceVersion}`).length,
    0,
  );
  assertExactlyOnce(p.made, await p.history());
});

test('a previous holder whose session lingers is ended after the lease duration, then the new leader records', async (t) => {
  const p = await pair(t, 'pg-pair-fence');
  // A session that holds the pair's claim and never lets go: a leader on a node that vanished.
  const stale = new pg.Client({ connectionString: p.database.url });
  await stale.connect();
  const ended = new Promise<Error>((resolve) => stale.on('error', resolve));
  t.after(() => stale.end().catch(() => undefined));
  await stale.query('SELECT pg_advisory_lock($1, hashtext($2))', [0x4b446966, 'pair']);

  const a = p.replica('fence-a');
  await a.waitForStderr(/became the leader/);
  await a.waitForStderr(/state: waiting for the previous leader to commit and release/);
  await p.create('while-waiting');
  await a.waitForStderr(/ended its database session/, 4 * LEASE_MS);
  assert.match((await ended).message, /terminat/i);
  await a.waitForStderr(/state: recording in postgres:\/\/\S+ as the leader/, 2 * LEASE_MS);
  const last = await p.create('sentinel');
  await a.waitForEvent(
    (e) => e.object.name === 'sentinel' && e.object.resourceVersion === last.metadata.resourceVersion,
  );
  const stopped = await a.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
  assertExactlyOnce(p.made, await p.history());
  await waitFor(async () => (await claimHolders(p.database)) === 0, {
    timeoutMs: 5_000,
    what: 'the claim to be released',
  });
});
