// The SQLite state file (src/state/sqlite-database.ts): schema, migration of an older file, foreign and
// damaged files, retention, history queries. Its recorder: test/unit/state/recorder.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, test } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { SqliteDatabase } from '../../../src/state/sqlite-database.ts';
import { APPLICATION_ID, SCHEMA_VERSION } from '../../../src/state/sqlite-migrations.ts';
import { SqliteTimelineReader } from '../../../src/state/sqlite-timeline-reader.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { changeEvent, storedObject } from '../../helpers/state-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-state-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = () => join(dir, `state-${++counter}.db`);

const object = storedObject;
const event = changeEvent;

function expectUsageError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof UsageError, `a UsageError, got ${String(error)}`);
    assert.equal(exitCodeOf(error), EXIT_USAGE);
    assert.match(error.message, pattern);
    assert.doesNotMatch(error.message, /\n/);
    return true;
  });
}

test('a new file gets the application id, the current schema, WAL, and keeps objects and events', () => {
  const path = file();
  const db = SqliteDatabase.open(path);
  db.write([
    { kind: 'object', resource: 'configmaps', object: object('a', '10', { k: 'v' }) },
    { kind: 'object', resource: 'configmaps', object: object('b', '11') },
    { kind: 'event', resource: 'configmaps', event: event('a', '10', '2026-01-01T00:00:00.000Z') },
    { kind: 'delete', resource: 'configmaps', key: 'ns/b' },
  ]);
  db.close();
  const raw = new DatabaseSync(path);
  assert.equal(Object.values(raw.prepare('PRAGMA application_id').get() ?? {})[0], APPLICATION_ID);
  assert.equal(Object.values(raw.prepare('PRAGMA user_version').get() ?? {})[0], SCHEMA_VERSION);
  assert.equal(Object.values(raw.prepare('PRAGMA journal_mode').get() ?? {})[0], 'wal');
  raw.close();
  const again = SqliteDatabase.open(path);
  assert.deepEqual(again.objects('configmaps'), [object('a', '10', { k: 'v' })]);
  assert.deepEqual(
    again.history({}).map((e) => e.id),
    ['uid-a:10'],
  );
  again.close();
});

test('a file that is not a database is a one-sentence usage error that says how to reset', () => {
  const path = file();
  writeFileSync(path, 'this is not sqlite at all, just some text that someone put here\n'.repeat(100));
  expectUsageError(() => SqliteDatabase.open(path), /damaged or not a database.*delete it to start afresh/);
});

test('an SQLite file of another application is refused, untouched', () => {
  const path = file();
  const other = new DatabaseSync(path);
  other.exec('CREATE TABLE songs (title TEXT)');
  other.close();
  expectUsageError(
    () => SqliteDatabase.open(path),
    /another application, not kubediff state.*another --state path/,
  );
  const check = new DatabaseSync(path);
  assert.equal(Object.values(check.prepare('PRAGMA application_id').get() ?? {})[0], 0);
  check.close();
});

