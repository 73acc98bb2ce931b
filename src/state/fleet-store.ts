// A fleet's coordination in its PostgreSQL database (docs/fleets.md, "How the replicas agree"): each
// replica's heartbeat row, each cluster's owner and epoch, the last moves. No consensus of kubediff's
// own: every decision that must be exclusive is one transaction, a compare-and-set under the row's lock,
// and every time is the database's (`now()`), never a replica's clock.
//
// - A replica is alive while its heartbeat, or the database's own start if later, is younger than the
//   replica timeout: a database that restarted gives every replica a full timeout to reconnect before
//   anyone counts it gone.
// - A claim succeeds only from the epoch the claimer read, and only when the cluster has no owner, its
//   owner is not alive (or is a previous process of the same replica), or it is this process's own; it
//   bumps the epoch. The row is locked FOR UPDATE, so a claim waits for the previous owner's writes in
//   flight (each holds it FOR KEY SHARE, postgres-store.ts) and they fail after it.
// - A release (a handoff, a clean stop) leaves the cluster free with who had it and why, for the next
//   claim's move record.
import type pg from 'pg';
import { formatDuration } from '../util/duration.ts';
import { KubediffError } from '../util/errors.ts';
import { aliveSql, type FleetView, type MoveReason, type MoveRow, readFleet } from './fleet-rows.ts';
import {
  fleetSessionLimits,
  PostgresConnection,
  type PostgresStateOptions,
  type SessionLimits,
} from './postgres-connection.ts';
import { migrateOn, migratePostgres } from './postgres-migrations.ts';

/** Who this process is in the fleet. */
export interface FleetIdentity {
  fleet: string;
  /** Its name in the fleet (the pod's name in a StatefulSet). */
  replica: string;
  /** This process: a restarted replica is another incarnation, whose predecessor's claims it must not use. */
  incarnation: string;
}

/** What a replica's configuration says, in its heartbeat row. */
export interface ReplicaProfile {
  clusters: readonly string[];
  /** Cluster → the replica its `clusters:` entry pins it to. */
  pins: ReadonlyMap<string, string>;
  version: string;
}

/** What a heartbeat reports of each cluster this replica owns. */
export interface OwnedProgress {
  cluster: string;
  epoch: number;
  synced: boolean;
  /** How long the oldest change reported but not yet recorded has waited. */
  lagMs: number | undefined;
}

/** Rows of replicas gone this long are removed, and clusters nobody lists and nobody had as long. */
const FORGET_AFTER = '24 hours';
/** The moves kept per fleet. */
export const MOVES_KEPT = 1_000;

/** How often a replica beats: a fifth of the replica timeout, so that a few lost beats do not cost its clusters. */
export function beatIntervalMs(timeoutMs: number): number {
  return Math.max(1, Math.floor(timeoutMs / 5));
}

/**
 * How long one call of the fleet's coordination (a beat, a claim, a release, connecting included) may take
 * before it is given up: three beats, less than the lease (four), so that a replica whose database link
 * goes silent says so, and tries again on a new connection, while its lease still runs. Longer would be no
 * use: a beat answered after the lease ran out renews nothing.
 */
export function fleetCallDeadlineMs(timeoutMs: number): number {
  return 3 * beatIntervalMs(timeoutMs);
}

/**
 * The limits under that deadline: a row lock is waited for a beat (the transaction's lock_timeout), a
 * statement runs two beats at most (the server cancels it; the session stays sound), a connection is made
 * within two beats, an answer is awaited three (then the link is taken for silent), and TCP keepalive
 * probes a link idle for a beat (a peer gone without a reset).
 */
export function fleetCoordinationLimits(timeoutMs: number): SessionLimits {
  const beat = beatIntervalMs(timeoutMs);
  return {
    ...fleetSessionLimits(timeoutMs),
    statementTimeoutMs: 2 * beat,
    connectTimeoutMs: 2 * beat,
    keepAliveDelayMs: beat,
  };
}

/** A fleet call that had no answer within its deadline: its connection was dropped. */
export class FleetDatabaseSilent extends Error {}

