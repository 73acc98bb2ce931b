// --state postgres://… against the real API server and a real PostgreSQL 15 (issue 17, docs/state.md):
// two processes recording two clusters in one database, each catching up only from its own snapshot;
// a third claiming a cluster already recorded is refused; the history across the fleet with --cluster;
// the database stopped during churn and restarted (nothing lost within the bound, nothing twice); a
// database of the previous schema migrated by `kubediff migrate`; after a kill -9, the replay of what the
// database did not record (docs/state.md, "The replay"). The password is never printed.
//
// The two "clusters" are two cluster names (--cluster-name) on the test API server: their snapshots,
// claims and history are kept apart by name, which is what the database sees.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, type TestContext, test } from 'node:test';
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from '../../src/state/postgres-migrations.ts';
import { PostgresStateStore } from '../../src/state/postgres-store.ts';
import { killAll, runKubediff, runKubediffToCompletion, WATCHING, watchArgs } from '../helpers/cli.ts';
import { gatedFirstRun } from '../helpers/gated-first-run.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeObject, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { psql, startPostgres } from '../helpers/postgres.ts';
import { createTestDatabase, stateUrl } from '../helpers/postgres-env.ts';

const admin = adminClient();
const dir = mkdtempSync(join(tmpdir(), 'kubediff-pg-it-'));

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
  rmSync(dir, { recursive: true, force: true });
});

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;
const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;

async function namespaceFor(t: TestContext, prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  t.after(() => admin.deleteNamespace(ns));
  return ns;
}

function assertNoPassword(password: string, outputs: Record<string, string>): void {
  for (const [name, text] of Object.entries(outputs))
    assert.ok(!text.includes(password), `the database password appears in ${name}`);
}

