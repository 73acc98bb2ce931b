// Which field managers own a path of an object: managedFields' FieldsV1 tries read against the event's
// JSON Pointer paths. `f:name` is a field of an object; a list item is `k:{"name":"nginx"}` (its merge
// keys: the same fields by which the diff matches items, see list-keys.ts), `v:"value"` (an item of a
// set, by value) or `i:3` (by position); `.` is the item or map itself. An empty trie node owns its
// whole subtree (a leaf, or an atomic struct, map or list).

import type { ManagedFieldsEntry } from '../kube/managed-fields.ts';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { jsonEqual } from '../util/json-equal.ts';
import { getProperty } from './json.ts';
import { parsePointer } from './pointer.ts';

/**
 * The entries that own paths of `object` (the version the paths point into): for each path, those whose
 * trie holds the path itself or a field below it (the path is a map or list partly theirs), else those
 * whose trie ends above it. An ended branch is an atomic field (owned whole) or only the existence of a
 * map or struct (its fields are others'): without the schema the two look alike, so the deepest owner
 * wins. Paths are asked one after the other, as the diff's JSON Pointers: the diff reports sibling paths
 * together (`/data/a`, `/data/b`, …), so the walk to their parent is done once for all of them, and a
 * sibling costs one step per entry, without splitting its pointer.
 */
export class FieldOwnership {
  readonly #entries: readonly ManagedFieldsEntry[];
  readonly #object: JsonValue;
  /** The pointer of the parent the positions below stand at; undefined before the first path. */
  #parent: string | undefined;
  #atParent: Position[] = [];

  constructor(entries: readonly ManagedFieldsEntry[], object: JsonValue) {
    this.#entries = entries;
    this.#object = object;
  }

  /** The owners of the path at `pointer` (RFC 6901); throws parsePointer's sentence when it is not one. */
  ownersOf(pointer: string): ManagedFieldsEntry[] {
    if (pointer === '') return deepest(this.#entries.map((entry) => start(entry, this.#object)));
    const slash = pointer.lastIndexOf('/');
    // Not a pointer (no leading "/"): parsePointer says why.
    if (slash < 0) parsePointer(pointer);
    const parent = this.#parent;
    // A sibling of the last path: same parent, compared in place (no slice, no split).
    if (parent === undefined || slash !== parent.length || !pointer.startsWith(parent)) {
      this.#moveTo(pointer.slice(0, slash));
    }
    const raw = pointer.slice(slash + 1);
    return this.#ownersBelowParent(raw.includes('~') ? parsePointer(`/${raw}`)[0]! : raw);
  }

  /** Walks every entry from the root to `parent` (a pointer); throws when it is not one. */
  #moveTo(parent: string): void {
    const segments = parsePointer(parent);
    const at = this.#entries.map((entry) => start(entry, this.#object));
    for (const segment of segments) {
      const field = fieldKey(segment);
      for (const position of at) step(position, segment, field);
    }
    this.#parent = parent;
    this.#atParent = at;
  }

  /** The last step, without moving the parent's positions (the next sibling starts from them too). */
  #ownersBelowParent(last: string): ManagedFieldsEntry[] {
    const field = fieldKey(last);
    let best = -1;
    let owners: ManagedFieldsEntry[] = [];
    for (const position of this.#atParent) {
      const depth = depthAfter(position, last, field);
      if (depth < 0 || depth < best) continue;
      if (depth > best) {
        best = depth;
        owners = [];
      }
      owners.push(position.entry);
    }
    return owners;
  }
}

/** The trie key of an object's field: made once per segment, not once per entry. */
function fieldKey(segment: string): string {
  return `f:${segment}`;
}

/** Where a walk down one entry's trie and the object side by side stands. */
interface Position {
  entry: ManagedFieldsEntry;
  node: JsonObject | undefined;
  value: JsonValue | undefined;
  /** Segments walked inside the trie; -1 once the path left it. */
  depth: number;
  /** The trie ended above the path (an atomic field, or a map's existence): owned at `depth`. */
  ended: boolean;
}

function start(entry: ManagedFieldsEntry, object: JsonValue): Position {
  const node = entry.fieldsV1;
  return { entry, node, value: object, depth: node === undefined ? -1 : 0, ended: false };
}

function step(position: Position, segment: string, field: string): void {
  const { node, value } = position;
  if (position.ended || position.depth < 0 || node === undefined) return;
  const child = childNode(node, value, segment, field);
  position.value = childValue(value, segment);
  if (child !== undefined) {
    position.node = child;
    position.depth++;
    return;
  }
  // Looked at only when the path leaves the trie (enumerating keys costs more than a lookup).
  if (position.depth > 0 && isLeaf(node)) position.ended = true;
  else position.depth = -1;
}

/** The depth `position` would reach with one more segment (step without moving). */
function depthAfter(position: Position, segment: string, field: string): number {
  const { node, depth } = position;
  if (position.ended || depth < 0 || node === undefined) return depth;
  if (childNode(node, position.value, segment, field) !== undefined) return depth + 1;
  return depth > 0 && isLeaf(node) ? depth : -1;
}

/** The trie node below `node` for `segment`; `field` is its `f:` key (fieldKey). */
function childNode(
  node: JsonObject,
  value: JsonValue | undefined,
  segment: string,
  field: string,
): JsonObject | undefined {
  let child: JsonValue | undefined;
  if (Array.isArray(value)) {
    const index = Number(segment);
    if (!Number.isInteger(index) || index < 0 || index >= value.length) return undefined;
    child = itemNode(node, value[index]!, index);
  } else {
    // Trie keys all carry a prefix (`f:`), so none can be an inherited property: a plain lookup will do.
    child = node[field];
  }
  return isJsonObject(child) ? child : undefined;
}

function childValue(value: JsonValue | undefined, segment: string): JsonValue | undefined {
  if (Array.isArray(value)) {
    const index = Number(segment);
    return Number.isInteger(index) && index >= 0 ? value[index] : undefined;
  }
  return isJsonObject(value) ? getProperty(value, segment) : undefined;
}

/** The entries whose walk went deepest (and did not leave the trie). */
function deepest(positions: readonly Position[]): ManagedFieldsEntry[] {
  let best = -1;
  let owners: ManagedFieldsEntry[] = [];
  for (const position of positions) {
    if (position.depth < 0 || position.depth < best) continue;
    if (position.depth > best) {
      best = position.depth;
      owners = [];
    }
    owners.push(position.entry);
  }
  return owners;
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