/** The replica's process was replaced by another of the same name while this one was cut off. */
export class ReplicaReplaced extends KubediffError {}

export class FleetStore extends PostgresConnection {
  readonly identity: FleetIdentity;
  private readonly timeoutMs: number;
  private readonly options: PostgresStateOptions;
  private migrated = false;
  /**
   * The fleet's transactions share one connection, so they take turns: a handoff's release started while a
   * beat is open would otherwise interleave its statements with the beat's (one COMMIT ending the other's
   * work). Each one's deadline starts when its turn comes. Every call of the fleet is one of them (none
   * uses run() alone).
   */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(options: PostgresStateOptions, identity: FleetIdentity, timeoutMs: number) {
    super(options, fleetCallDeadlineMs(timeoutMs), fleetCoordinationLimits(timeoutMs));
    this.options = options;
    this.identity = identity;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Every transaction of the fleet waits at most a beat for a row lock: a lock held by a replica paused
   * mid-write is released within half the timeout (fleetSessionLimits), and this one's beat goes on meanwhile
   * (a claim that could not lock is tried again at the next beat). The whole of it, connecting included,
   * has a deadline (fleetCallDeadlineMs): past it the connection is dropped (its socket destroyed, which
   * ends the transaction on the server) and the call fails, whatever the link does.
   */
  protected override transaction<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const mine = this.turn.then(() => this.transactionWithDeadline(work));
    this.turn = mine.catch(() => undefined);
    return mine;
  }

