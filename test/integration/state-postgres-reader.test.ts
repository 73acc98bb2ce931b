// The history readers of a PostgreSQL state (`kubediff history`, `kubediff ui`: PostgresHistory, which the
// UI's PostgresTimelineReader queries through) against a real PostgreSQL 15: each statement is bounded by
// the server, so one that runs too long is cancelled there (pg_stat_activity shows it gone), not only
// abandoned by kubediff while it keeps the shared database busy; and the reader's transactions are
// read-only, so it cannot write whatever it is asked to run.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { PostgresStateOptions } from '../../src/state/postgres-connection.ts';
import { PostgresHistory, QueryTimeout } from '../../src/state/postgres-history.ts';
import { migratePostgres } from '../../src/state/postgres-migrations.ts';
import { psql } from '../helpers/postgres.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres-env.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-pg-reader-'));
let database: TestDatabase;
let options: PostgresStateOptions;

before(async () => {
  database = await createTestDatabase('state reader');
  // The URL without its password, which comes from a file (as state.passwordFile gives it).
  const url = new URL(database.url);
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, decodeURIComponent(url.password), { mode: 0o600 });
  url.password = '';
  if (database.info.caFile) {
    url.searchParams.set('sslmode', 'verify-full');
    url.searchParams.set('sslrootcert', database.info.caFile);
  }
  options = { url: url.href, passwordFile };
  await migratePostgres(options);
});
after(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** Statements of other sessions still running that contain `marker`. */
async function running(marker: string): Promise<number> {
  const count = await psql(
    database.info,
    `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%${marker}%'`,
  );
  return Number(count.trim());
}

test('a query past the statement timeout is cancelled by the server, and the reader goes on', async (t) => {
  const history = await PostgresHistory.open(options, { statementTimeoutMs: 300 });
  t.after(() => history.close());
  const marker = `kubediff_reader_${randomBytes(4).toString('hex')}`;
  // Far longer than any bound: if only the client gave up, the statement would still be running after.
  const error = await history.select(`SELECT pg_sleep(120), '${marker}' AS marker`).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  assert.equal(await running(marker), 0, 'the statement is no longer running on the server');
  assert.ok(error instanceof QueryTimeout, `a QueryTimeout, got ${String(error)}`);
  assert.match(
    error.message,
    /^a history query ran longer than 300ms and was cancelled by postgres:\/\/127\.0\.0\.1:\d+\/kubediff_test_state_reader_\w+; narrow it/,
  );
  // The same connection answers the next query.
  assert.deepEqual(await history.select<{ one: number }>('SELECT 1 AS one'), [{ one: 1 }]);
  const [{ timeout } = { timeout: '' }] = await history.select<{ timeout: string }>(
    'SELECT current_setting($1) AS timeout',
    ['statement_timeout'],
  );
  assert.equal(timeout, '300ms');
});

test('the reader cannot write: its transactions are read-only', async (t) => {
  const history = await PostgresHistory.open(options);
  t.after(() => history.close());
  await assert.rejects(
    history.select("INSERT INTO kubediff_meta (cluster, key, value) VALUES ('reader', 'k', 'v')"),
    (error: unknown) => {
      assert.equal((error as { code?: string }).code, '25006', String(error));
      assert.match(String(error), /cannot execute INSERT in a read-only transaction/);
      return true;
    },
  );
  await assert.rejects(history.select('DELETE FROM kubediff_schema'), /read-only transaction/);
  assert.equal(
    (await psql(database.info, "SELECT count(*) FROM kubediff_meta WHERE cluster = 'reader'")).trim(),
    '0',
  );
  assert.equal((await psql(database.info, 'SELECT count(*) FROM kubediff_schema')).trim(), '1');
  // The default bound: 30 s, set by the server.
  const [{ timeout } = { timeout: '' }] = await history.select<{ timeout: string }>(
    'SELECT current_setting($1) AS timeout',
    ['statement_timeout'],
  );
  assert.equal(timeout, '30s');
});

test('callers that come while the connection is re-opened share one connection, never open one each', async (t) => {
  const history = await PostgresHistory.open(options);
  t.after(() => history.close());
  const sessions = async () =>
    Number(
      (
        await psql(
          database.info,
          `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'kubediff'`,
        )
      ).trim(),
    );
  assert.equal(await sessions(), 1);
  // The server ends the session; the reader hears of it (its own listener came first) and forgets it.
  const [pid, broken] = await history.read(async (client) => {
    const ended = new Promise<void>((resolve) => client.once('error', () => resolve()));
    const row = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return [row.rows[0]?.pid, ended] as const;
  });
  await psql(database.info, `SELECT pg_terminate_backend(${pid})`);
  await broken;
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, i) => history.select<{ n: number }>(`SELECT ${i} AS n`)),
  );
  assert.deepEqual(
    answers.map((rows) => rows[0]?.n),
    [0, 1, 2, 3],
  );
  assert.equal(await sessions(), 1, 'one session for the four callers');
});
