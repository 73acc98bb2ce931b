// The state in PostgreSQL (`--state postgres://…`): one database shared by many kubediff processes, one
// per cluster. Every row carries its cluster: each cluster's snapshot (resources, objects) is its own,
// and the history of all of them is one table that `kubediff history --cluster` reads across the fleet.
//
// node-postgres (`pg`): pure JavaScript (no native build, nothing fetched besides npm), the most used and
// maintained PostgreSQL client for Node, with TLS, SCRAM, the PG* environment variables and ~/.pgpass.
//
// A writer holds ONE connection: its writes are serialized by the recorder anyway, and the connection
// carries the cluster's claim, a session advisory lock, so that two processes recording the same
// cluster are refused (the second one at its start). When the connection is lost (the database
// restarts), the next write reconnects and claims again; the recorder retries transient failures.
//
// Under --leader-elect the claim follows the Lease instead (docs/state.md, "A leader-elected pair"): a
// standby opens the store without claiming (it reads the snapshot, writes nothing), the recorder claims
// when the replica starts leading (`claim()`, retried while the previous leader's session still holds
// it; past a grace period that session is ended, `fence()`), and releases it when it stops leading.
//
// Schema versions are in kubediff_schema; migrations run at start (and by `kubediff migrate`) in one
// transaction under an advisory lock, so processes starting together migrate once.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { ChangeEvent } from '../events/event.ts';
import type { StoredObject } from '../informer/store.ts';
import type { ResourceType } from '../kube/types.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import { hasGlob } from '../util/glob.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import { postgresLabel } from './location.ts';
import {
  type ClaimedStateStore,
  ClaimLost,
  DEFAULT_PAGE_SIZE,
  type HistoryPage,
  type HistoryQuery,
  type HistoryReader,
  OBJECT_COLUMNS,
  type ObjectRow,
  type Retention,
  type SerializedWrite,
  type StoredResource,
  storedObjectOf,
} from './store.ts';

/** 'KDif': the advisory lock class of kubediff's claims and migrations. */
const LOCK_CLASS = 0x4b446966;
const POSTGRES_SCHEMA_VERSION = 2;

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
];

export interface PostgresStateOptions {
  /** postgres://[user@]host[:port]/database[?sslmode=…]; no password (PGPASSWORD, ~/.pgpass or passwordFile). */
  url: string;
  /** A file holding the password alone (a mounted Secret); re-read at every connection. */
  passwordFile?: string | undefined;
}

/** Time limits of one connection attempt and of one query: past them the store counts as down (transient). */
const CONNECT_TIMEOUT_MS = 10_000;
const QUERY_TIMEOUT_MS = 30_000;
/**
 * A reader's bound on one statement (`history`, the UI), enforced by the server: past it PostgreSQL cancels
 * the statement, which then stops using the shared database. A client-side timeout alone would only stop
 * waiting for it. The client's own bound comes READER_CLIENT_MARGIN_MS later, for a server that does not
 * answer at all.
 */
export const READ_STATEMENT_TIMEOUT_MS = 30_000;
const READER_CLIENT_MARGIN_MS = 5_000;

/** The password of a passwordFile, read at every connection (a rotated Secret needs no restart). */
function readPasswordFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new UsageError(
      `cannot read the PostgreSQL password file ${file} (state.passwordFile): ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}; check the path and its permissions.`,
    );
  }
}

function connectionConfig(options: PostgresStateOptions, queryTimeoutMs: number): pg.ClientConfig {
  let parsed: URL;
  try {
    parsed = new URL(options.url);
  } catch {
    throw new UsageError(
      'invalid --state URL: use postgres://user@host:5432/database (the password comes from PGPASSWORD, ~/.pgpass or state.passwordFile).',
    );
  }
  if (parsed.password || parsed.searchParams.has('password')) {
    throw new UsageError(
      `the --state URL for ${postgresLabel(options.url)} carries a password; remove it and give it in PGPASSWORD, a ~/.pgpass file (PGPASSFILE) or state.passwordFile, so that it is never on a command line or printed.`,
    );
  }
  return {
    connectionString: options.url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
    application_name: 'kubediff',
  };
}

