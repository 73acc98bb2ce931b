// `kubediff fleet status --state postgres://… --fleet <name>`: each cluster of the fleet with its owner,
// since when, whether it synced and its lag; the replicas with their heartbeats; the last moves. Read in
// read-only transactions on a connection of its own (src/state/postgres-history.ts), from the rows the
// replicas keep (src/state/fleet-rows.ts): what the database says, whatever any replica believes.
import type { Writable } from 'node:stream';
import { type ClusterRow, type FleetView, type MoveRow, readFleet, readMoves } from '../state/fleet-rows.ts';
import { MOVES_KEPT } from '../state/fleet-store.ts';
import { isPostgresUrl } from '../state/location.ts';
import { parseCount } from '../util/count.ts';
import { formatDuration } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { textTable } from '../util/text-table.ts';
import { configFileOf, stateLocation } from './state-location.ts';

export interface FleetStatusFlags {
  state?: string;
  fleet?: string;
  config?: string;
  moves?: string;
  output?: 'json' | 'pretty';
}

const DEFAULT_MOVES = 20;

export async function runFleetStatus(flags: FleetStatusFlags, stdout: Writable): Promise<void> {
  const config = configFileOf(flags);
  const location = stateLocation(
    flags,
    'fleet status needs --state postgres://… (or -c with a config file that sets state.path): the database the fleet records in.',
    config,
  );
  if (!isPostgresUrl(location.path))
    throw new UsageError(
      `fleet status reads a fleet's PostgreSQL database; ${location.path} is a state file.`,
    );
  const fleet = flags.fleet?.trim() || config?.fleet?.name;
  if (!fleet)
    throw new UsageError(
      'fleet status needs --fleet <name> (or -c with a config file that sets fleet.name).',
    );
  const limit =
    flags.moves === undefined
      ? DEFAULT_MOVES
      : Math.min(MOVES_KEPT, parseCount('--moves', flags.moves, 'use a whole number of moves such as 20'));
  const { PostgresHistory } = await import('../state/postgres-history.ts');
  const database = await PostgresHistory.open({ url: location.path, passwordFile: location.passwordFile });
  try {
    const { view, moves, fleets } = await database.read(async (client) => {
      const view = await readFleet(client, fleet);
      const moves = limit > 0 ? await readMoves(client, fleet, limit) : [];
      const known = await client.query<{ fleet: string }>(
        'SELECT DISTINCT fleet FROM kubediff_fleet_replicas UNION SELECT DISTINCT fleet FROM kubediff_fleet_clusters ORDER BY 1',
      );
      return { view, moves, fleets: known.rows.map((row) => row.fleet) };
    });
    if (view.replicas.length === 0 && view.clusters.length === 0) {
      throw new UsageError(
        `no fleet "${fleet}" in ${database.label}: no replica has joined it${fleets.length > 0 ? ` (fleets there: ${fleets.join(', ')})` : ''}.`,
      );
    }
    stdout.write(
      flags.output === 'json'
        ? `${JSON.stringify(statusJson(fleet, database.label, view, moves))}\n`
        : statusText(fleet, database.label, view, moves),
    );
  } finally {
    await database.close();
  }
}

/** The cluster's owner when that replica is alive with the incarnation that claimed it. */
function liveOwner(row: ClusterRow, view: FleetView): string | undefined {
  const owner = view.replicas.find((replica) => replica.replica === row.owner);
  return owner?.alive && owner.incarnation === row.incarnation ? owner.replica : undefined;
}

function statusJson(fleet: string, database: string, view: FleetView, moves: readonly MoveRow[]) {
  return {
    fleet,
    database,
    clusters: view.clusters.map((row) => {
      const owner = liveOwner(row, view);
      return {
        cluster: row.cluster,
        ...(owner ? { owner } : {}),
        ...(!owner && (row.owner ?? row.previous) ? { lastOwner: row.owner ?? row.previous } : {}),
        since: row.since,
        epoch: row.epoch,
        synced: owner !== undefined && row.synced,
        ...(owner && row.lagMs !== undefined ? { lagMs: row.lagMs } : {}),
      };
    }),
    replicas: view.replicas.map((replica) => ({
      replica: replica.replica,
      alive: replica.alive,
      heartbeatAgeMs: replica.heartbeatAgeMs,
      timeoutMs: replica.timeoutMs,
      started: replica.started,
      version: replica.version,
      clusters: view.clusters.filter((row) => liveOwner(row, view) === replica.replica).length,
    })),
    moves,
  };
}

function statusText(fleet: string, database: string, view: FleetView, moves: readonly MoveRow[]): string {
  const alive = view.replicas.filter((replica) => replica.alive).length;
  const unowned = view.clusters.filter((row) => liveOwner(row, view) === undefined).length;
  const parts = [
    `fleet "${fleet}" in ${database}: ${alive} of ${view.replicas.length} replica(s) alive, ${view.clusters.length} cluster(s), ${unowned} without an owner\n\n`,
    textTable([
      ['CLUSTER', 'OWNER', 'SINCE', 'STATE', 'LAG'],
      ...view.clusters.map((row) => {
        const owner = liveOwner(row, view);
        const last = row.owner ?? row.previous;
        return [
          row.cluster,
          owner ?? `none${last ? ` (last: ${last})` : ''}`,
          `${row.since} (${formatDuration(row.sinceAgeMs)} ago)`,
          owner ? (row.synced ? 'watching' : 'syncing') : 'NO OWNER',
          owner && row.lagMs !== undefined ? formatDuration(row.lagMs) : '',
        ];
      }),
    ]),
    '\n',
    textTable([
      ['REPLICA', 'HEARTBEAT', 'STATUS', 'CLUSTERS', 'STARTED', 'VERSION'],
      ...view.replicas.map((replica) => [
        replica.replica,
        `${formatDuration(replica.heartbeatAgeMs)} ago`,
        replica.alive ? 'alive' : `gone (silent past ${formatDuration(replica.timeoutMs)})`,
        String(view.clusters.filter((row) => liveOwner(row, view) === replica.replica).length),
        replica.started,
        replica.version,
      ]),
    ]),
  ];
  if (moves.length > 0) {
    parts.push(
      `\nlast ${moves.length} move(s):\n`,
      textTable([
        ['AT', 'CLUSTER', 'FROM', 'TO', 'WHY'],
        ...moves.map((move) => [
          move.at,
          move.cluster,
          move.from ?? '—',
          move.to,
          MOVE_REASONS[move.reason] ?? move.reason,
        ]),
      ]),
    );
  }
  return parts.join('');
}

const MOVE_REASONS: Record<MoveRow['reason'], string> = {
  new: 'new to the fleet',
  handoff: 'handed over (balance)',
  stopped: 'its owner stopped',
  takeover: 'taken over (its owner went silent)',
};
