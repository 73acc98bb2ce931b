// A state file with a generated history: the UI's API tests and its benchmark (a 1,000,000-event file)
// read it through the same SqliteDatabase that `kubediff watch --state` writes with; and the same history
// in a PostgreSQL database, for the PostgreSQL reader.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { type ChangeEvent, qualifiedResource } from '../../src/events/event.ts';
import type { StoredObject } from '../../src/informer/store.ts';
import { migratePostgres } from '../../src/state/postgres-migrations.ts';
import { searchTextOf } from '../../src/state/search-text.ts';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import type { StateWrite } from '../../src/state/store.ts';

export interface GeneratedHistory {
  events: number;
  /** The first event's time; the others follow every `stepMs`. */
  start: number;
  stepMs: number;
  namespaces: number;
  objects: number;
}

const KINDS = [
  { resource: 'configmaps', apiVersion: 'v1', kind: 'ConfigMap' },
  { resource: 'deployments', apiVersion: 'apps/v1', kind: 'Deployment' },
  { resource: 'services', apiVersion: 'v1', kind: 'Service' },
];

/** The n-th generated event: deterministic, so tests can compute what a query must answer. */
export function generatedEvent(n: number, spec: GeneratedHistory): ChangeEvent {
  const objectIndex = n % spec.objects;
  const kind = KINDS[objectIndex % KINDS.length]!;
  const round = Math.floor(n / spec.objects);
  const type = round === 0 ? 'ADDED' : n % 97 === 0 ? 'DELETED' : 'UPDATED';
  const event: ChangeEvent = {
    id: `uid-${objectIndex}:${n + 1}`,
    type,
    time: new Date(spec.start + n * spec.stepMs).toISOString(),
    cluster: n % 2 === 0 ? 'prod-eu' : 'prod-us',
    object: {
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      resource: kind.resource,
      namespace: `ns-${objectIndex % spec.namespaces}`,
      name: `obj-${objectIndex}`,
      uid: `uid-${objectIndex}`,
      resourceVersion: String(n + 1),
    },
  };
  if (type === 'UPDATED') {
    event.changes = [{ op: 'replace', path: '/spec/replicas', from: round - 1, to: round }];
    if (n % 3 === 0)
      event.changes.push({ op: 'replace', path: '/metadata/labels/version', from: 'a', to: 'b' });
    event.by = { managers: [{ manager: n % 5 === 0 ? 'helm' : 'kubectl-edit', operation: 'Update' }] };
    if (n % 7 === 0) event.by.user = { username: 'alice@example.com' };
    if (n % 5 === 0)
      event.owner = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop-web', uid: 'uid-owner' };
  }
  return event;
}

/** Writes the history into a new state file at `path`, in transactions of 5,000 events. */
export function writeGeneratedHistory(path: string, spec: GeneratedHistory): void {
  const db = SqliteDatabase.open(path);
  try {
    for (let first = 0; first < spec.events; first += 5_000) {
      const batch: StateWrite[] = [];
      for (let n = first; n < Math.min(spec.events, first + 5_000); n++) {
        const event = generatedEvent(n, spec);
        batch.push({ kind: 'event', resource: qualifiedResource(event), event });
      }
      db.write(batch);
    }
  } finally {
    db.close();
  }
}

/**
 * The same history in a PostgreSQL database (migrated first, as `kubediff watch --state` would): each
 * event in its own cluster (the `cluster` column, from the event), in the same order, so seqs match.
 * `url` carries its credentials (a test database's).
 */
export async function writeGeneratedPostgresHistory(url: string, spec: GeneratedHistory): Promise<void> {
  await insertPostgresEvents(url, spec, 0, spec.events);
}

