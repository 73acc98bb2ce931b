// The keys of a ConfigMap or Secret that a change touched: those under `data` and `binaryData` (a
// Secret's `stringData` is never served). Read from the event (names only: a Secret's values are
// redacted markers by then, and only their names are kept).

import { parsePointer } from '../../diff/pointer.ts';
import type { Change } from '../../diff/types.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../../kube/types.ts';

const KEY_MAPS = ['data', 'binaryData'] as const;

/** The keys an UPDATED's changes touched, sorted. */
export function keysChangedBy(changes: readonly Change[]): string[] {
  const keys = new Set<string>();
  for (const change of changes) {
    const [top, key] = parsePointer(change.path);
    if (top !== 'data' && top !== 'binaryData') continue;
    if (key !== undefined) {
      keys.add(key);
      continue;
    }
    // The whole map added, removed or replaced: the keys whose values differ.
    const from = isJsonObject(change.from) ? change.from : {};
    const to = isJsonObject(change.to) ? change.to : {};
    for (const name of new Set([...Object.keys(from), ...Object.keys(to)])) {
      if (!sameValue(from[name], to[name])) keys.add(name);
    }
  }
  return [...keys].sort();
}

/** Every key of the object (an ADDED, a DELETED), sorted. */
export function keysOf(object: JsonObject): string[] {
  const keys = new Set<string>();
  for (const map of KEY_MAPS) {
    const values = object[map];
    if (isJsonObject(values)) for (const key of Object.keys(values)) keys.add(key);
  }
  return [...keys].sort();
}

function sameValue(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  return a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b);
}
