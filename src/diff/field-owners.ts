// Which field managers own a path of an object: managedFields' FieldsV1 tries read against the event's
// JSON Pointer paths. `f:name` is a field of an object; a list item is `k:{"name":"nginx"}` (its merge
// keys: the same fields by which the diff matches items, see list-keys.ts), `v:"value"` (an item of a
// set, by value) or `i:3` (by position); `.` is the item or map itself. An empty trie node owns its
// whole subtree (a leaf, or an atomic struct, map or list).

import type { ManagedFieldsEntry } from '../kube/managed-fields.ts';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { getProperty, isJsonObject, jsonEqual } from './json.ts';

/**
 * The entries that own `path` of `object` (the version the path points into): those whose trie holds
 * the path itself or a field below it (the path is a map or list partly theirs), else those whose trie
 * ends above it. An ended branch is an atomic field (owned whole) or only the existence of a map or
 * struct (its fields are others'): without the schema the two look alike, so the deepest owner wins.
 */
export function ownersOf(
  entries: readonly ManagedFieldsEntry[],
  object: JsonValue,
  path: readonly string[],
): ManagedFieldsEntry[] {
  let deepest = -1;
  let owners: ManagedFieldsEntry[] = [];
  for (const entry of entries) {
    if (entry.fieldsV1 === undefined) continue;
    const depth = ownedDepth(entry.fieldsV1, object, path);
    if (depth < 0 || depth < deepest) continue;
    if (depth > deepest) {
      deepest = depth;
      owners = [];
    }
    owners.push(entry);
  }
  return owners;
}

/** How deep along `path` the trie goes (path.length: the path itself or below); -1 when it leaves it. */
function ownedDepth(trie: JsonObject, object: JsonValue, path: readonly string[]): number {
  let node = trie;
  let value: JsonValue | undefined = object;
  for (let depth = 0; depth < path.length; depth++) {
    const segment = path[depth]!;
    if (isLeaf(node)) return depth === 0 ? -1 : depth;
    let child: JsonValue | undefined;
    if (Array.isArray(value)) {
      const index = Number(segment);
      if (!Number.isInteger(index) || index < 0 || index >= value.length) return -1;
      child = itemNode(node, value[index]!, index);
      value = value[index];
    } else {
      child = getProperty(node, `f:${segment}`);
      value = isJsonObject(value) ? getProperty(value, segment) : undefined;
    }
    if (!isJsonObject(child)) return -1;
    node = child;
  }
  return path.length;
}

/** A node with no key, or with only `.`, owns everything below it. */
function isLeaf(node: JsonObject): boolean {
  for (const key in node) if (key !== '.') return false;
  return true;
}

/** The trie node of a list item: by its merge keys, its value (sets) or its position. */
function itemNode(node: JsonObject, item: JsonValue, index: number): JsonValue | undefined {
  for (const key of Object.keys(node)) {
    if (key.startsWith('k:')) {
      const keys = parseKey(key);
      if (isJsonObject(keys) && isJsonObject(item) && matchesKeys(item, keys)) return node[key];
    } else if (key.startsWith('v:')) {
      const keyed = parseKey(key);
      if (keyed !== undefined && jsonEqual(keyed, item)) return node[key];
    } else if (key === `i:${index}`) {
      return node[key];
    }
  }
  return undefined;
}

function matchesKeys(item: JsonObject, keys: JsonObject): boolean {
  for (const field of Object.keys(keys)) {
    const value = getProperty(item, field);
    if (value === undefined || !jsonEqual(value, keys[field]!)) return false;
  }
  return true;
}

/** The JSON after `k:` or `v:`; undefined when it is not JSON (then that key matches nothing). */
function parseKey(key: string): JsonValue | undefined {
  try {
    return JSON.parse(key.slice(2)) as JsonValue;
  } catch {
    return undefined;
  }
}