const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** A statement the server cancelled (statement_timeout, or pg_cancel_backend): the session is still sound. */
function isCancelled(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '57014';
}

/** Whether `error` is the database being unreachable, restarting or slow (worth retrying). */
function isTransientPostgresError(error: unknown): boolean {
  if (error instanceof ClaimLost || error instanceof UsageError) return false;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') {
    // 08: connection exception; 57P01-03: shutdown, crash, not accepting yet; 53300: too many connections;
    // 40001/40P01: serialization failure, deadlock (the transaction may simply be repeated).
    if (
      code.startsWith('08') ||
      /^57P0[123]$/.test(code) ||
      code === '53300' ||
      code === '40001' ||
      code === '40P01'
    )
      return true;
    if (TRANSIENT_CODES.has(code)) return true;
  }
  return /connection terminated|timeout|terminating connection|connection error|not queryable|Connection refused/i.test(
    errorMessage(error),
  );
}

/** A connection to the database, with what the store and the history share. */
abstract class PostgresBase {
  readonly label: string;
  protected readonly config: pg.ClientConfig;
  private readonly passwordFile: string | undefined;
  protected client: pg.Client | undefined;

  constructor(options: PostgresStateOptions, queryTimeoutMs = QUERY_TIMEOUT_MS) {
    this.config = connectionConfig(options, queryTimeoutMs);
    this.passwordFile = options.passwordFile;
    this.label = postgresLabel(options.url);
  }

  /** The connection, (re-)opened when needed. */
  protected async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client(
      this.passwordFile ? this.withPassword(readPasswordFile(this.passwordFile)) : this.config,
    );
    // A connection that breaks between queries: forget it, the next query reconnects.
    client.on('error', () => {
      if (this.client === client) this.client = undefined;
    });
    try {
      await client.connect();
      await this.connected(client);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }

  /**
   * The config with the password. node-postgres lets the connection string's fields win over the
   * config's, so the password goes into the (never printed) connection string itself.
   */
  private withPassword(password: string): pg.ClientConfig {
    const url = new URL(this.config.connectionString ?? '');
    url.password = encodeURIComponent(password);
    return { ...this.config, connectionString: url.href };
  }

  /** What a new connection does first (the writer claims its cluster). */
  protected async connected(_client: pg.Client): Promise<void> {}