test('two processes, two clusters, one database: each catches up only from its own snapshot; a second claim is refused; history sees both', async (t) => {
  const ns = await namespaceFor(t, 'pg-fleet');
  const database = await createTestDatabase('state fleet');
  t.after(() => database.drop());
  const url = stateUrl(database.info);
  const env = { PGPASSWORD: database.info.password };
  const watch = (cluster: string) =>
    runKubediff(watchArgs(ns, ['configmaps'], '--state', url, '--cluster-name', cluster), {
      checkEvents: true,
      timeoutMs: 30_000,
      env,
    });
  await admin.create(cmPath(ns), { metadata: { name: 'shared' }, data: { k: '1' } });

  const alpha = watch('alpha');
  const beta = watch('beta');
  await alpha.waitForStderr(WATCHING);
  await beta.waitForStderr(WATCHING);
  // Said once the baseline is committed (the informers wait for it), which may follow WATCHING.
  await alpha.waitForStderr(/recording state in postgres:\/\/127\.0\.0\.1:\d+\/kubediff_test_state_fleet_/);

  // A third process for a cluster already recorded: one sentence, exit 1, nothing recorded.
  const intruder = await runKubediffToCompletion(
    watchArgs(ns, ['configmaps'], '--state', url, '--cluster-name', 'alpha'),
    { timeoutMs: 30_000, env },
  );
  assert.equal(intruder.code, 1, intruder.stderr);
  assert.equal(
    intruder.stderr.trim(),
    `kubediff: another kubediff is already recording cluster "alpha" in postgres://127.0.0.1:${database.info.port}/${database.name}; run one kubediff per cluster (stop the other, name this one's cluster differently with --cluster-name, or run both with --leader-elect so that only the leader records).`,
  );

  const live = await admin.patch(cmPath(ns, 'shared'), { data: { k: '2' } });
  await alpha.waitForEvent((e) => e.id === id(live) && e.cluster === 'alpha', {
    description: 'alpha UPDATED',
  });
  await beta.waitForEvent((e) => e.id === id(live) && e.cluster === 'beta', { description: 'beta UPDATED' });
  const alphaExit = await alpha.stop();
  const betaExit = await beta.stop();
  assert.equal(alphaExit.code, 0, alphaExit.stderr);
  assert.equal(betaExit.code, 0, betaExit.stderr);

  // While both are down, one change.
  const offline = await admin.patch(cmPath(ns, 'shared'), { data: { k: '3' } });
  const added = await admin.create(cmPath(ns), { metadata: { name: 'fresh' }, data: { f: '1' } });

  // alpha again: its own snapshot, so the change once, offline, with the exact diff.
  const alpha2 = watch('alpha');
  await alpha2.waitForStderr(/catching up from postgres:/);
  await alpha2.waitForEvent((e) => e.id === id(added) && e.type === 'ADDED' && e.offline === true, {
    description: 'alpha: fresh ADDED offline',
  });
  const alphaUpdate = await alpha2.waitForEvent((e) => e.id === id(offline), {
    description: 'alpha: UPDATED offline',
  });
  assert.equal(alphaUpdate.offline, true);
  assert.deepEqual(alphaUpdate.changes, [
    { op: 'replace', path: '/data/k', from: '2', to: '3', manager: ADMIN_FIELD_MANAGER },
  ]);
  await alpha2.waitForStderr(WATCHING);
  // A later live change (a sentinel): nothing else was reported before it.
  const sentinel = await admin.patch(cmPath(ns, 'shared'), { data: { k: '4' } });
  await alpha2.waitForEvent((e) => e.id === id(sentinel), { description: 'alpha: sentinel' });
  const alpha2Exit = await alpha2.stop();
  assert.equal(alpha2Exit.code, 0, alpha2Exit.stderr);
  assert.deepEqual(
    alpha2.events.map((e) => `${e.type} ${e.object.name} ${e.offline ? 'offline' : 'live'}`),
    ['ADDED fresh offline', 'UPDATED shared offline', 'UPDATED shared live'],
    'alpha reports what changed since its own last run, once',
  );

  // beta's snapshot was not touched by alpha's catch-up: it reports the gap from its own last state (k: 2 → 4).
  const beta2 = watch('beta');
  const betaUpdate = await beta2.waitForEvent((e) => e.object.name === 'shared' && e.type === 'UPDATED', {
    description: 'beta: UPDATED offline',
  });
  assert.equal(betaUpdate.offline, true);
  assert.deepEqual(betaUpdate.changes, [
    { op: 'replace', path: '/data/k', from: '2', to: '4', manager: ADMIN_FIELD_MANAGER },
  ]);
  await beta2.waitForStderr(WATCHING);
  const beta2Exit = await beta2.stop();
  assert.equal(beta2Exit.code, 0, beta2Exit.stderr);

  // The fleet's history: both clusters, in order; --cluster narrows it (globs too).
  const history = async (...args: string[]) => {
    const result = await runKubediffToCompletion(['history', '--state', url, '-o', 'json', ...args], {
      timeoutMs: 20_000,
      env,
    });
    assert.equal(result.code, 0, result.stderr);
    return result;
  };
  const all = await history('-n', ns);
  const rows = all.stdout
    .trim()
    .split('\n')
    .map(
      (line) =>
        JSON.parse(line) as { cluster: string; type: string; object: { name: string }; offline?: boolean },
    );
  assert.deepEqual(
    rows.map((e) => `${e.cluster} ${e.type} ${e.object.name}${e.offline ? ' offline' : ''}`),
    [
      // Runs 1 (alpha and beta, in the order they recorded), then alpha's and beta's catch-ups.
      ...rows.slice(0, 2).map((e) => `${e.cluster} UPDATED shared`),
      'alpha ADDED fresh offline',
      'alpha UPDATED shared offline',
      'alpha UPDATED shared',
      'beta ADDED fresh offline',
      'beta UPDATED shared offline',
    ],
  );
  assert.deepEqual(
    rows
      .slice(0, 2)
      .map((e) => e.cluster)
      .sort(),
    ['alpha', 'beta'],
  );
  const onlyBeta = await history('--cluster', 'be*', '-n', ns);
  assert.deepEqual(
    onlyBeta.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { cluster: string }).cluster),
    ['beta', 'beta', 'beta'],
  );
  const tail = await history('--cluster', 'alpha', '--tail', '1', '-n', ns, 'cm/shared');
  assert.equal((JSON.parse(tail.stdout) as { id: string }).id, id(sentinel));

  assertNoPassword(database.info.password, {
    'alpha stdout': alpha.stdout + alpha2.stdout,
    'alpha stderr': alpha.stderr + alpha2.stderr,
    'beta stdout': beta.stdout + beta2.stdout,
    'beta stderr': beta.stderr + beta2.stderr,
    'the refused process': intruder.stdout + intruder.stderr,
    history: all.stdout + all.stderr + onlyBeta.stdout + tail.stdout,
  });
});