  private transactionWithDeadline<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const deadlineMs = fleetCallDeadlineMs(this.timeoutMs);
    const done = super.transaction(async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${beatIntervalMs(this.timeoutMs)}`);
      return work(client);
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        this.dropConnection();
        reject(new FleetDatabaseSilent(`no answer within ${formatDuration(deadlineMs)}`));
      }, deadlineMs);
    });
    done.catch(() => undefined);
    return Promise.race([done, late]).finally(() => clearTimeout(timer));
  }

  protected override async connected(client: pg.Client): Promise<void> {
    if (!this.migrated) await migrateOn(client, this.label);
    this.migrated = true;
  }

  /**
   * Brings the schema up to date (the first replica of a fleet on an empty database creates it), on a
   * connection of its own without the beat's limits: a migration, or waiting for another replica's, may
   * take longer than a beat.
   */
  async migrate(): Promise<void> {
    await migratePostgres(this.options);
    this.migrated = true;
  }

  /**
   * Registers this process as the fleet's replica of its name. False, with the age of its heartbeat,
   * while another live process holds that name (a previous process whose heartbeat is not yet stale, or
   * a second replica given the same name).
   */
  async join(profile: ReplicaProfile): Promise<{ joined: true } | { joined: false; heartbeatAgeMs: number }> {
    const { fleet, replica, incarnation } = this.identity;
    return this.transaction(async (client) => {
      const row = await client.query<{ incarnation: string; alive: boolean; age_ms: string }>(
        `SELECT r.incarnation, ${aliveSql('r')} AS alive,
                (extract(epoch FROM now() - r.heartbeat) * 1000)::bigint AS age_ms
         FROM kubediff_fleet_replicas r WHERE r.fleet = $1 AND r.replica = $2 FOR UPDATE`,
        [fleet, replica],
      );
      const current = row.rows[0];
      if (current && current.incarnation !== incarnation && current.alive)
        return { joined: false as const, heartbeatAgeMs: Number(current.age_ms) };
      await client.query(
        `INSERT INTO kubediff_fleet_replicas (fleet, replica, incarnation, started, heartbeat, timeout_ms, clusters, pins, version)
         VALUES ($1, $2, $3, now(), now(), $4, $5, $6, $7)
         ON CONFLICT (fleet, replica) DO UPDATE SET incarnation = excluded.incarnation, started = now(),
           heartbeat = now(), timeout_ms = excluded.timeout_ms, clusters = excluded.clusters, pins = excluded.pins,
           version = excluded.version`,
        [fleet, replica, incarnation, ...this.profileColumns(profile)],
      );
      return { joined: true as const };
    });
  }

  /**
   * One heartbeat, in one transaction: renews this replica's row (at the database's `now()`), reports its
   * clusters' progress, adds rows for the clusters it lists, forgets what is long gone, and reads the
   * fleet. Throws ReplicaReplaced when another process took this replica's name meanwhile.
   */
  async beat(profile: ReplicaProfile, owned: readonly OwnedProgress[]): Promise<FleetView> {
    const { fleet, replica, incarnation } = this.identity;
    return this.transaction(async (client) => {
      const renewed = await client.query(
        `UPDATE kubediff_fleet_replicas SET heartbeat = now(), timeout_ms = $4, clusters = $5, pins = $6, version = $7
         WHERE fleet = $1 AND replica = $2 AND incarnation = $3`,
        [fleet, replica, incarnation, ...this.profileColumns(profile)],
      );
      if (renewed.rowCount === 0) {
        const other = await client.query(
          'SELECT 1 FROM kubediff_fleet_replicas WHERE fleet = $1 AND replica = $2',
          [fleet, replica],
        );
        if (other.rowCount !== 0) {
          throw new ReplicaReplaced(
            `another kubediff joined fleet "${fleet}" as replica "${replica}" while this one could not renew its heartbeat; give each replica its own --fleet-replica`,
          );
        }
        // Forgotten after a long absence: this process joins again.
        await client.query(
          `INSERT INTO kubediff_fleet_replicas (fleet, replica, incarnation, started, heartbeat, timeout_ms, clusters, pins, version)
           VALUES ($1, $2, $3, now(), now(), $4, $5, $6, $7)`,
          [fleet, replica, incarnation, ...this.profileColumns(profile)],
        );
      }
      if (owned.length > 0) {
        await client.query(
          `UPDATE kubediff_fleet_clusters c SET synced = p.synced, lag_ms = p.lag
           FROM unnest($4::text[], $5::bigint[], $6::boolean[], $7::bigint[]) AS p(cluster, epoch, synced, lag)
           WHERE c.fleet = $1 AND c.cluster = p.cluster AND c.owner = $2 AND c.incarnation = $3 AND c.epoch = p.epoch`,
          [
            fleet,
            replica,
            incarnation,
            owned.map((entry) => entry.cluster),
            owned.map((entry) => entry.epoch),
            owned.map((entry) => entry.synced),
            owned.map((entry) => (entry.lagMs === undefined ? null : Math.round(entry.lagMs))),
          ],
        );
      }
      // Only the rows missing: an insert that conflicts waits for whoever is updating that row (another
      // replica's beat or claim), and every beat would queue behind the others'.
      await client.query(
        `INSERT INTO kubediff_fleet_clusters (fleet, cluster, since)
         SELECT $1, name, now() FROM unnest($2::text[]) AS name
         WHERE NOT EXISTS (SELECT 1 FROM kubediff_fleet_clusters c WHERE c.fleet = $1 AND c.cluster = name)
         ON CONFLICT DO NOTHING`,
        [fleet, [...profile.clusters]],
      );
      await client.query(
        `DELETE FROM kubediff_fleet_replicas WHERE fleet = $1 AND heartbeat < now() - interval '${FORGET_AFTER}'`,
        [fleet],
      );
      await client.query(
        `DELETE FROM kubediff_fleet_clusters c WHERE c.fleet = $1 AND c.owner IS NULL
           AND c.since < now() - interval '${FORGET_AFTER}'
           AND NOT EXISTS (SELECT 1 FROM kubediff_fleet_replicas r WHERE r.fleet = c.fleet AND c.cluster = ANY(r.clusters))`,
        [fleet],
      );
      return readFleet(client, fleet);
    });
  }

  /**
   * Claims `cluster` from the epoch this replica read: when it has no owner, its owner is not alive (or is
   * an earlier process of this replica), or it is already this process's. Returns the new epoch and the
   * move, or undefined when someone else holds it or claimed it since.
   */
  async claim(cluster: string, seenEpoch: number): Promise<MoveRow | undefined> {
    const { fleet, replica, incarnation } = this.identity;
    return this.transaction(async (client) => {
      const row = await client.query<{
        owner: string | null;
        epoch: string;
        previous: string | null;
        released: string | null;
        free: boolean;
      }>(
        `SELECT c.owner, c.epoch, c.previous, c.released,
           (c.owner IS NULL OR (c.owner = $3 AND c.incarnation = $4) OR NOT EXISTS (
             SELECT 1 FROM kubediff_fleet_replicas r
             WHERE r.fleet = c.fleet AND r.replica = c.owner AND r.incarnation = c.incarnation AND ${aliveSql('r')})) AS free
         FROM kubediff_fleet_clusters c WHERE c.fleet = $1 AND c.cluster = $2 FOR UPDATE`,
        [fleet, cluster, replica, incarnation],
      );
      const current = row.rows[0];
      if (!current?.free || Number(current.epoch) !== seenEpoch) return undefined;
      const from = current.owner ?? current.previous ?? undefined;
      const reason: MoveReason =
        current.owner !== null
          ? 'takeover'
          : current.released === 'handoff' || current.released === 'stopped'
            ? current.released
            : from === undefined
              ? 'new'
              : 'takeover';
      const claimed = await client.query<{ epoch: string; at: Date }>(
        `UPDATE kubediff_fleet_clusters SET owner = $3, incarnation = $4, epoch = epoch + 1, since = now(),
           previous = NULL, released = NULL, synced = false, lag_ms = NULL
         WHERE fleet = $1 AND cluster = $2 RETURNING epoch, since AS at`,
        [fleet, cluster, replica, incarnation],
      );
      const { epoch, at } = claimed.rows[0] as { epoch: string; at: Date };
      await client.query(
        `INSERT INTO kubediff_fleet_moves (fleet, cluster, at, from_replica, to_replica, epoch, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [fleet, cluster, at, from ?? null, replica, epoch, reason],
      );
      await client.query(
        `DELETE FROM kubediff_fleet_moves WHERE fleet = $1 AND seq <= (
           SELECT seq FROM kubediff_fleet_moves WHERE fleet = $1 ORDER BY seq DESC OFFSET ${MOVES_KEPT} LIMIT 1)`,
        [fleet],
      );
      return { at: at.toISOString(), cluster, from, to: replica, epoch: Number(epoch), reason };
    });
  }

  /**
   * Gives `cluster` up (held at `epoch`): for another replica (`handoff`) or because this one stops.
   * False when it was no longer this replica's.
   */
  async release(cluster: string, epoch: number, why: 'handoff' | 'stopped'): Promise<boolean> {
    const { fleet, replica, incarnation } = this.identity;
    const released = await this.transaction((client) =>
      client.query(
        `UPDATE kubediff_fleet_clusters SET owner = NULL, incarnation = NULL, since = now(), previous = owner,
           released = $6, synced = false, lag_ms = NULL
         WHERE fleet = $1 AND cluster = $2 AND owner = $3 AND incarnation = $4 AND epoch = $5`,
        [fleet, cluster, replica, incarnation, epoch, why],
      ),
    );
    return released.rowCount === 1;
  }

  /** The timeout and the profile as the replica row's columns. */
  private profileColumns(profile: ReplicaProfile): unknown[] {
    return [
      this.timeoutMs,
      [...profile.clusters],
      JSON.stringify(Object.fromEntries(profile.pins)),
      profile.version,
    ];
  }

  /**
   * Leaves the fleet: this replica's row goes (its clusters released first). A transaction like the others,
   * so it takes its turn after a beat still open and has the same deadline.
   */
  async leave(): Promise<void> {
    const { fleet, replica, incarnation } = this.identity;
    await this.transaction((client) =>
      client.query(
        'DELETE FROM kubediff_fleet_replicas WHERE fleet = $1 AND replica = $2 AND incarnation = $3',
        [fleet, replica, incarnation],
      ),
    );
  }
}
