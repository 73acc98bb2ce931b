// A fleet's rows as the replicas (fleet-store.ts) and `kubediff fleet status` (fleet-reader.ts) read them:
// its replicas with whether each is alive, its clusters with their owners, its last moves. Ages and
// liveness are computed by the database, from its own clock.
import type pg from 'pg';

export interface ReplicaRow {
  replica: string;
  incarnation: string;
  clusters: string[];
  pins: Map<string, string>;
  version: string;
  /** How long it may go without a heartbeat before the others take its clusters. */
  timeoutMs: number;
  /** Its heartbeat, or the database's start if later, is younger than its timeout. */
  alive: boolean;
  heartbeatAgeMs: number;
  started: string;
}

export interface ClusterRow {
  cluster: string;
  owner: string | undefined;
  incarnation: string | undefined;
  /** Bumped at every claim: the fencing token of its owner's writes. */
  epoch: number;
  /** When it got its owner, or lost it. */
  since: string;
  sinceAgeMs: number;
  /** Its last owner, while it has none. */
  previous: string | undefined;
  synced: boolean;
  lagMs: number | undefined;
}

/** The fleet as one read saw it. */
export interface FleetView {
  replicas: ReplicaRow[];
  clusters: ClusterRow[];
}

/** Why a cluster moved: its first owner, a rebalance, its owner stopping, or its owner gone silent. */
export type MoveReason = 'new' | 'handoff' | 'stopped' | 'takeover';

export interface MoveRow {
  at: string;
  cluster: string;
  from: string | undefined;
  to: string;
  epoch: number;
  reason: MoveReason;
}

/**
 * SQL: the replica row `r` is alive: its heartbeat, or the database's own start if later (a restarted
 * database gives every replica a full timeout to come back), is younger than its timeout.
 */
export function aliveSql(r: string): string {
  return `greatest(${r}.heartbeat, pg_postmaster_start_time()) > now() - ${r}.timeout_ms * interval '1 millisecond'`;
}

export async function readFleet(client: pg.Client, fleet: string): Promise<FleetView> {
  const replicas = await client.query<{
    replica: string;
    incarnation: string;
    clusters: string[];
    pins: Record<string, string> | null;
    version: string;
    timeout_ms: string;
    alive: boolean;
    age_ms: string;
    started: Date;
  }>(
    `SELECT r.replica, r.incarnation, r.clusters, r.pins, r.version, r.timeout_ms, r.started, ${aliveSql('r')} AS alive,
            (extract(epoch FROM now() - r.heartbeat) * 1000)::bigint AS age_ms
     FROM kubediff_fleet_replicas r WHERE r.fleet = $1 ORDER BY r.replica`,
    [fleet],
  );
  const clusters = await client.query<{
    cluster: string;
    owner: string | null;
    incarnation: string | null;
    epoch: string;
    since: Date;
    since_ms: string;
    previous: string | null;
    synced: boolean;
    lag_ms: string | null;
  }>(
    `SELECT c.cluster, c.owner, c.incarnation, c.epoch, c.since, c.previous, c.synced, c.lag_ms,
            (extract(epoch FROM now() - c.since) * 1000)::bigint AS since_ms
     FROM kubediff_fleet_clusters c WHERE c.fleet = $1 ORDER BY c.cluster`,
    [fleet],
  );
  return {
    replicas: replicas.rows.map((row) => ({
      replica: row.replica,
      incarnation: row.incarnation,
      clusters: row.clusters,
      pins: new Map(Object.entries(row.pins ?? {})),
      version: row.version,
      timeoutMs: Number(row.timeout_ms),
      alive: row.alive,
      heartbeatAgeMs: Number(row.age_ms),
      started: row.started.toISOString(),
    })),
    clusters: clusters.rows.map((row) => ({
      cluster: row.cluster,
      owner: row.owner ?? undefined,
      incarnation: row.incarnation ?? undefined,
      epoch: Number(row.epoch),
      since: row.since.toISOString(),
      sinceAgeMs: Number(row.since_ms),
      previous: row.previous ?? undefined,
      synced: row.synced,
      lagMs: row.lag_ms === null ? undefined : Number(row.lag_ms),
    })),
  };
}

/** The fleet's last `limit` moves, oldest first. */
export async function readMoves(client: pg.Client, fleet: string, limit: number): Promise<MoveRow[]> {
  const result = await client.query<{
    at: Date;
    cluster: string;
    from_replica: string | null;
    to_replica: string;
    epoch: string;
    reason: MoveReason;
  }>(
    `SELECT at, cluster, from_replica, to_replica, epoch, reason FROM kubediff_fleet_moves
     WHERE fleet = $1 ORDER BY seq DESC LIMIT $2`,
    [fleet, limit],
  );
  return result.rows.reverse().map((row) => ({
    at: row.at.toISOString(),
    cluster: row.cluster,
    from: row.from_replica ?? undefined,
    to: row.to_replica,
    epoch: Number(row.epoch),
    reason: row.reason,
  }));
}
