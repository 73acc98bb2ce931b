// What every PostgreSQL state connection shares (src/state/postgres-connection.ts), without a database:
// which failures are worth retrying, and a URL that carries a password refused before anything connects.
// The connection itself, the migrations and the queries are tested against a real PostgreSQL
// (test/integration/state-postgres*.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import {
  isCancelled,
  isConnectionInDoubt,
  isTransientPostgresError,
} from '../../../src/state/postgres-connection.ts';
import { PostgresHistory } from '../../../src/state/postgres-history.ts';
import { ClaimLost } from '../../../src/state/store.ts';
import { UsageError } from '../../../src/util/errors.ts';

const failure = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('transient: the database unreachable, restarting, overloaded, or a transaction to repeat; not a refusal', () => {
  for (const code of ['08006', '57P01', '57P03', '53300', '40001', '40P01', 'ECONNREFUSED', 'EAI_AGAIN'])
    assert.equal(isTransientPostgresError(failure(code)), true, code);
  assert.equal(isTransientPostgresError(new Error('Query read timeout')), true);
  assert.equal(isTransientPostgresError(new Error('Connection terminated unexpectedly')), true);
  for (const code of ['23505', '42P01', '28P01', '25006'])
    assert.equal(isTransientPostgresError(failure(code)), false, code);
  assert.equal(isTransientPostgresError(new ClaimLost('another kubediff took over')), false);
  assert.equal(isTransientPostgresError(new UsageError('bad password file')), false);
});

test('in doubt, not to be used again: a connection broken, ended by the server, or silent; not a statement refused under contention', () => {
  for (const code of ['08006', '08003', '57P01', '57P02', '25P03', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'])
    assert.equal(isConnectionInDoubt(failure(code)), true, code);
  for (const message of [
    'Query read timeout',
    'Connection terminated unexpectedly',
    'Connection terminated due to connection timeout',
    'Client has encountered a connection error and is not queryable',
  ])
    assert.equal(isConnectionInDoubt(new Error(message)), true, message);
  // Retried, but on the same connection after a ROLLBACK: the server refused a statement, the session is sound.
  for (const [code, message] of [
    ['55P03', 'canceling statement due to lock timeout'],
    ['57014', 'canceling statement due to statement timeout'],
    ['40001', 'could not serialize access due to concurrent update'],
    ['40P01', 'deadlock detected'],
    ['23505', 'duplicate key value violates unique constraint'],
  ] as const)
    assert.equal(isConnectionInDoubt(failure(code, message)), false, code);
  assert.equal(isConnectionInDoubt(new ClaimLost('another kubediff took over')), false);
});

test('a statement the server cancelled is told apart (the session is still sound)', () => {
  assert.equal(isCancelled(failure('57014', 'canceling statement due to statement timeout')), true);
  assert.equal(isCancelled(failure('57P01')), false);
  assert.equal(isCancelled(undefined), false);
});

test('a URL that carries a password is refused in one sentence that does not echo it, before connecting', async () => {
  for (const url of [
    'postgres://kd:hunter2@db.example:5432/state',
    'postgres://db.example/state?password=hunter2',
  ]) {
    await assert.rejects(PostgresHistory.open({ url }), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.equal(exitCodeOf(error), EXIT_USAGE);
      assert.match(
        error.message,
        /^the --state URL for postgres:\/\/db\.example(:5432)?\/state carries a password/,
      );
      assert.doesNotMatch(error.message, /hunter2/);
      return true;
    });
  }
});
