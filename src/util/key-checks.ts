// Checks of a parsed config by key path, for what its JSON Schema cannot say: the rules that span keys (a
// single value's rule is its key's format, util/value-format.ts). A check looks at the value at its path,
// which may be of any type (a value of the wrong type is the schema's problem), and reports what is wrong
// at a path. A component (a sink type) declares its checks beside its schema fragment.

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
