// Which store a --state value names: a postgres:// URL is a PostgreSQL database shared by many
// processes, anything else an SQLite file.
import { isPostgresUrl } from './location.ts';
import type { FleetOwnership } from './postgres-store.ts';
import { SqliteStateStore } from './sqlite-store.ts';
import type { HistoryReader, StateStore } from './store.ts';
import type { TimelineReader } from './timeline-reader.ts';

export interface StateLocation {
  /** A file path, or postgres://[user@]host[:port]/database. */
  path: string;
  /** PostgreSQL: a file holding the password alone. */
  passwordFile?: string | undefined;
}

/**
 * The recorder's store for `cluster` (PostgreSQL: migrated, and the cluster claimed, unless the process
 * is leader-elected: then the recorder claims it when this replica leads; or a fleet's replica: then
 * every write checks that it still owns the cluster).
 */
export async function openStateStore(
  location: StateLocation,
  cluster: string,
  options: { leaderElected?: boolean; fleet?: FleetOwnership | undefined } = {},
): Promise<StateStore> {
  if (isPostgresUrl(location.path)) {
    // Loaded on use: a watch without PostgreSQL does not pay for its client at start.
    const { PostgresStateStore } = await import('./postgres-store.ts');
    return PostgresStateStore.open({ url: location.path, passwordFile: location.passwordFile }, cluster, {
      // A fleet's owner is fenced by its claim's epoch instead (docs/fleets.md).
      claim: options.leaderElected !== true && options.fleet === undefined,
      owner: options.fleet,
    });
  }
  return SqliteStateStore.open(location.path);
}

/** The history, read-only. */
export async function openHistory(location: StateLocation): Promise<HistoryReader> {
  if (isPostgresUrl(location.path)) {
    const { PostgresHistory } = await import('./postgres-history.ts');
    return PostgresHistory.open({ url: location.path, passwordFile: location.passwordFile });
  }
  return SqliteStateStore.open(location.path, { readOnly: true });
}

/**
 * The history as the UI reads it (docs/ui.md), on a connection of its own, read-only: PostgreSQL
 * asynchronously, an SQLite file in a worker thread.
 */
export async function openTimelineReader(location: StateLocation): Promise<TimelineReader> {
  if (isPostgresUrl(location.path)) {
    const { PostgresHistory } = await import('./postgres-history.ts');
    const { PostgresTimelineReader } = await import('./postgres-timeline-reader.ts');
    return new PostgresTimelineReader(
      await PostgresHistory.open({ url: location.path, passwordFile: location.passwordFile }),
    );
  }
  const { SqliteTimelineThread } = await import('./sqlite-timeline-thread.ts');
  return SqliteTimelineThread.open(location.path);
}