test('a first run killed the moment it says it records state is caught up by the next, though a webhook held an event queued before its baseline', async (t) => {
  const ns = await namespaceFor(t, 'pg-first-run');
  const database = await createTestDatabase('state first run');
  t.after(() => database.drop());
  const url = stateUrl(database.info);
  const env = { PGPASSWORD: database.info.password };
  await Promise.all(
    ['a', 'b', 'c'].map((name) => admin.create(cmPath(ns), { metadata: { name }, data: { v: '0' } })),
  );
  // One cluster name for both runs (the first talks to the API server through a front of its own).
  const cluster = ['--cluster-name', 'first-run'];
  const { watch: first } = await gatedFirstRun(t, { ns, state: url, env, extra: cluster });
  await first.kill();

  // While it is down: one changed, one created, one deleted.
  const changed = await admin.patch(cmPath(ns, 'a'), { data: { v: '1' } });
  const created = await admin.create(cmPath(ns), { metadata: { name: 'd' }, data: { v: '0' } });
  const deleted = await admin.get(cmPath(ns, 'b'));
  await admin.delete(cmPath(ns, 'b'));
  const second = runKubediff(watchArgs(ns, ['configmaps', 'secrets'], '--state', url, ...cluster), {
    checkEvents: true,
    timeoutMs: 30_000,
    env,
  });
  await second.waitForStderr(/catching up from postgres:/);
  await second.waitForEvent((e) => e.id === id(changed) && e.offline === true, { description: 'a UPDATED' });
  await second.waitForEvent((e) => e.id === id(created) && e.type === 'ADDED' && e.offline === true, {
    description: 'd ADDED',
  });
  await second.waitForEvent(
    (e) => e.type === 'DELETED' && e.object.uid === deleted.metadata.uid && e.offline === true,
    { description: 'b DELETED' },
  );
  await second.stop();
});

