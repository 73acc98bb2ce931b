// The state in PostgreSQL (`--state postgres://…`, docs/state.md): one database for many processes, every
// row with its cluster, one history table across the fleet. A writer holds one connection, which carries
// its cluster's claim (a session advisory lock: a second writer of the cluster is refused); a lost
// connection is reopened, migrated and claimed again by the next write. Under --leader-elect the claim
// follows the Lease: claim() when leading (fence() ends a previous session past a grace period), released
// when not; a standby reads and writes nothing.
import type pg from 'pg';
import type { StoredObject } from '../informer/store.ts';
import type { ResourceType } from '../kube/types.ts';
import { KubediffError } from '../util/errors.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import {
  fleetSessionLimits,
  isTransientPostgresError,
  LOCK_CLASS,
  PostgresConnection,
  type PostgresStateOptions,
} from './postgres-connection.ts';
import { migrateOn } from './postgres-migrations.ts';
import {
  type ClaimedStateStore,
  ClaimLost,
  OBJECT_COLUMNS,
  type ObjectRow,
  type Retention,
  type SerializedWrite,
  type StoredResource,
  storedObjectOf,
} from './store.ts';

/**
 * A fleet's replica owning the cluster (docs/fleets.md): the epoch of its claim is the fencing token that
 * every write transaction checks, holding the cluster's row FOR KEY SHARE, so that a claim by another
 * replica (FOR UPDATE) waits for a write in flight and every later write of this store fails, while the
 * heartbeat's update of the row's progress columns does not wait for the writes.
 */
export interface FleetOwnership {
  fleet: string;
  replica: string;
  incarnation: string;
  epoch: number;
  /** The fleet's replica timeout: a write transaction this replica left open (paused) ends within half of it. */
  replicaTimeoutMs: number;
}

/** The recorder's store for one cluster. */
export class PostgresStateStore extends PostgresConnection implements ClaimedStateStore {
  readonly cluster: string;
  /** Whether this store holds the cluster's claim (and must hold it again after a reconnection). */
  private claimed = false;
  private migrated = false;
  private readonly owner: FleetOwnership | undefined;

  private constructor(options: PostgresStateOptions, cluster: string, owner: FleetOwnership | undefined) {
    // A fleet's owner paused inside a write still holds the cluster's row FOR KEY SHARE: the server ends that
    // transaction before anyone may take the cluster over, so the claim does not wait on it.
    super(options, undefined, owner && fleetSessionLimits(owner.replicaTimeoutMs));
    this.cluster = cluster;
    this.owner = owner;
  }

  /**
   * Connects, migrates the schema and (unless `claim` is false: a leader-elected standby, which claims
   * when it leads) claims `cluster`. Another process recording the same cluster, bad credentials or an
   * unreachable database stop kubediff with one sentence.
   */
  static async open(
    options: PostgresStateOptions,
    cluster: string,
    { claim = true, owner }: { claim?: boolean; owner?: FleetOwnership | undefined } = {},
  ): Promise<PostgresStateStore> {
    const store = new PostgresStateStore(options, cluster, owner);
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
   * Claims are per database (pg_locks is the server's): another database's install of a cluster of the
   * same name is not this claim.
   */
  async fence(): Promise<number> {
    const result = await this.run((client) =>
      client.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND classid = $1::bigint::oid
           AND objid = (hashtext($2)::bigint & 4294967295)::oid AND objsubid = 2 AND pid <> pg_backend_pid()
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
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
    await this.transaction((client) =>
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

  async forgetFollowed(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query("UPDATE kubediff_resources SET resource_version = '' WHERE cluster = $1", [
        this.cluster,
      ]);
    });
  }

  async forgetObjects(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('DELETE FROM kubediff_objects WHERE cluster = $1', [this.cluster]);
      await client.query('UPDATE kubediff_resources SET listed = false WHERE cluster = $1', [this.cluster]);
    });
  }

  async write(
    batch: readonly SerializedWrite[],
    listed: ReadonlyMap<string, string>,
    followed: ReadonlyMap<string, string> = new Map(),
  ): Promise<void> {
    if (batch.length === 0 && listed.size === 0 && followed.size === 0) return;
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
      for (const [resource, resourceVersion] of followed) {
        await client.query(
          'UPDATE kubediff_resources SET resource_version = $3 WHERE cluster = $1 AND resource = $2 AND listed',
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
        `INSERT INTO kubediff_events (cluster, id, time, type, resource, namespace, name, event, search)
         SELECT $1, e.id, e.time::timestamptz, e.type, e.resource, e.namespace, e.name, e.event::json, e.search
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
           WITH ORDINALITY AS e(id, time, type, resource, namespace, name, event, search, n)
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
          events.map((write) => write.search),
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

  /** A fleet's owner writes only while the cluster's row still names it at its epoch (FleetOwnership). */
  protected override transaction<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const owner = this.owner;
    if (!owner) return super.transaction(work);
    return super.transaction(async (client) => {
      const row = await client.query(
        `SELECT 1 FROM kubediff_fleet_clusters
         WHERE fleet = $1 AND cluster = $2 AND owner = $3 AND incarnation = $4 AND epoch = $5 FOR KEY SHARE`,
        [owner.fleet, this.cluster, owner.replica, owner.incarnation, owner.epoch],
      );
      if (row.rowCount === 0) {
        throw new ClaimLost(
          `cluster "${this.cluster}" is no longer this replica's in fleet "${owner.fleet}" (another replica took it over); this replica stops recording it`,
        );
      }
      return work(client);
    });
  }
}
