// Structural sharing between two versions of an object, so that the diff only walks what changed.
//
// A watch sends every update as the whole object, so two consecutive versions are mostly equal
// subtrees in separate memory. jsondiffpatch walks all of them (a context object and a filter
// pipeline per node) to find the few that differ. The diff hands it only the arrays that differ
// (changesOfVersions in delta-changes.ts), and shareUnchanged first finds, in one plain walk, every
// item subtree of the new array equal to the one at the same place in the previous one, and puts the
// previous one's own subtree there: jsondiffpatch then stops at once on each (`left === right`) and
// only walks the paths that changed.
//
// The result is a value equal to `next`, property order included, and so the diff of `previous`
// with it is the diff of `previous` with `next`:
// - "equal" here is strict: same keys in the same order, same array items at the same positions;
// - only positions are aligned, never list keys: a subtree moves into the result at the place it
//   has in `previous`, so a reference is never found at two places (which jsondiffpatch's array
//   matching would take for a match by reference rather than by key or position).
// Neither input is mutated; the result shares structure with both and must be treated as read-only.

import type { JsonObject, JsonValue } from '../kube/types.ts';
import { getProperty, setProperty } from './json.ts';

/** `next`, with its subtrees equal to `previous`'s taken from `previous`; `previous` itself when equal. */
export function shareUnchanged(previous: JsonValue, next: JsonValue): JsonValue {
  if (previous === next || typeof previous !== 'object' || typeof next !== 'object') return next;
  if (previous === null || next === null) return next;
  if (Array.isArray(previous)) return Array.isArray(next) ? shareArray(previous, next) : next;
  return Array.isArray(next) ? next : shareObject(previous, next);
}

function shareArray(previous: JsonValue[], next: JsonValue[]): JsonValue[] {
  // Built from the first item that differs from `previous` on; until then `previous` is the prefix.
  let copy: JsonValue[] | undefined;
  // Whether anything of `previous` is in the result; if not, `next` itself is.
  let sharing = false;
  for (let index = 0; index < next.length; index++) {
    const item = next[index]!;
    const kept = index < previous.length ? shareUnchanged(previous[index]!, item) : item;
    if (kept !== item) sharing = true;
    if (copy !== undefined) copy.push(kept);
    else if (kept !== previous[index]) {
      copy = previous.slice(0, index);
      copy.push(kept);
    }
  }
  if (copy !== undefined) return sharing ? copy : next;
  // Every item of `next` is `previous`'s: equal, or a prefix of it.
  return next.length === previous.length ? previous : previous.slice(0, next.length);
}

function shareObject(previous: JsonObject, next: JsonObject): JsonObject {
  const keys = Object.keys(next);
  const previousKeys = Object.keys(previous);
  // Built from the first key that differs from `previous` (in name, position or value) on.
  let copy: JsonObject | undefined;
  let sharing = false;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    // An own key of `next` (so `next[key]` is its own value, "__proto__" included); when `previous`
    // has the same key at the same place, the same holds for it, the common case made cheap.
    const value = next[key]!;
    const before = previousKeys[index] === key ? previous[key] : getProperty(previous, key);
    const kept = before === undefined ? value : shareUnchanged(before, value);
    if (kept !== value) sharing = true;
    if (copy !== undefined) setProperty(copy, key, kept);
    else if (kept !== before || previousKeys[index] !== key) {
      copy = firstProperties(previous, keys, index);
      setProperty(copy, key, kept);
    }
  }
  if (copy !== undefined) return sharing ? copy : next;
  // Every property of `next` is `previous`'s, in the same order: equal, or `previous` has more.
  return keys.length === previousKeys.length ? previous : firstProperties(previous, keys, keys.length);
}

/** A new object with the first `count` of `keys`, valued as in `source`. */
function firstProperties(source: JsonObject, keys: readonly string[], count: number): JsonObject {
  const copy: JsonObject = {};
  for (let index = 0; index < count; index++) {
    const key = keys[index]!;
    setProperty(copy, key, getProperty(source, key)!);
  }
  return copy;
}