test('killed before it recorded an ADDED, the object deleted meanwhile: the next start replays it, ADDED and DELETED; the database follows each type only as far as it committed', async (t) => {
  const ns = await namespaceFor(t, 'pg-replay');
  const database = await createTestDatabase('state replay');
  t.after(() => database.drop());
  const url = stateUrl(database.info);
  const env = { PGPASSWORD: database.info.password };
  const cluster = ['--cluster-name', 'replay'];
  /** 'listed|point' of configmaps, the point this namespace's (with -n, one per namespace). */
  const followed = async () => {
    const [listed, stored = ''] = (
      await psql(
        database.info,
        "SELECT listed, resource_version FROM kubediff_resources WHERE cluster = 'replay' AND resource = 'configmaps'",
      )
    )
      .trim()
      .split('|');
    const point = stored.startsWith('{') ? (JSON.parse(stored) as Record<string, string>)[ns] : stored;
    return `${listed}|${point}`;
  };
  // A webhook that takes nothing: what it holds is on stdout, never committed.
  const stuck = await HttpReceiver.start({ defaultReply: { hang: true } });
  t.after(() => stuck.close());
  const watch = (extra: string[]) =>
    runKubediff(watchArgs(ns, ['configmaps'], '--state', url, ...cluster, ...extra), {
      checkEvents: true,
      timeoutMs: 30_000,
      env,
    });
  const first = watch(['--webhook', stuck.url('/hook')]);
  await first.waitForStderr(WATCHING);
  const listed = await waitFor(async () => ((await followed()).startsWith('t|') ? followed() : undefined), {
    what: 'the ConfigMaps baseline committed',
  });
  const shortLived = await admin.create(cmPath(ns), { metadata: { name: 'short-lived' }, data: { k: 'v' } });
  await first.waitForEvent((e) => e.id === id(shortLived), { description: 'short-lived ADDED on stdout' });
  await stuck.waitForRequests(1);
  await first.kill();
  assert.equal(await followed(), listed, 'not followed past what is committed');
  await admin.delete(cmPath(ns, 'short-lived'));

  const second = watch([]);
  const gone = await second.waitForEvent(
    (e) => e.type === 'DELETED' && e.object.uid === shortLived.metadata.uid,
    { description: 'short-lived DELETED, replayed' },
  );
  const sentinel = await admin.create(cmPath(ns), { metadata: { name: 'sentinel' } });
  await second.waitForEvent((e) => e.id === id(sentinel), { description: 'sentinel ADDED' });
  const exit = await second.stop();
  assert.equal(exit.code, 0, exit.stderr);
  assert.deepEqual(
    second.events
      .filter((e) => e.object.name === 'short-lived')
      .map((e) => `${e.type} ${e.id}${e.offline ? ' offline' : ''}`),
    [`ADDED ${id(shortLived)} offline`, `DELETED ${gone.id} offline`],
  );
  // Followed as far as the sentinel, the last change committed; short-lived has no row, its events do.
  assert.equal(await followed(), `t|${sentinel.metadata.resourceVersion}`);
  const rows = await psql(
    database.info,
    `SELECT (SELECT count(*) FROM kubediff_objects WHERE cluster = 'replay' AND name = 'short-lived'), (SELECT count(*) FROM kubediff_events WHERE cluster = 'replay' AND name = 'short-lived')`,
  );
  assert.equal(rows.trim(), '0|2');
});

test('the database stopped during churn and restarted: watching goes on, the history is complete and has nothing twice', async (t) => {
  const ns = await namespaceFor(t, 'pg-down');
  const own = await startPostgres({ label: 'state-postgres-down' });
  t.after(() => own.stop());
  const url = stateUrl(own);
  const env = { PGPASSWORD: own.password };
  const kd = runKubediff(watchArgs(ns, ['configmaps'], '--state', url, '--cluster-name', 'churn'), {
    checkEvents: true,
    timeoutMs: 30_000,
    env,
  });
  await kd.waitForStderr(WATCHING);
  const ids: string[] = [];
  const create = async (name: string) => {
    const object = await admin.create(cmPath(ns), { metadata: { name }, data: { n: name } });
    ids.push(id(object));
    await kd.waitForEvent((e) => e.id === id(object), { description: `${name} ADDED` });
  };
  for (let i = 0; i < 10; i++) await create(`before-${i}`);

  await own.stopServer();
  // Down: every change is still reported at once.
  for (let i = 0; i < 20; i++) await create(`down-${i}`);
  await kd.waitForStderr(
    /state: cannot write to postgres:\/\/127\.0\.0\.1:\d+\/postgres: .*kept \(up to 64 MiB\)/,
  );
  await own.startServer();
  await kd.waitForStderr(/state: postgres:\/\/127\.0\.0\.1:\d+\/postgres is reachable again/);
  for (let i = 0; i < 5; i++) await create(`after-${i}`);
  const exit = await kd.stop();
  assert.equal(exit.code, 0, exit.stderr);

  const recorded = await psql(
    own,
    `SELECT id, count(*) FROM kubediff_events WHERE cluster = 'churn' AND namespace = '${ns}' GROUP BY id ORDER BY min(seq)`,
  );
  const rows = recorded
    .trim()
    .split('\n')
    .map((line) => line.split('|'));
  assert.deepEqual(
    rows.map(([recordedId]) => recordedId),
    ids,
    'every reported change recorded, in order',
  );
  assert.ok(
    rows.every(([, count]) => count === '1'),
    'nothing recorded twice',
  );
  const objects = await psql(
    own,
    `SELECT count(*) FROM kubediff_objects WHERE cluster = 'churn' AND namespace = '${ns}'`,
  );
  assert.equal(objects.trim(), '35');
  assert.ok(!(kd.stdout + kd.stderr).includes(own.password), 'the password is never printed');
});