/** Appends generated events `first` … `end - 1` (with `change` applied to each) to a PostgreSQL history. */
export async function insertPostgresEvents(
  url: string,
  spec: GeneratedHistory,
  first: number,
  end: number,
  change: (event: ChangeEvent) => void = () => {},
): Promise<void> {
  const withoutPassword = new URL(url);
  const password = decodeURIComponent(withoutPassword.password);
  withoutPassword.password = '';
  const passwordFile = join(mkdtempSync(join(tmpdir(), 'kubediff-pg-')), 'password');
  writeFileSync(passwordFile, password, { mode: 0o600 });
  try {
    await migratePostgres({ url: withoutPassword.href, passwordFile });
  } finally {
    rmSync(dirname(passwordFile), { recursive: true, force: true });
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let batch = first; batch < end; batch += 5_000) {
      const events: ChangeEvent[] = [];
      for (let n = batch; n < Math.min(end, batch + 5_000); n++) {
        const event = generatedEvent(n, spec);
        change(event);
        events.push(event);
      }
      await client.query(
        `INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event, search)
         SELECT e.cluster, e.id, e.time::timestamptz, e.type, e.resource, e.namespace, e.name, e.event::json, e.search
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
           WITH ORDINALITY AS e(cluster, id, time, type, resource, namespace, name, event, search, n)
         ORDER BY e.n`,
        [
          events.map((event) => event.cluster ?? ''),
          events.map((event) => event.id),
          events.map((event) => event.time),
          events.map((event) => event.type),
          events.map((event) => qualifiedResource(event)),
          events.map((event) => event.object.namespace ?? null),
          events.map((event) => event.object.name),
          events.map((event) => JSON.stringify(event)),
          events.map((event) => searchTextOf(event)),
        ],
      );
    }
  } finally {
    await client.end();
  }
}

/**
 * One ConfigMap `name` in namespace `ns` whose `keys` data keys are all replaced in each of `rounds`
 * updates (`value-<key>-<round>`): its events, oldest first, and its state after the last, as a store
 * records them. A large object's history, for the UI's object view and its bounds.
 */
export function replacedConfigMap(
  ns: string,
  name: string,
  keys: number,
  rounds: number,
): { events: ChangeEvent[]; data: (round: number) => Record<string, string>; object: StoredObject } {
  const uid = `uid-${name}`;
  const data = (round: number) =>
    Object.fromEntries(Array.from({ length: keys }, (_, key) => [`key-${key}`, `value-${key}-${round}`]));
  const events: ChangeEvent[] = [];
  for (let round = 0; round <= rounds; round++) {
    const event: ChangeEvent = {
      id: `${uid}:${round + 1}`,
      type: round === 0 ? 'ADDED' : 'UPDATED',
      time: new Date(Date.parse('2026-11-21T00:00:00Z') + round * 1_000).toISOString(),
      cluster: 'prod-eu',
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        resource: 'configmaps',
        namespace: ns,
        name,
        uid,
        resourceVersion: String(round + 1),
      },
    };
    if (round > 0) {
      event.changes = Array.from({ length: keys }, (_, key) => ({
        op: 'replace' as const,
        path: `/data/key-${key}`,
        from: `value-${key}-${round - 1}`,
        to: `value-${key}-${round}`,
      }));
    }
    events.push(event);
  }
  const object: StoredObject = {
    key: `${ns}/${name}`,
    namespace: ns,
    name,
    uid,
    resourceVersion: String(rounds + 1),
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns, uid },
      data: data(rounds),
    },
  };
  return { events, data, object };
}

/** Writes events and an object's last state into a PostgreSQL history (migrated), cluster prod-eu. */
export async function insertPostgresObject(
  url: string,
  events: readonly ChangeEvent[],
  object: StoredObject,
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const event of events) {
      await client.query(
        `INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event, search)
         VALUES ($1, $2, $3::timestamptz, $4, $5, $6, $7, $8::json, $9)`,
        [
          event.cluster ?? '',
          event.id,
          event.time,
          event.type,
          qualifiedResource(event),
          event.object.namespace ?? null,
          event.object.name,
          JSON.stringify(event),
          searchTextOf(event),
        ],
      );
    }
    await client.query(
      `INSERT INTO kubediff_objects (cluster, resource, key, namespace, name, uid, resource_version, object)
       VALUES ('prod-eu', 'configmaps', $1, $2, $3, $4, $5, $6)`,
      [
        object.key,
        object.namespace ?? null,
        object.name,
        object.uid,
        object.resourceVersion,
        JSON.stringify(object.object),
      ],
    );
  } finally {
    await client.end();
  }
}
