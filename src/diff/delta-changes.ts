// Turns a jsondiffpatch delta into the event contract's `changes` (PRODUCT.md, "The event").
//
// The walk follows the delta and both values side by side, and takes every `from`/`to` from the
// values themselves, never from the delta: the values are the truth (jsondiffpatch omits moved
// values, and a text diff would hold a patch, not a string). `from`/`to` therefore share structure
// with the inputs; like the inputs, they must be treated as read-only.
//
// Order is deterministic and depth-first:
// - objects: properties in the new object's key order, then removed properties in the old order;
// - arrays: removes first, from the highest old index down, then adds and changes of matched items
//   by ascending new index. That is the order in which applying them one by one, as a JSON Patch,
//   keeps every index valid: a `remove` names the item's index in the old array, an `add` or a
//   change inside an item names its index in the new array.
//
// Reordered arrays: when matched items changed their relative order (jsondiffpatch reports a
// "move"), the array's adds, removes and changes inside items are still reported as above, so a
// change of /…/containers/1/image stays visible and filterable, and then ONE `replace` of the whole
// array (from = old array, to = new array) follows to report the new order. Moves alone (a pure
// reorder) therefore give exactly that one replace. A consumer applying changes as a patch applies
// that final replace and may skip the changes reported below it, which it supersedes.

import type { ArrayDelta, Delta, ObjectDelta } from 'jsondiffpatch';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { jsonEqual } from '../util/json-equal.ts';
import { getProperty } from './json.ts';
import { formatPointer } from './pointer.ts';
import { shareUnchanged } from './share.ts';
import type { Change } from './types.ts';

/**
 * jsondiffpatch collects a child's delta with `result[name] = …`, and reads a missing "__proto__"
 * as the prototype: a key of that name (legal in a ConfigMap, or anywhere in a custom resource)
 * would be diffed wrongly. So the differ skips the key and, instead, records the trail to it.
 */
export const UNDIFFABLE_KEY = '__proto__';

/** A jsondiffpatch delta, plus what it cannot express. */
export interface ComputedDelta {
  delta: Delta;
  /**
   * Old-side objects and arrays on the way down to a "__proto__" key that was added, removed or
   * changed. The walk enters them even where the delta says nothing changed.
   */
  undiffableTrail: ReadonlySet<JsonValue>;
}

/** Computes the delta of two values; used once for the objects, and again below each "__proto__". */
export type Differ = (left: JsonValue, right: JsonValue) => ComputedDelta;

/** jsondiffpatch's marker in the third slot of a moved array item: `_old: [value, newIndex, 3]`. */
const MOVED = 3;

type Path = (string | number)[];

export function changesBetween(from: JsonValue, to: JsonValue, differ: Differ): Change[] {
  const changes: Change[] = [];
  collectDiff({ differ, changes, trail: new Set() }, from, to, []);
  return changes;
}

/**
 * The same changes as changesBetween, for whole versions of an object, in one walk over both: objects are
 * compared here key by key (no copy, no delta object, no context per node), and only an array that differs
 * goes through the differ, for its list-key matching, after its items equal to `from`'s are shared
 * (share.ts) so that the differ stops at once on each. Sharing is positional and local (what it makes at
 * a path depends only on the two values there), so sharing each differing array alone gives what sharing
 * the whole objects first gave, without copying the objects on the way to it or walking them twice.
 */
export function changesOfVersions(from: JsonValue, to: JsonValue, differ: Differ): Change[] {
  const changes: Change[] = [];
  collectVersions({ differ, changes, trail: NO_TRAIL }, from, to, [], false);
  return changes;
}

/** The trail of a walk above any differ call: empty, and never added to (the differ makes its own). */
const NO_TRAIL: ReadonlySet<JsonValue> = new Set();

/**
 * Deeper than any Kubernetes kind nests, the walk shares the rest of the subtree first (share.ts, which
 * takes two stack frames per level): an object nested thousands of levels deep still makes the diff fail
 * (it is then reported as whole top-level changes, see event-builder.ts) at the depth it always did.
 */
const DIRECT_WALK_DEPTH = 32;

