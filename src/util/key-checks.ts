// Checks of a parsed config's values by key path, for what its JSON Schema cannot say (durations, sizes;
// receivers' URLs and headers in src/sinks/core/receiver-checks.ts): a check looks at the value at its
// path, which may be of any type (a value of the wrong type is the schema's problem), and reports what is
// wrong at a path. A component (a sink type) declares its checks beside its schema fragment.
import { checkDuration, type DurationRules } from './duration.ts';
import { parseSize } from './size.ts';

/** Where a value sits in a config: `['sinks', 1, 'topic']`. */
export type KeyPath = readonly (string | number)[];

/** Reports a problem at a key path. */
export type At = (path: KeyPath, message: string) => void;
/** How a value may be quoted in a message (one from the environment or a secret is not). */
export type Shown = (path: KeyPath, value: unknown) => string;

export interface Report {
  at: At;
  shown: Shown;
}

/** Checks the value at `path`, which may be of any type, and reports what is wrong with it. */
export type Check = (value: unknown, path: KeyPath, report: Report) => void;

/** Which key (relative to the mapping being checked; [] is the mapping itself), by which check, in order. */
export type Checks = readonly (readonly [KeyPath, Check])[];

export function valueAt(root: unknown, path: KeyPath): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

export function runChecks(checks: Checks, mapping: unknown, path: KeyPath, report: Report): void {
  for (const [key, check] of checks) check(valueAt(mapping, key), [...path, ...key], report);
}

export function duration(rules?: DurationRules): Check {
  return (value, path, { at, shown }) => {
    if (typeof value !== 'string') return;
    const { problem } = checkDuration(value, rules);
    if (problem !== undefined) at(path, `${problem}, got ${shown(path, value)}`);
  };
}

/** A timeout, wait or interval of 0 is meaningful: exit at once, join only what has arrived, send at once. */
export const durationOrZero = duration({ allowZero: true });

export const size: Check = (value, path, { at, shown }) => {
  if (typeof value !== 'string') return;
  try {
    parseSize(path.join('.'), value);
  } catch {
    at(path, `expected a size such as 64MB or 1GB, got ${shown(path, value)}`);
  }
};