test('the database down beyond the backlog bound: the oldest writes are dropped, counted and logged once; the next start reports their objects again', async (t) => {
  const ns = await namespaceFor(t, 'pg-bound');
  const own = await startPostgres({ label: 'state-postgres-bound' });
  t.after(() => own.stop());
  const url = stateUrl(own);
  const env = { PGPASSWORD: own.password, KUBEDIFF_STATE_MAX_BACKLOG: '64KB' };
  const args = watchArgs(
    ns,
    ['configmaps'],
    '--state',
    url,
    '--cluster-name',
    'bound',
    '--listen',
    '127.0.0.1:0',
  );
  const kd = runKubediff(args, { checkEvents: true, timeoutMs: 30_000, env });
  await kd.waitForStderr(WATCHING);
  const base = (await kd.waitForStderr(SERVING))[1] as string;

  await own.stopServer();
  // 40 objects of ~4 KiB while the database is down: three times the bound. All are reported at once.
  const names: string[] = [];
  for (let i = 0; i < 40; i++) {
    const object = await admin.create(cmPath(ns), {
      metadata: { name: `big-${i}` },
      data: { v: String(i).repeat(4000) },
    });
    names.push(object.metadata.name);
    await kd.waitForEvent((e) => e.id === id(object), { description: `big-${i} ADDED` });
  }
  await kd.waitForStderr(
    /state: postgres:\/\/127\.0\.0\.1:\d+\/postgres has not taken the changes of the last 64 KiB; the oldest are dropped/,
  );
  await own.startServer();
  await kd.waitForStderr(/is reachable again/);
  const sentinel = await admin.create(cmPath(ns), { metadata: { name: 'sentinel' }, data: { k: 'v' } });
  await kd.waitForEvent((e) => e.id === id(sentinel), { description: 'sentinel ADDED' });
  const dropped =
    (await scrapeMetrics(base)).get('kubediff_state_dropped_writes_total{cluster="bound"}') ?? 0;
  assert.ok(dropped > 0, `${dropped} writes counted as dropped`);
  const exit = await kd.stop();
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(exit.stderr.match(/has not taken the changes/g)?.length, 1, 'logged once');

  // What could not be recorded is found again by the next start: each of the 40 is recorded or reported.
  const recorded = new Set(
    (await psql(own, `SELECT name FROM kubediff_objects WHERE cluster = 'bound' AND namespace = '${ns}'`))
      .trim()
      .split('\n'),
  );
  const missing = names.filter((name) => !recorded.has(name));
  assert.ok(missing.length > 0, 'some objects were dropped from the snapshot');
  const again = runKubediff(args, { checkEvents: true, timeoutMs: 30_000, env });
  await again.waitForStderr(WATCHING);
  const marker = await admin.create(cmPath(ns), { metadata: { name: 'marker' }, data: { k: 'v' } });
  await again.waitForEvent((e) => e.id === id(marker), { description: 'marker ADDED' });
  const againExit = await again.stop();
  assert.equal(againExit.code, 0, againExit.stderr);
  assert.deepEqual(
    again.events
      .filter((e) => e.offline)
      .map((e) => `${e.type} ${e.object.name}`)
      .sort(),
    missing.map((name) => `ADDED ${name}`).sort(),
  );
});

