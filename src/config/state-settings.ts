// --state and its retention: where the state file is and how much history it keeps (docs/state.md).

import { DEFAULT_RETENTION, type Retention } from '../state/store.ts';
import { parseCount } from '../util/count.ts';
import { UsageError } from '../util/errors.ts';
import { flagDurationMs, flagSizeBytes } from './flag-values.ts';

export interface StateSettings {
  /** An SQLite file, or postgres://[user@]host[:port]/database. */
  path: string;
  /** PostgreSQL: a file holding the password alone (state.passwordFile). */
  passwordFile?: string | undefined;
  retention: Retention;
}

/** The flags (or the config file's `state:` keys, same spelling as the flags' values). */
export interface RawStateFlags {
  state?: string;
  stateMaxAge?: string;
  stateMaxEvents?: string | number;
  stateMaxSize?: string;
  /** The config file's state.passwordFile. */
  statePasswordFile?: string;
}

export function stateSettingsFromFlags(flags: RawStateFlags): StateSettings | undefined {
  const path = flags.state?.trim();
  const given = flags.stateMaxAge ?? flags.stateMaxEvents ?? flags.stateMaxSize;
  if (!path) {
    if (given !== undefined)
      throw new UsageError('--state-max-age, --state-max-events and --state-max-size need --state <file>.');
    return undefined;
  }
  return {
    path,
    ...(flags.statePasswordFile ? { passwordFile: flags.statePasswordFile } : {}),
    retention: {
      maxAgeMs:
        flags.stateMaxAge === undefined
          ? DEFAULT_RETENTION.maxAgeMs
          : flagDurationMs('--state-max-age', ['state', 'maxAge'], flags.stateMaxAge),
      maxEvents:
        flags.stateMaxEvents === undefined
          ? DEFAULT_RETENTION.maxEvents
          : parseCount(
              '--state-max-events',
              flags.stateMaxEvents,
              'use a whole number of events such as 100000',
            ),
      maxSizeBytes:
        flags.stateMaxSize === undefined
          ? DEFAULT_RETENTION.maxSizeBytes
          : flagSizeBytes('--state-max-size', ['state', 'maxSize'], flags.stateMaxSize),
    },
  };
}