test('a file from a newer kubediff is refused', () => {
  const path = file();
  const newer = new DatabaseSync(path);
  newer.exec(`PRAGMA application_id = ${APPLICATION_ID}; PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
  newer.close();
  expectUsageError(() => SqliteDatabase.open(path), /newer kubediff.*upgrade kubediff/);
});

test('a schema 1 file (events without resource columns) is migrated, its history kept, queryable and searchable', async () => {
  const path = file();
  const old = new DatabaseSync(path);
  old.exec(`PRAGMA application_id = ${APPLICATION_ID};
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE resources (resource TEXT PRIMARY KEY, type TEXT NOT NULL, watched INTEGER NOT NULL DEFAULT 0,
      listed INTEGER NOT NULL DEFAULT 0, resource_version TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
    CREATE TABLE objects (resource TEXT NOT NULL, key TEXT NOT NULL, namespace TEXT, name TEXT NOT NULL,
      uid TEXT NOT NULL, resource_version TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (resource, key)) WITHOUT ROWID;
    CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, time TEXT NOT NULL,
      type TEXT NOT NULL, event TEXT NOT NULL);
    CREATE INDEX events_time ON events (time);
    PRAGMA user_version = 1;`);
  const insert = old.prepare('INSERT INTO events (id, time, type, event) VALUES (?, ?, ?, ?)');
  const e1 = event('a', '5', '2026-01-01T00:00:00.000Z');
  const e2: ChangeEvent = {
    ...event('web', '6', '2026-01-01T00:00:01.000Z'),
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      resource: 'deployments',
      namespace: 'shop',
      name: 'web',
      uid: 'u',
      resourceVersion: '6',
    },
  };
  for (const e of [e1, e2]) insert.run(e.id, e.time, e.type, JSON.stringify(e));
  old.close();

  const db = SqliteDatabase.open(path);
  assert.deepEqual(db.history({ resource: 'deployments.apps' }), [e2]);
  assert.deepEqual(db.history({ resource: 'configmaps', namespace: 'ns', name: 'a' }), [e1]);
  // Events recorded before the search column have none: the search looks in their JSON.
  const reader = new SqliteTimelineReader(db);
  const found = await reader.events({ search: 'shop' }, { limit: 10 });
  assert.deepEqual(
    found.events.map((summary) => summary.id),
    [e2.id],
  );
  db.close();
  const migrated = new DatabaseSync(path, { readOnly: true });
  assert.equal(migrated.prepare('PRAGMA user_version').get()?.user_version, SCHEMA_VERSION);
  migrated.close();
});

test('history: filters, newest last, and --tail takes the newest', () => {
  const db = SqliteDatabase.open(file());
  db.write([
    { kind: 'event', resource: 'configmaps', event: event('a', '1', '2026-01-01T00:00:00.000Z') },
    { kind: 'event', resource: 'configmaps', event: event('b', '2', '2026-01-01T01:00:00.000Z') },
    { kind: 'event', resource: 'configmaps', event: event('a', '3', '2026-01-01T02:00:00.000Z', 'UPDATED') },
  ]);
  assert.deepEqual(
    db.history({}).map((e) => e.id),
    ['uid-a:1', 'uid-b:2', 'uid-a:3'],
  );
  assert.deepEqual(
    db.history({ limit: 2 }).map((e) => e.id),
    ['uid-b:2', 'uid-a:3'],
  );
  assert.deepEqual(
    db.history({ name: 'a' }).map((e) => e.id),
    ['uid-a:1', 'uid-a:3'],
  );
  assert.deepEqual(
    db.history({ since: '2026-01-01T00:30:00.000Z' }).map((e) => e.id),
    ['uid-b:2', 'uid-a:3'],
  );
  assert.deepEqual(db.history({ namespace: 'other' }), []);
  db.close();
});

test('retention: by age, by count and by size, oldest first; objects are never pruned', () => {
  const db = SqliteDatabase.open(file());
  const now = Date.parse('2026-01-10T00:00:00.000Z');
  const writes = [];
  for (let i = 0; i < 50; i++) {
    writes.push({
      kind: 'event' as const,
      resource: 'configmaps',
      event: event(`o${i}`, String(i), new Date(now - (50 - i) * 3_600_000).toISOString()),
    });
  }
  db.write([...writes, { kind: 'object', resource: 'configmaps', object: object('keep', '1') }]);
  // Age: 10 hours keeps the last 10 (hours 1..10 before now).
  db.prune({ maxAgeMs: 10 * 3_600_000, maxEvents: 1000, maxSizeBytes: 1 << 30 }, now);
  assert.equal(db.eventCount(), 10);
  db.prune({ maxAgeMs: 1e12, maxEvents: 4, maxSizeBytes: 1 << 30 }, now);
  assert.deepEqual(
    db.history({}).map((e) => e.object.name),
    ['o46', 'o47', 'o48', 'o49'],
  );
  const big = [];
  for (let i = 0; i < 2000; i++) {
    big.push({
      kind: 'event' as const,
      resource: 'configmaps',
      event: {
        ...event(`b${i}`, String(i), new Date(now).toISOString()),
        pad: 'x'.repeat(500),
      } as ChangeEvent,
    });
  }
  db.write(big);
  const before = db.usedBytes();
  db.prune({ maxAgeMs: 1e12, maxEvents: 1e9, maxSizeBytes: Math.floor(before / 2) }, now);
  assert.ok(db.usedBytes() <= before / 2, `${db.usedBytes()} ≤ ${before / 2}`);
  assert.ok(db.eventCount() > 0 && db.eventCount() < 2004);
  assert.equal(db.history({ limit: 1 })[0]?.object.name, 'b1999', 'the newest events stay');
  assert.equal(db.objectCount(), 1);
  db.close();
});

test('history --user: from the stored event JSON, user or impersonated user, globs', () => {
  const db = SqliteDatabase.open(file());
  const by = (username: string, impersonated?: string): Partial<ChangeEvent> => ({
    by: {
      user: { username },
      ...(impersonated ? { impersonatedUser: { username: impersonated } } : {}),
      auditID: username,
      match: 'exact',
    },
  });
  db.write([
    {
      kind: 'event',
      resource: 'configmaps',
      event: { ...event('a', '1', '2026-01-01T00:00:00.000Z'), ...by('alice') },
    },
    {
      kind: 'event',
      resource: 'configmaps',
      event: { ...event('b', '2', '2026-01-01T01:00:00.000Z'), ...by('system:serviceaccount:argocd:app') },
    },
    {
      kind: 'event',
      resource: 'configmaps',
      event: { ...event('c', '3', '2026-01-01T02:00:00.000Z'), ...by('admin', 'alice') },
    },
    { kind: 'event', resource: 'configmaps', event: event('d', '4', '2026-01-01T03:00:00.000Z') },
    {
      kind: 'event',
      resource: 'configmaps',
      event: { ...event('e', '5', '2026-01-01T04:00:00.000Z'), ...by('[x]') },
    },
  ]);
  assert.deepEqual(
    db.history({ user: 'alice' }).map((e) => e.id),
    ['uid-a:1', 'uid-c:3'],
  );
  assert.deepEqual(
    db.history({ user: 'system:serviceaccount:argocd:*' }).map((e) => e.id),
    ['uid-b:2'],
  );
  assert.deepEqual(
    db.history({ user: '[x]' }).map((e) => e.id),
    ['uid-e:5'],
  );
  db.close();
});
