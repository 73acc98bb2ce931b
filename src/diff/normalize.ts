// The form in which the informer store keeps an object and the diff compares it: Secret values
// redacted, ignored subtrees gone (they are never reported, so keeping them only costs memory).

import type { JsonObject, JsonValue, KubeObject } from '../kube/types.ts';
import type { MatchCursor, PathMatcher } from './ignore.ts';
import { setProperty } from './json.ts';
import { redactSecret } from './redact.ts';

/**
 * Redacts, then drops the subtrees `ignore` matches, in one pass over the parts of the object that
 * a pattern can reach. The input is never mutated.
 *
 * Structural sharing: a subtree no pattern can reach, or in which nothing was dropped, is shared
 * with the input rather than copied (an object in which nothing is ignored is returned as is).
 * That is safe because objects come from JSON.parse and nothing mutates them afterwards; anything
 * holding a normalized object must treat it as read-only too.
 */
export function normalizeObject(obj: KubeObject | JsonObject, ignore: PathMatcher): JsonObject {
  const redacted = redactSecret(asJsonObject(obj));
  if (ignore.isEmpty) return redacted;
  return stripObject(redacted, ignore.start(), ignore);
}

/**
 * KubeObject declares its optional fields as `| undefined`, but an object parsed from JSON never
 * holds undefined, so it is a JsonObject.
 */
function asJsonObject(obj: KubeObject | JsonObject): JsonObject {
  return obj as JsonObject;
}

function stripValue(value: JsonValue, cursor: MatchCursor, ignore: PathMatcher): JsonValue {
  // Nothing below can be ignored, or nothing to descend into: share the subtree.
  if (cursor.length === 0 || typeof value !== 'object' || value === null) return value;
  return Array.isArray(value) ? stripArray(value, cursor, ignore) : stripObject(value, cursor, ignore);
}

function stripObject(obj: JsonObject, cursor: MatchCursor, ignore: PathMatcher): JsonObject {
  const keys = Object.keys(obj);
  // Created lazily, at the first key whose value differs from the input's.
  let copy: JsonObject | undefined;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const value = obj[key]!;
    const below = ignore.step(cursor, key);
    const kept = below === 'ignored' ? undefined : stripValue(value, below, ignore);
    if (kept !== value && copy === undefined) copy = copyOfFirstKeys(obj, keys, index);
    if (copy !== undefined && kept !== undefined) setProperty(copy, key, kept);
  }
  return copy ?? obj;
}

function stripArray(items: JsonValue[], cursor: MatchCursor, ignore: PathMatcher): JsonValue[] {
  let copy: JsonValue[] | undefined;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const below = ignore.step(cursor, String(index));
    const kept = below === 'ignored' ? undefined : stripValue(item, below, ignore);
    if (kept !== item && copy === undefined) copy = items.slice(0, index);
    if (copy !== undefined && kept !== undefined) copy.push(kept);
  }
  return copy ?? items;
}

function copyOfFirstKeys(obj: JsonObject, keys: readonly string[], count: number): JsonObject {
  const copy: JsonObject = {};
  for (let index = 0; index < count; index++) {
    const key = keys[index]!;
    setProperty(copy, key, obj[key]!);
  }
  return copy;
}
