// The PostgreSQL state's schema: versions in kubediff_schema, numbered migrations applied at start (and
// by `kubediff migrate`) in one transaction under an advisory lock, so processes starting together
// migrate once.
import type pg from 'pg';
import { UsageError } from '../util/errors.ts';
import { LOCK_CLASS, PostgresConnection, type PostgresStateOptions } from './postgres-connection.ts';

export const POSTGRES_SCHEMA_VERSION = 4;

/** MIGRATIONS[v] takes the schema from version v to v + 1. */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  // 0 → 1: the tables. Events: seq orders the history; (cluster, id, type) makes a write that is
  // retried after a lost COMMIT answer insert nothing twice; (cluster, seq) serves per-cluster pages and
  // retention by count; (time) serves --since and retention by age.
  `CREATE TABLE kubediff_meta (
     cluster text NOT NULL, key text NOT NULL, value text NOT NULL,
     PRIMARY KEY (cluster, key));
   CREATE TABLE kubediff_resources (
     cluster text NOT NULL,
     resource text NOT NULL,
     type json NOT NULL,
     watched boolean NOT NULL DEFAULT false,
     listed boolean NOT NULL DEFAULT false,
     resource_version text NOT NULL DEFAULT '',
     PRIMARY KEY (cluster, resource));
   CREATE TABLE kubediff_objects (
     cluster text NOT NULL,
     resource text NOT NULL,
     key text NOT NULL,
     namespace text,
     name text NOT NULL,
     uid text NOT NULL,
     resource_version text NOT NULL,
     object text NOT NULL,
     PRIMARY KEY (cluster, resource, key));
   CREATE TABLE kubediff_events (
     seq bigserial PRIMARY KEY,
     cluster text NOT NULL,
     id text NOT NULL,
     time timestamptz NOT NULL,
     type text NOT NULL,
     resource text NOT NULL,
     namespace text,
     name text NOT NULL,
     event json NOT NULL);
   CREATE UNIQUE INDEX kubediff_events_identity ON kubediff_events (cluster, id, type);
   CREATE INDEX kubediff_events_cluster ON kubediff_events (cluster, seq);
   CREATE INDEX kubediff_events_time ON kubediff_events (time);`,
  // 1 → 2: one object's history (`history deploy/web`, `-n shop deploy`) without scanning the table.
  `CREATE INDEX kubediff_events_object ON kubediff_events (resource, namespace, name, seq);`,
  // 2 → 3: fleets of replicas (docs/fleets.md): each replica's heartbeat and what its configuration lists;
  // each cluster's owner and the epoch bumped at every claim (the fencing token every write of its
  // state checks); the last moves, for `kubediff fleet status`.
  `CREATE TABLE kubediff_fleet_replicas (
     fleet text NOT NULL,
     replica text NOT NULL,
     incarnation text NOT NULL,
     started timestamptz NOT NULL,
     heartbeat timestamptz NOT NULL,
     timeout_ms bigint NOT NULL,
     clusters text[] NOT NULL,
     pins json NOT NULL,
     version text NOT NULL,
     PRIMARY KEY (fleet, replica));
   CREATE TABLE kubediff_fleet_clusters (
     fleet text NOT NULL,
     cluster text NOT NULL,
     owner text,
     incarnation text,
     epoch bigint NOT NULL DEFAULT 0,
     since timestamptz NOT NULL,
     previous text,
     released text,
     synced boolean NOT NULL DEFAULT false,
     lag_ms bigint,
     PRIMARY KEY (fleet, cluster));
   CREATE TABLE kubediff_fleet_moves (
     seq bigserial PRIMARY KEY,
     fleet text NOT NULL,
     cluster text NOT NULL,
     at timestamptz NOT NULL,
     from_replica text,
     to_replica text NOT NULL,
     epoch bigint NOT NULL,
     reason text NOT NULL);
   CREATE INDEX kubediff_fleet_moves_fleet ON kubediff_fleet_moves (fleet, seq);`,
  // 3 → 4: what the history's search looks in (search-text.ts), so that it reads no event's JSON. Older
  // events have none (NULL) and are searched in their JSON.
  `ALTER TABLE kubediff_events ADD COLUMN search text;`,
];

/** Applies the migrations up to the current schema; returns the versions before and after. */
export async function migratePostgres(
  options: PostgresStateOptions,
): Promise<{ label: string; from: number; to: number }> {
  const migrator = new PostgresMigrator(options);
  try {
    return { label: migrator.label, ...(await migrator.migrate()) };
  } finally {
    await migrator.close();
  }
}

class PostgresMigrator extends PostgresConnection {
  async migrate(): Promise<{ from: number; to: number }> {
    let client: pg.Client;
    try {
      client = await this.connection();
    } catch (error) {
      throw this.unreachable(error);
    }
    return migrateOn(client, this.label);
  }
}

export async function migrateOn(client: pg.Client, label: string): Promise<{ from: number; to: number }> {
  await client.query('BEGIN');
  try {
    // Processes starting together: the first migrates, the others wait and find it done.
    await client.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK_CLASS]);
    await client.query('CREATE TABLE IF NOT EXISTS kubediff_schema (version integer NOT NULL)');
    const row = await client.query<{ version: number }>('SELECT version FROM kubediff_schema');
    const from = row.rows[0]?.version ?? 0;
    if (row.rows.length === 0) await client.query('INSERT INTO kubediff_schema (version) VALUES (0)');
    if (from > POSTGRES_SCHEMA_VERSION) {
      throw new UsageError(
        `the state in ${label} was written by a newer kubediff (schema ${from}, this one knows up to ${POSTGRES_SCHEMA_VERSION}); upgrade kubediff.`,
      );
    }
    for (let version = from; version < POSTGRES_SCHEMA_VERSION; version++)
      await client.query(POSTGRES_MIGRATIONS[version] ?? '');
    await client.query('UPDATE kubediff_schema SET version = $1', [POSTGRES_SCHEMA_VERSION]);
    await client.query('COMMIT');
    return { from, to: POSTGRES_SCHEMA_VERSION };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
