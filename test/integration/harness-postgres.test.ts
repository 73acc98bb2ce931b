// Proves the PostgreSQL test server the state store's tests will rely on: a database of its own per test
// file, tables written and read back, TLS that a client can verify, and a server of a test's own that
// stops and restarts with its data.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { psql, startPostgres } from '../helpers/postgres.ts';
import { createTestDatabase, testPostgres } from '../helpers/postgres-env.ts';

const server = testPostgres();
const database = await createTestDatabase('harness postgres');
after(() => database.drop());

test('a database of its own: a table is created, written and read back', async () => {
  await psql(
    database.info,
    `CREATE TABLE events (id bigserial PRIMARY KEY, uid text NOT NULL, change jsonb NOT NULL);
     INSERT INTO events (uid, change) VALUES ('u-1', '{"path": "spec.replicas", "from": 1, "to": 3}'),
                                             ('u-2', '{"path": "data.color", "from": "blue", "to": "red"}');`,
  );
  const rows = await psql(
    database.info,
    `SELECT uid, change->>'path', change->>'to' FROM events ORDER BY id`,
  );
  assert.deepEqual(rows.trim().split('\n'), ['u-1|spec.replicas|3', 'u-2|data.color|red']);

  // Another test file's database does not see this one's tables.
  const other = await createTestDatabase('harness postgres other');
  try {
    const tables = await psql(other.info, `SELECT count(*) FROM pg_tables WHERE tablename = 'events'`);
    assert.equal(tables.trim(), '0');
  } finally {
    await other.drop();
  }
  const left = await psql(server, `SELECT count(*) FROM pg_database WHERE datname = '${other.name}'`);
  assert.equal(left.trim(), '0');
});

test('the server speaks TLS with a certificate its CA verifies (sslmode=verify-full)', {
  skip: server.caFile ? undefined : 'an existing server (KUBEDIFF_TEST_POSTGRES_URL) brings its own TLS',
}, async () => {
  const url = new URL(database.url);
  url.searchParams.set('sslmode', 'verify-full');
  url.searchParams.set('sslrootcert', server.caFile as string);
  const ssl = await psql(
    { ...database.info, url: url.href },
    'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
  );
  assert.equal(ssl.trim(), 't');
  // Without the password, the server refuses (it really authenticates).
  await assert.rejects(
    psql({ ...database.info, password: 'wrong' }, 'SELECT 1'),
    /password authentication failed/,
  );
});

test('a server of its own stops and restarts with its data on the same port', async () => {
  const own = await startPostgres({ label: 'harness-postgres-restart' });
  after(() => own.stop());
  await psql(own, `CREATE TABLE marks (name text); INSERT INTO marks VALUES ('before')`);

  await own.stopServer();
  await assert.rejects(psql(own, 'SELECT 1'), /Connection refused|could not connect/);
  await own.startServer();
  await psql(own, `INSERT INTO marks VALUES ('after')`);

  await own.stopServer({ crash: true });
  await own.startServer();
  const marks = await psql(own, 'SELECT name FROM marks ORDER BY name');
  assert.deepEqual(marks.trim().split('\n'), ['after', 'before']);
});
