// `watch --fleet`: this process is one replica of a fleet whose replicas share the clusters among
// themselves through the PostgreSQL state (docs/fleets.md). The flags, or the config file's `fleet:`.
import { hostname } from 'node:os';
import { isPostgresUrl } from '../state/location.ts';
import { UsageError } from '../util/errors.ts';
import { flagDurationMs } from './flag-values.ts';
import type { StateSettings } from './state-settings.ts';

export interface FleetSettings {
  /** The fleet: the replicas of one name share its clusters. */
  name: string;
  /** This replica's name in it: stable across restarts (a StatefulSet's pod name). */
  replica: string;
  /** A replica silent this long is gone: its clusters are taken over. */
  replicaTimeoutMs: number;
}

/** The flags (the config file's `fleet:` keys the same, without the prefix). */
export interface RawFleetFlags {
  fleet?: string;
  fleetReplica?: string;
  fleetReplicaTimeout?: string;
}

export const DEFAULT_REPLICA_TIMEOUT_MS = 10_000;
/** Below this a replica's heartbeat (a fifth of it) would load the database for no gain. */
const MIN_REPLICA_TIMEOUT_MS = 1_000;
const MAX_REPLICA_TIMEOUT_MS = 10 * 60_000;
/** Fleet and replica names: what a Kubernetes name allows, and what a log line shows as it is. */
const NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

export function fleetSettingsFrom(
  flags: RawFleetFlags,
  config: { name: string; replica?: string | undefined; replicaTimeout?: string | undefined } | undefined,
  state: StateSettings | undefined,
  env: NodeJS.ProcessEnv = process.env,
): FleetSettings | undefined {
  const name = flags.fleet ?? config?.name;
  if (name === undefined) {
    const orphan =
      flags.fleetReplica !== undefined
        ? '--fleet-replica'
        : flags.fleetReplicaTimeout !== undefined
          ? '--fleet-replica-timeout'
          : undefined;
    if (orphan) throw new UsageError(`${orphan} needs --fleet <name> (or fleet.name in the config file).`);
    return undefined;
  }
  const replica = flags.fleetReplica ?? config?.replica ?? (env.POD_NAME || hostname());
  for (const [what, value] of [
    [flags.fleet !== undefined ? '--fleet' : 'fleet.name', name],
    [
      flags.fleetReplica !== undefined
        ? '--fleet-replica'
        : config?.replica !== undefined
          ? 'fleet.replica'
          : 'the replica name ($POD_NAME, else the hostname)',
      replica,
    ],
  ] as const) {
    if (!NAME.test(value)) {
      throw new UsageError(
        `invalid ${what} "${value}": use letters, digits, ".", "_" and "-" (at most 253), starting and ending with a letter or digit.`,
      );
    }
  }
  if (!state || !isPostgresUrl(state.path)) {
    throw new UsageError(
      '--fleet needs --state postgres://…: the replicas share the clusters, and one history, through that database (docs/fleets.md).',
    );
  }
  const timeoutText = flags.fleetReplicaTimeout ?? config?.replicaTimeout;
  const flag = flags.fleetReplicaTimeout !== undefined ? '--fleet-replica-timeout' : 'fleet.replicaTimeout';
  const replicaTimeoutMs =
    timeoutText === undefined
      ? DEFAULT_REPLICA_TIMEOUT_MS
      : flagDurationMs(flag, ['fleet', 'replicaTimeout'], timeoutText);
  if (replicaTimeoutMs < MIN_REPLICA_TIMEOUT_MS || replicaTimeoutMs > MAX_REPLICA_TIMEOUT_MS) {
    throw new UsageError(`${flag} must be between 1s and 10m (default: 10s).`);
  }
  return { name, replica, replicaTimeoutMs };
}
