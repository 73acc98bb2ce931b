// The test PostgreSQL server, as seen from inside a test process. scripts/run-tests.ts (npm test)
// starts one per run when a selected test file imports this module, and passes its description (a JSON
// PostgresInfo) in KUBEDIFF_TEST_POSTGRES; KUBEDIFF_TEST_POSTGRES_URL makes it use an existing server.
//
// Each test file takes a database of its own, so files running side by side never see each other's
// tables:
//   const db = await createTestDatabase('history');
//   after(() => db.drop());
//   ... connect to db.url ...
import { randomBytes } from 'node:crypto';
import { type PostgresInfo, psql } from './postgres.ts';
import { readRunDescription } from './run-description.ts';

let cached: PostgresInfo | undefined;

/** The server this test run uses. Throws when the test was not started by `npm test`. */
export function testPostgres(): PostgresInfo {
  cached ??= readRunDescription<PostgresInfo>(
    'KUBEDIFF_TEST_POSTGRES',
    'the test PostgreSQL server',
    (info) => (typeof info.url !== 'string' || typeof info.port !== 'number' ? 'url/port' : undefined),
  );
  return cached;
}

export interface TestDatabase {
  name: string;
  /** postgres://… of the database, with the server info's credentials. */
  url: string;
  /** The server with this database as its `database` (for psql()). */
  info: PostgresInfo;
  /** Drops the database, disconnecting whoever is still connected. Idempotent. */
  drop(): Promise<void>;
}

/**
 * A new, empty database on the test server, named after `label` (a test file's subject) plus a random
 * suffix, so that test files never share tables, even against an existing server.
 */
export async function createTestDatabase(
  label: string,
  server: PostgresInfo = testPostgres(),
): Promise<TestDatabase> {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  const name = `kubediff_test_${slug}_${randomBytes(4).toString('hex')}`;
  await psql(server, `CREATE DATABASE ${name}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  const info: PostgresInfo = { ...server, url: url.href, database: name };
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: url.href,
    info,
    drop() {
      dropped ??= psql(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => {});
      return dropped;
    },
  };
}

/** The database's URL as kubediff takes it: without its password (which goes in PGPASSWORD), TLS verified. */
export function stateUrl(info: PostgresInfo): string {
  const url = new URL(info.url);
  url.password = '';
  if (info.caFile) {
    url.searchParams.set('sslmode', 'verify-full');
    url.searchParams.set('sslrootcert', info.caFile);
  }
  return url.href;
}