/**
 * Objects key by key. `shared`: below a value already shared (its subtrees equal to `from`'s are
 * `from`'s own), so that equal subtrees are skipped at once and a differing array goes straight to the
 * differ; otherwise a differing array (or an object below DIRECT_WALK_DEPTH) is shared first.
 */
function collectVersions(walk: Walk, from: JsonValue, to: JsonValue, path: Path, shared: boolean): void {
  if (from === to) return;
  if (isJsonObject(from) && isJsonObject(to) && (shared || path.length < DIRECT_WALK_DEPTH)) {
    const keys = Object.keys(to);
    const oldKeys = Object.keys(from);
    // Versions of an object mostly keep their keys in place: a key at the same position is an own key of
    // both (looked up directly), and when all are, no key was removed (no second pass over the old keys).
    let aligned = keys.length === oldKeys.length;
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index]!;
      const newValue = to[key]!;
      let oldValue: JsonValue | undefined;
      if (oldKeys[index] === key) oldValue = from[key];
      else {
        aligned = false;
        oldValue = getProperty(from, key);
      }
      path.push(key);
      if (oldValue === undefined) walk.changes.push({ op: 'add', path: formatPointer(path), to: newValue });
      else collectVersions(walk, oldValue, newValue, path, shared);
      path.pop();
    }
    if (!aligned) collectRemovedKeys(walk, from, to, path);
  } else if (shared && Array.isArray(from) && Array.isArray(to)) {
    collectDiff(walk, from, to, path);
  } else if (!shared && typeof from === 'object' && from !== null && typeof to === 'object' && to !== null) {
    const sharedTo = shareUnchanged(from, to);
    if (sharedTo !== from) collectVersions(walk, from, sharedTo, path, true);
  } else {
    walk.changes.push({ op: 'replace', path: formatPointer(path), from, to });
  }
}

interface Walk {
  readonly differ: Differ;
  readonly changes: Change[];
  readonly trail: ReadonlySet<JsonValue>;
}

function collectDiff(parent: Walk, from: JsonValue, to: JsonValue, path: Path): void {
  const { delta, undiffableTrail } = parent.differ(from, to);
  const walk: Walk = { differ: parent.differ, changes: parent.changes, trail: undiffableTrail };
  collectValue(walk, delta, from, to, path);
}

function collectValue(walk: Walk, delta: Delta, from: JsonValue, to: JsonValue, path: Path): void {
  if (delta === undefined) {
    if (!walk.trail.has(from)) return;
    // Unchanged for jsondiffpatch, but a "__proto__" key below changed: walk down with no delta.
    if (Array.isArray(from) && Array.isArray(to)) collectArray(walk, { _t: 'a' }, from, to, path);
    else if (isJsonObject(from) && isJsonObject(to)) collectObject(walk, {}, from, to, path);
    return;
  }
  if (!Array.isArray(delta)) {
    // A nested delta: both sides are objects or both are arrays.
    if (Array.isArray(from) && Array.isArray(to) && isArrayDelta(delta)) {
      collectArray(walk, delta, from, to, path);
      return;
    }
    if (isJsonObject(from) && isJsonObject(to) && !isArrayDelta(delta)) {
      collectObject(walk, delta, from, to, path);
      return;
    }
  }
  // A leaf: a scalar changed, or the value changed type (object → string, array → object …).
  walk.changes.push({ op: 'replace', path: formatPointer(path), from, to });
}

function isArrayDelta(delta: ObjectDelta | ArrayDelta): delta is ArrayDelta {
  return delta._t === 'a';
}

function collectObject(walk: Walk, delta: ObjectDelta, from: JsonObject, to: JsonObject, path: Path): void {
  for (const key of Object.keys(to)) {
    const newValue = to[key]!;
    const oldValue = getProperty(from, key);
    path.push(key);
    if (oldValue === undefined) {
      walk.changes.push({ op: 'add', path: formatPointer(path), to: newValue });
    } else if (key === UNDIFFABLE_KEY) {
      if (!jsonEqual(oldValue, newValue)) collectDiff(walk, oldValue, newValue, path);
    } else {
      collectValue(walk, Object.hasOwn(delta, key) ? delta[key] : undefined, oldValue, newValue, path);
    }
    path.pop();
  }
  collectRemovedKeys(walk, from, to, path);
}

