// --state and its retention: where the state file is and how much history it keeps (docs/state.md).
import { parseDuration } from '../cli/duration.ts';
import { UsageError } from '../errors.ts';
import { DEFAULT_RETENTION, type Retention } from '../informer/state-database.ts';

export interface StateSettings {
  path: string;
  retention: Retention;
}

/** The flags (or the config file's `state:` keys, same spelling as the flags' values). */
export interface RawStateFlags {
  state?: string;
  stateMaxAge?: string;
  stateMaxEvents?: string | number;
  stateMaxSize?: string;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
};
const DAY_MS = 24 * 3_600_000;

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
    retention: {
      maxAgeMs: flags.stateMaxAge === undefined ? DEFAULT_RETENTION.maxAgeMs : parseAge(flags.stateMaxAge),
      maxEvents:
        flags.stateMaxEvents === undefined ? DEFAULT_RETENTION.maxEvents : parseCount(flags.stateMaxEvents),
      maxSizeBytes:
        flags.stateMaxSize === undefined ? DEFAULT_RETENTION.maxSizeBytes : parseSize(flags.stateMaxSize),
    },
  };
}

/** 30m, 12h, 7d. */
export function parseAge(text: string): number {
  const days = /^\s*(\d+(?:\.\d+)?)d\s*$/.exec(text);
  const ms = days ? Number(days[1]) * DAY_MS : parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new UsageError(`invalid --state-max-age "${text}": use a duration such as 12h or 7d.`);
  return ms;
}

function parseCount(value: string | number): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1)
    throw new UsageError(
      `invalid --state-max-events "${value}": use a whole number of events such as 100000.`,
    );
  return count;
}

/** 64MB, 1GB, 500k. `what` names the setting in the error. */
export function parseSize(text: string, what = '--state-max-size'): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = SIZE_UNITS[(match?.[2] ?? 'x').toLowerCase()];
  if (!match || unit === undefined || Number(match[1]) <= 0)
    throw new UsageError(`invalid ${what} "${text}": use a size such as 64MB or 1GB.`);
  return Math.round(Number(match[1]) * unit);
}