test('a database of the previous schema is migrated by `kubediff migrate`; history refuses it until then, then reads it', async (t) => {
  const database = await createTestDatabase('state migrate');
  t.after(() => database.drop());
  const event = {
    id: 'u-1:7',
    type: 'ADDED',
    time: '2026-01-01T00:00:00.000Z',
    cluster: 'old',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'ns',
      name: 'cm',
      uid: 'u-1',
      resourceVersion: '7',
    },
  };
  await psql(
    database.info,
    `${POSTGRES_MIGRATIONS[0]}
     CREATE TABLE kubediff_schema (version integer NOT NULL); INSERT INTO kubediff_schema VALUES (1);
     INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event)
       VALUES ('old', 'u-1:7', '2026-01-01T00:00:00Z', 'ADDED', 'configmaps', 'ns', 'cm', '${JSON.stringify(event)}');`,
  );
  // The password from a file (a mounted Secret), named by the config file.
  const passwordFile = join(dir, 'pg-password');
  writeFileSync(passwordFile, `${database.info.password}\n`, { mode: 0o600 });
  const config = join(dir, 'state.yaml');
  writeFileSync(config, `state:\n  path: ${stateUrl(database.info)}\n  passwordFile: ${passwordFile}\n`);
  const noEnv = { PGPASSWORD: undefined };

  const refused = await runKubediffToCompletion(['history', '-c', config], { timeoutMs: 20_000, env: noEnv });
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(
    refused.stderr,
    /has an older schema \(1\); run `kubediff migrate --state <this URL>` first\.\n$/,
  );

  const migrated = await runKubediffToCompletion(['migrate', '-c', config], {
    timeoutMs: 20_000,
    env: noEnv,
  });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.equal(
    migrated.stdout,
    `migrated postgres://127.0.0.1:${database.info.port}/${database.name} from schema 1 to ${POSTGRES_SCHEMA_VERSION}.\n`,
  );
  const again = await runKubediffToCompletion(['migrate', '-c', config], { timeoutMs: 20_000, env: noEnv });
  assert.match(again.stdout, new RegExp(`is at schema ${POSTGRES_SCHEMA_VERSION} already\\.\n$`));
  const indexes = await psql(
    database.info,
    `SELECT indexname FROM pg_indexes WHERE tablename = 'kubediff_events' ORDER BY 1`,
  );
  assert.match(indexes, /kubediff_events_object/);

  const history = await runKubediffToCompletion(['history', '-c', config, '-o', 'json', 'configmaps/cm'], {
    timeoutMs: 20_000,
    env: noEnv,
  });
  assert.equal(history.code, 0, history.stderr);
  assert.deepEqual(JSON.parse(history.stdout), event);

  // A password in the URL is refused without being printed.
  const inUrl = new URL(database.info.url);
  const leaky = await runKubediffToCompletion(['history', '--state', inUrl.href], { timeoutMs: 20_000 });
  assert.equal(leaky.code, 2);
  assert.match(leaky.stderr, /carries a password; remove it and give it in PGPASSWORD/);
  assertNoPassword(database.info.password, {
    migrate: migrated.stdout + migrated.stderr + refused.stderr,
    history: history.stdout + history.stderr + leaky.stdout + leaky.stderr,
  });
});

test("a new leader's fence ends only the session holding its own database's claim, not another database's of the same cluster name", async (t) => {
  // Two installs on one server, each in a database of its own, both naming their cluster "prod".
  const mine = await createTestDatabase('state fence mine');
  const theirs = await createTestDatabase('state fence theirs');
  t.after(() => Promise.all([mine.drop(), theirs.drop()]));
  const env = process.env.PGPASSWORD;
  process.env.PGPASSWORD = mine.info.password;
  t.after(() => {
    process.env.PGPASSWORD = env;
  });
  const holder = await PostgresStateStore.open({ url: stateUrl(theirs.info) }, 'prod');
  t.after(() => holder.close());
  const standby = await PostgresStateStore.open({ url: stateUrl(mine.info) }, 'prod', { claim: false });
  t.after(() => standby.close());
  assert.equal(await standby.fence(), 0, 'no session of this database holds the claim');
  // The other install's session is alive and still holds its claim.
  assert.deepEqual(await holder.resources(), []);
  assert.equal(await standby.claim(), true, 'claims are per database: this one was free');
});