/** Removed properties, in the old object's key order. */
function collectRemovedKeys(walk: Walk, from: JsonObject, to: JsonObject, path: Path): void {
  for (const key of Object.keys(from)) {
    if (Object.hasOwn(to, key)) continue;
    path.push(key);
    walk.changes.push({ op: 'remove', path: formatPointer(path), from: from[key]! });
    path.pop();
  }
}

/** An array delta read into what the walk needs. */
interface ArrayEdits {
  /** Old indices of removed items. */
  removed: number[];
  /** Old index → new index of items that moved. */
  moved: Map<number, number>;
  /** New index → delta, for added items ([value]) and changed matched items. */
  atNewIndex: Map<number, Delta>;
}

function readArrayDelta(delta: ArrayDelta): ArrayEdits {
  const edits: ArrayEdits = { removed: [], moved: new Map(), atNewIndex: new Map() };
  for (const key of Object.keys(delta)) {
    if (key === '_t') continue;
    if (key.startsWith('_')) {
      const entry = delta[key as `_${number}`];
      const oldIndex = Number(key.slice(1));
      if (entry === undefined) continue;
      if (entry[2] === MOVED) edits.moved.set(oldIndex, entry[1]);
      else edits.removed.push(oldIndex);
    } else {
      edits.atNewIndex.set(Number(key), delta[key as `${number}`]);
    }
  }
  return edits;
}

function isAddedItem(entry: Delta): boolean {
  return Array.isArray(entry) && entry.length === 1;
}

function collectArray(walk: Walk, delta: ArrayDelta, from: JsonValue[], to: JsonValue[], path: Path): void {
  const edits = readArrayDelta(delta);
  const removedDescending = edits.removed.sort((a, b) => b - a);
  for (const oldIndex of removedDescending) {
    path.push(oldIndex);
    walk.changes.push({ op: 'remove', path: formatPointer(path), from: from[oldIndex]! });
    path.pop();
  }
  const oldIndexOf = matchedOldIndices(edits, from.length, to.length);
  // Usually only the items the delta names; every item when one may hold a changed "__proto__".
  const newIndices = walk.trail.size === 0 ? [...edits.atNewIndex.keys()].sort((a, b) => a - b) : to.keys();
  for (const newIndex of newIndices) {
    const entry = edits.atNewIndex.get(newIndex);
    const newItem = to[newIndex]!;
    path.push(newIndex);
    if (isAddedItem(entry)) {
      walk.changes.push({ op: 'add', path: formatPointer(path), to: newItem });
    } else {
      collectValue(walk, entry, from[oldIndexOf[newIndex]!]!, newItem, path);
    }
    path.pop();
  }
  if (edits.moved.size > 0) {
    walk.changes.push({ op: 'replace', path: formatPointer(path), from, to });
  }
}

/**
 * For each new index, the old index of the item it was matched with (-1 for added items).
 * The delta names moves explicitly; the other matched items are the ones neither removed nor
 * added, and they kept their relative order, so they pair up in sequence.
 */
function matchedOldIndices(edits: ArrayEdits, oldLength: number, newLength: number): Int32Array {
  const oldIndexOf = new Int32Array(newLength).fill(-1);
  const oldGone = new Set(edits.removed);
  const newTaken = new Set<number>();
  for (const [oldIndex, newIndex] of edits.moved) {
    oldGone.add(oldIndex);
    newTaken.add(newIndex);
    oldIndexOf[newIndex] = oldIndex;
  }
  for (const [newIndex, entry] of edits.atNewIndex) {
    if (isAddedItem(entry)) newTaken.add(newIndex);
  }
  let oldIndex = 0;
  for (let newIndex = 0; newIndex < newLength; newIndex++) {
    if (newTaken.has(newIndex)) continue;
    while (oldGone.has(oldIndex)) oldIndex++;
    if (oldIndex >= oldLength) throw new Error('internal error: an array delta does not match its arrays');
    oldIndexOf[newIndex] = oldIndex++;
  }
  return oldIndexOf;
}