  /** Runs `work` on the connection; a failure that leaves the connection in doubt drops it. */
  protected async run<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = await this.connection();
    try {
      return await work(client);
    } catch (error) {
      if (isTransientPostgresError(error) && !isCancelled(error) && this.client === client) {
        this.client = undefined;
        client.end().catch(() => undefined);
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The schema version, 0 when kubediff's tables are not there. */
  protected async schemaVersion(client: pg.Client): Promise<number> {
    const exists = await client.query<{ found: string | null }>(
      `SELECT to_regclass('kubediff_schema') AS found`,
    );
    if (!exists.rows[0]?.found) return 0;
    const row = await client.query<{ version: number }>('SELECT version FROM kubediff_schema');
    return row.rows[0]?.version ?? 0;
  }

  /** Explains a failure to connect in one sentence (never the URL's user or the password). */
  protected unreachable(error: unknown): KubediffError {
    if (error instanceof KubediffError) return error;
    const message = errorMessage(error).replace(/\.$/, '');
    const code = (error as { code?: string }).code;
    if (code === '28P01' || code === '28000')
      return new UsageError(
        `PostgreSQL at ${this.label} refused the credentials (${message}); check PGUSER and the password in PGPASSWORD, ~/.pgpass or state.passwordFile.`,
      );
    if (code === '3D000')
      return new UsageError(`${message} at ${this.label}; create the database or fix the --state URL.`);
    return new KubediffError(
      `cannot reach PostgreSQL at ${this.label}: ${message}; check that the database is running and reachable, and the --state URL.`,
      { cause: error },
    );
  }
}

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

class PostgresMigrator extends PostgresBase {
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

async function migrateOn(client: pg.Client, label: string): Promise<{ from: number; to: number }> {
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

/** The recorder's store for one cluster. */
export class PostgresStateStore extends PostgresBase implements ClaimedStateStore {
  readonly cluster: string;
  /** Whether this store holds the cluster's claim (and must hold it again after a reconnection). */
  private claimed = false;
  private migrated = false;

  private constructor(options: PostgresStateOptions, cluster: string) {
    super(options);
    this.cluster = cluster;
  }

  /**
   * Connects, migrates the schema and (unless `claim` is false: a leader-elected standby, which claims
   * when it leads) claims `cluster`. Another process recording the same cluster, bad credentials or an
   * unreachable database stop kubediff with one sentence.
   */
  static async open(
    options: PostgresStateOptions,
    cluster: string,
    { claim = true }: { claim?: boolean } = {},
  ): Promise<PostgresStateStore> {
    const store = new PostgresStateStore(options, cluster);
    try {
      const client = await store.connection();
      if (claim && !(await store.tryLock(client))) {
        throw new KubediffError(
          `another kubediff is already recording cluster "${cluster}" in ${store.label}; run one kubediff per cluster (stop the other, name this one's cluster differently with --cluster-name, or run both with --leader-elect so that only the leader records).`,
        );
      }
      store.claimed = claim;
    } catch (error) {
      await store.close();
      throw store.unreachable(error);
    }
    return store;
  }

  protected override async connected(client: pg.Client): Promise<void> {
    if (!this.migrated) await migrateOn(client, this.label);
    this.migrated = true;
    if (this.claimed && !(await this.tryLock(client))) {
      // The session that held the claim ended, and another process claimed the cluster meanwhile.
      this.claimed = false;
      throw new ClaimLost(
        `another kubediff took over recording cluster "${this.cluster}" in ${this.label} while the connection was lost; recording stops`,
      );
    }
  }

  private async tryLock(client: pg.Client): Promise<boolean> {
    const claim = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [
      LOCK_CLASS,
      this.cluster,
    ]);
    return claim.rows[0]?.ok === true;
  }

  /** Claims the cluster (a leader-elected replica that starts leading); false while another session holds it. */
  async claim(): Promise<boolean> {
    if (this.claimed) return true;
    const ok = await this.run((client) => this.tryLock(client));
    this.claimed = ok;
    return ok;
  }

  /**
   * Ends the session that holds the claim (a previous leader whose process is gone but whose connection
   * the database has not noticed closing: a node lost, a network cut). Only a replica that holds the
   * Lease calls it, after a grace period in which a live previous leader commits and releases. Needs
   * the same database role as that session, or pg_signal_backend. Returns how many sessions were ended.
   */
  async fence(): Promise<number> {
    const result = await this.run((client) =>
      client.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND classid = $1::bigint::oid
           AND objid = (hashtext($2)::bigint & 4294967295)::oid AND objsubid = 2 AND pid <> pg_backend_pid()`,
        [LOCK_CLASS, this.cluster],
      ),
    );
    return result.rows.filter((row) => row.ended).length;
  }

  /** Gives the claim up (a leader that stops leading), keeping the connection for reading. */
  async release(): Promise<void> {
    if (!this.claimed) return;
    this.claimed = false;
    // A connection already broken took the lock with it.
    await this.client
      ?.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS, this.cluster])
      .catch(() => undefined);
  }

  /** The recorded objects' resourceVersions by key, for one resource type (a takeover's resync). */
  async objectVersions(resource: string): Promise<Map<string, string>> {
    const result = await this.run((client) =>
      client.query<{ key: string; resource_version: string }>(
        'SELECT key, resource_version FROM kubediff_objects WHERE cluster = $1 AND resource = $2',
        [this.cluster, resource],
      ),
    );
    return new Map(result.rows.map((row) => [row.key, row.resource_version]));
  }

  isTransient(error: unknown): boolean {
    return isTransientPostgresError(error);
  }

  async getMeta(key: string): Promise<string | undefined> {
    const result = await this.run((client) =>
      client.query<{ value: string }>('SELECT value FROM kubediff_meta WHERE cluster = $1 AND key = $2', [
        this.cluster,
        key,
      ]),
    );
    return result.rows[0]?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.run((client) =>
      client.query(
        `INSERT INTO kubediff_meta (cluster, key, value) VALUES ($1, $2, $3)
         ON CONFLICT (cluster, key) DO UPDATE SET value = excluded.value`,
        [this.cluster, key, value],
      ),
    );
  }

  async resources(): Promise<StoredResource[]> {
    const result = await this.run((client) =>
      client.query<{
        resource: string;
        type: ResourceType;
        watched: boolean;
        listed: boolean;
        resource_version: string;
      }>(
        'SELECT resource, type, watched, listed, resource_version FROM kubediff_resources WHERE cluster = $1',
        [this.cluster],
      ),
    );
    return result.rows.map((row) => ({
      resource: row.resource,
      type: row.type,
      watched: row.watched,
      listed: row.listed,
      resourceVersion: row.resource_version,
    }));
  }

  async objects(resource: string): Promise<StoredObject[]> {
    const result = await this.run((client) =>
      client.query<ObjectRow>(
        `SELECT ${OBJECT_COLUMNS} FROM kubediff_objects WHERE cluster = $1 AND resource = $2`,
        [this.cluster, resource],
      ),
    );
    return result.rows.map(storedObjectOf);
  }

  async forgetObjects(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('DELETE FROM kubediff_objects WHERE cluster = $1', [this.cluster]);
      await client.query('UPDATE kubediff_resources SET listed = false WHERE cluster = $1', [this.cluster]);
    });
  }

  async write(batch: readonly SerializedWrite[], listed: ReadonlyMap<string, string>): Promise<void> {
    if (batch.length === 0 && listed.size === 0) return;
    await this.transaction(async (client) => {
      // Runs of objects, deletions and events are written with one statement each; a discovery's note
      // (resources, forget) ends a run, so that everything applies in the queue's order.
      let run: SerializedWrite[] = [];
      for (const write of batch) {
        if (write.kind === 'resources' || write.kind === 'forget') {
          await this.writeRun(client, run);
          run = [];
          if (write.kind === 'forget') await this.forget(client, write.resource);
          else await this.saveResources(client, write.entries);
        } else run.push(write);
      }
      await this.writeRun(client, run);
      for (const [resource, resourceVersion] of listed) {
        await client.query(
          'UPDATE kubediff_resources SET listed = true, resource_version = $3 WHERE cluster = $1 AND resource = $2',
          [this.cluster, resource, resourceVersion],
        );
      }
    });
  }

  private async writeRun(client: pg.Client, run: readonly SerializedWrite[]): Promise<void> {
    if (run.length === 0) return;
    // Within a run only each object's last write matters (one transaction): upserts and deletions
    // then touch each row once, which one INSERT … ON CONFLICT requires.
    const last = new Map<string, SerializedWrite>();
    const events: Extract<SerializedWrite, { kind: 'event' }>[] = [];
    for (const write of run) {
      if (write.kind === 'event') events.push(write);
      else if (write.kind === 'object' || write.kind === 'delete')
        last.set(`${write.resource}\u0000${write.key}`, write);
    }
    const upserts = [...last.values()].filter((write) => write.kind === 'object');
    const deletions = [...last.values()].filter((write) => write.kind === 'delete');
    if (upserts.length > 0) {
      await client.query(
        `INSERT INTO kubediff_objects (cluster, resource, key, namespace, name, uid, resource_version, object)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
         ON CONFLICT (cluster, resource, key) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
           uid = excluded.uid, resource_version = excluded.resource_version, object = excluded.object`,
        [
          this.cluster,
          upserts.map((write) => write.resource),
          upserts.map((write) => write.key),
          upserts.map((write) => write.namespace ?? null),
          upserts.map((write) => write.name),
          upserts.map((write) => write.uid),
          upserts.map((write) => write.resourceVersion),
          upserts.map((write) => write.json),
        ],
      );
    }
    if (deletions.length > 0) {
      await client.query(
        `DELETE FROM kubediff_objects WHERE cluster = $1
           AND (resource, key) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
        [this.cluster, deletions.map((write) => write.resource), deletions.map((write) => write.key)],
      );
    }
    if (events.length > 0) {
      // In the queue's order (seq), and once: a batch retried after its COMMIT's answer was lost inserts
      // nothing twice.
      await client.query(
        `INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event)
         SELECT $1, e.id, e.time::timestamptz, e.type, e.resource, e.namespace, e.name, e.event::json
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
           WITH ORDINALITY AS e(id, time, type, resource, namespace, name, event, n)
         ORDER BY e.n
         ON CONFLICT (cluster, id, type) DO NOTHING`,
        [
          this.cluster,
          events.map((write) => write.id),
          events.map((write) => write.time),
          events.map((write) => write.type),
          events.map((write) => write.resource),
          events.map((write) => write.namespace ?? null),
          events.map((write) => write.name),
          events.map((write) => write.json),
        ],
      );
    }
  }

  private async forget(client: pg.Client, resource: string): Promise<void> {
    await client.query('DELETE FROM kubediff_objects WHERE cluster = $1 AND resource = $2', [
      this.cluster,
      resource,
    ]);
    await client.query('UPDATE kubediff_resources SET listed = false WHERE cluster = $1 AND resource = $2', [
      this.cluster,
      resource,
    ]);
  }

  private async saveResources(
    client: pg.Client,
    entries: readonly { resource: string; json: string; watched: boolean }[],
  ): Promise<void> {
    // Types no longer served are kept while objects remain: their DELETED events are still due.
    await client.query(
      `DELETE FROM kubediff_resources r WHERE r.cluster = $1 AND NOT (r.resource = ANY($2::text[]))
         AND NOT EXISTS (SELECT 1 FROM kubediff_objects o WHERE o.cluster = r.cluster AND o.resource = r.resource)`,
      [this.cluster, entries.map((entry) => entry.resource)],
    );
    await client.query(
      `INSERT INTO kubediff_resources (cluster, resource, type, watched)
       SELECT $1, r.resource, r.type::json, r.watched FROM unnest($2::text[], $3::text[], $4::boolean[]) AS r(resource, type, watched)
       ON CONFLICT (cluster, resource) DO UPDATE SET type = excluded.type, watched = excluded.watched,
         listed = CASE WHEN excluded.watched THEN kubediff_resources.listed ELSE false END`,
      [
        this.cluster,
        entries.map((entry) => entry.resource),
        entries.map((entry) => entry.json),
        entries.map((entry) => entry.watched),
      ],
    );
  }

  /**
   * Retention of this cluster's history: by age and by count; by size, the events table (all clusters)
   * is kept under maxSizeBytes by removing this cluster's oldest tenth while it is over (PostgreSQL reuses
   * the space freed, so the table stops growing rather than shrinks).
   */
  async prune(retention: Retention, now: number = Date.now()): Promise<number> {
    return this.transaction(async (client) => {
      let removed = 0;
      const cutoff = isoTimestamp(now - retention.maxAgeMs);
      removed +=
        (
          await client.query('DELETE FROM kubediff_events WHERE cluster = $1 AND time < $2', [
            this.cluster,
            cutoff,
          ])
        ).rowCount ?? 0;
      removed +=
        (
          await client.query(
            `DELETE FROM kubediff_events WHERE cluster = $1 AND seq <= (
               SELECT seq FROM kubediff_events WHERE cluster = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`,
            [this.cluster, retention.maxEvents],
          )
        ).rowCount ?? 0;
      const size = await client.query<{ bytes: string }>(
        `SELECT pg_total_relation_size('kubediff_events') AS bytes`,
      );
      if (Number(size.rows[0]?.bytes ?? 0) > retention.maxSizeBytes) {
        removed +=
          (
            await client.query(
              `DELETE FROM kubediff_events WHERE cluster = $1 AND seq <= (
                 SELECT seq FROM kubediff_events WHERE cluster = $1 ORDER BY seq
                 OFFSET (SELECT count(*) / 10 FROM kubediff_events WHERE cluster = $1) LIMIT 1)`,
              [this.cluster],
            )
          ).rowCount ?? 0;
      }
      return removed;
    });
  }

  private async transaction<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return this.run(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }
}

/**
 * `kubediff history` (and the UI's reader, postgres-timeline-reader.ts) over the database: every cluster's
 * events, no claim. Its connection reads in read-only transactions, and the server bounds each of its
 * statements (statementTimeoutMs, READ_STATEMENT_TIMEOUT_MS by default): a query past it is cancelled
 * there and fails with QueryTimeout; the connection stays.
 */
export class PostgresHistory extends PostgresBase implements HistoryReader {
  private readonly statementTimeoutMs: number;

  private constructor(options: PostgresStateOptions, statementTimeoutMs: number) {
    super(options, statementTimeoutMs + READER_CLIENT_MARGIN_MS);
    this.statementTimeoutMs = statementTimeoutMs;
  }

  static async open(
    options: PostgresStateOptions,
    { statementTimeoutMs = READ_STATEMENT_TIMEOUT_MS }: { statementTimeoutMs?: number } = {},
  ): Promise<PostgresHistory> {
    const history = new PostgresHistory(options, Math.max(1, Math.floor(statementTimeoutMs)));
    let version: number;
    try {
      version = await history.run((client) => history.schemaVersion(client));
    } catch (error) {
      await history.close();
      throw history.unreachable(error);
    }
    if (version === 0) {
      await history.close();
      throw new UsageError(
        `${history.label} holds no kubediff state yet; run \`kubediff watch --state <this URL>\` first, or pass the URL it writes to.`,
      );
    }
    if (version !== POSTGRES_SCHEMA_VERSION) {
      await history.close();
      throw new UsageError(
        version < POSTGRES_SCHEMA_VERSION
          ? `the state in ${history.label} has an older schema (${version}); run \`kubediff migrate --state <this URL>\` first.`
          : `the state in ${history.label} was written by a newer kubediff (schema ${version}); upgrade kubediff.`,
      );
    }
    return history;
  }

  protected override async connected(client: pg.Client): Promise<void> {
    // Before any query: every transaction of this session read-only, every statement bounded by the server.
    await client.query(
      `SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SET statement_timeout = ${this.statementTimeoutMs}`,
    );
  }

  protected override async run<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    try {
      return await super.run(work);
    } catch (error) {
      if (!isCancelled(error)) throw error;
      throw new QueryTimeout(
        `a history query ran longer than ${formatDuration(this.statementTimeoutMs)} and was cancelled by ${this.label}; narrow it (a shorter time window, fewer types or namespaces).`,
        { cause: error },
      );
    }
  }

  async history(query: HistoryQuery): Promise<HistoryPage> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: (n: string) => string, value: unknown) => {
      params.push(value);
      where.push(clause(`$${params.length}`));
    };
    if (query.clusters && query.clusters.length > 0) {
      // Names as equality (the (cluster, seq) index serves them), globs as LIKE patterns.
      const names = query.clusters.filter((cluster) => !hasGlob(cluster));
      const globs = query.clusters.filter(hasGlob).map(globToLike);
      const either: string[] = [];
      if (names.length > 0) {
        // One name as plain equality: the index then also yields the order, so a tail reads only its rows.
        params.push(names.length === 1 ? names[0] : names);
        either.push(
          names.length === 1 ? `cluster = $${params.length}` : `cluster = ANY ($${params.length}::text[])`,
        );
      }
      if (globs.length > 0) {
        params.push(globs);
        either.push(`cluster LIKE ANY ($${params.length}::text[])`);
      }
      where.push(either.length === 1 ? (either[0] as string) : `(${either.join(' OR ')})`);
    }
    if (query.namespace !== undefined) add((n) => `namespace = ${n}`, query.namespace);
    if (query.resource !== undefined) add((n) => `resource = ${n}`, query.resource);
    if (query.name !== undefined) add((n) => `name = ${n}`, query.name);
    if (query.since !== undefined) add((n) => `time >= ${n}::timestamptz`, query.since);
    // Who made it, from the stored event (no column of its own), as in the SQLite file.
    if (query.manager !== undefined)
      add(
        (n) =>
          `(EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'by'->'managers', '[]'::json)) m WHERE m->>'manager' LIKE ${n})` +
          ` OR EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'changes', '[]'::json)) c WHERE c->>'manager' LIKE ${n}))`,
        globToLike(query.manager),
      );
    if (query.user !== undefined)
      add(
        (n) =>
          `(event->'by'->'user'->>'username' LIKE ${n} OR event->'by'->'impersonatedUser'->>'username' LIKE ${n})`,
        globToLike(query.user),
      );
    const filter = () => (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '');
    let after = query.after;
    if (after === undefined && query.limit !== undefined) {
      // The newest `limit`: start just before the oldest of them.
      const row = await this.run((client) =>
        client.query<{ seq: string }>(
          `SELECT seq FROM kubediff_events${filter()} ORDER BY seq DESC OFFSET $${params.length + 1} LIMIT 1`,
          [...params, Math.max(0, Math.floor(query.limit ?? 1) - 1)],
        ),
      );
      after = row.rows[0] ? String(BigInt(row.rows[0].seq) - 1n) : '0';
    }
    if (after !== undefined) add((n) => `seq > ${n}::bigint`, after);
    const pageSize = Math.max(1, Math.floor(query.pageSize ?? DEFAULT_PAGE_SIZE));
    const result = await this.run((client) =>
      client.query<{ seq: string; event: ChangeEvent }>(
        `SELECT seq, event FROM kubediff_events${filter()} ORDER BY seq LIMIT ${pageSize}`,
        params,
      ),
    );
    const last = result.rows.at(-1);
    return {
      events: result.rows.map((row) => row.event),
      ...(result.rows.length === pageSize && last ? { next: last.seq } : {}),
    };
  }

  /** One read-only query of the UI's reader (postgres-timeline-reader.ts), on this connection. */
  async select<Row extends pg.QueryResultRow>(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    return (await this.run((client) => client.query<Row>(sql, [...params]))).rows;
  }

  async recordedTypes(): Promise<ResourceType[]> {
    const result = await this.run((client) =>
      client.query<{ type: ResourceType }>(
        'SELECT DISTINCT ON (resource) type FROM kubediff_resources ORDER BY resource',
      ),
    );
    return result.rows.map((row) => row.type);
  }

  async historyResources(): Promise<string[]> {
    const result = await this.run((client) =>
      client.query<{ resource: string }>('SELECT DISTINCT resource FROM kubediff_events'),
    );
    return result.rows.map((row) => row.resource);
  }
}

/** A reader's statement ran past its bound and the server cancelled it. */
export class QueryTimeout extends KubediffError {}

/** A --cluster glob as a LIKE pattern: `*` any run, `?` one character, LIKE's own wildcards escaped. */
function globToLike(glob: string): string {
  let pattern = '';
  for (const char of glob) {
    if (char === '*') pattern += '%';
    else if (char === '?') pattern += '_';
    else if (char === '%' || char === '_' || char === '\\') pattern += `\\${char}`;
    else pattern += char;
  }
  return pattern;
}
