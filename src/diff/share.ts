// Structural sharing between two versions of an object, so that jsondiffpatch only walks what changed:
// shareUnchanged returns a value equal to `next` (property order included) in which every array-item
// subtree strictly equal to the one at the same position of `previous` is `previous`'s own, so the diff
// stops there at once (`left === right`). Positions only, never list keys, so a reference is never at two
// places. Neither input is mutated; the result shares structure with both and is read-only.

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
