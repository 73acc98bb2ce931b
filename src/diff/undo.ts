// Undoing an UPDATED's changes: from an object as it is after the update, the object as it was before.
// This is how the UI rebuilds the earlier versions of an object from its current state and its history
// (the history stores changes, not whole objects). Each change is checked against the document (its
// `to` must be there) so that a version that cannot be rebuilt faithfully is reported as such rather
// than shown wrong.
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { jsonEqual } from '../util/json-equal.ts';
import { getProperty, setProperty } from './json.ts';
import { parsePointer } from './pointer.ts';
import type { Change } from './types.ts';

/**
 * The document before `changes` were applied to it, or undefined when `after` does not hold what the
 * changes say it should (an older event's changes, a gap in the history). `after` is not modified.
 */
export function undoChanges(after: JsonObject, changes: readonly Change[]): JsonObject | undefined {
  return undoChangesInPlace(structuredClone(after), changes);
}

/**
 * undoChanges() on `document` itself, which it changes: the document before (`document`, or what
 * replaced it whole), or undefined when the document does not hold what the changes say it should (then
 * `document` is left part undone: throw it away). Linear in the changes and the values they carry: one
 * walk, from the last change back to the first.
 */
export function undoChangesInPlace(document: JsonObject, changes: readonly Change[]): JsonObject | undefined {
  const root: JsonObject = { document };
  // The paths of the later changes that replaced a whole value (forward, they came last).
  const replaced = new Set<string>();
  // Applied forward in order, so undone backward: an array index means what it meant at its step.
  for (let index = changes.length - 1; index >= 0; index--) {
    const change = changes[index]!;
    // A replace of a whole list supersedes the changes reported inside it.
    if (!insideOneOf(change.path, replaced) && !undoOne(root, change)) return undefined;
    if (change.op === 'replace') replaced.add(change.path);
  }
  return isJsonObject(root.document) ? root.document : undefined;
}

/** Whether a proper ancestor of `path` (a JSON Pointer: '' is the whole document) is in `paths`. */
function insideOneOf(path: string, paths: ReadonlySet<string>): boolean {
  if (paths.size === 0) return false;
  for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) {
    if (paths.has(path.slice(0, slash))) return true;
  }
  return false;
}

function undoOne(root: JsonObject, change: Change): boolean {
  let segments: string[];
  try {
    segments = ['document', ...parsePointer(change.path)];
  } catch {
    return false;
  }
  const last = segments.pop()!;
  let parent: JsonValue | undefined = root;
  for (const segment of segments) {
    if (Array.isArray(parent)) parent = parent[Number(segment)];
    else if (isJsonObject(parent)) parent = getProperty(parent, segment);
    else return false;
  }
  if (Array.isArray(parent)) {
    if (!/^(0|[1-9]\d*)$/.test(last)) return false;
    const position = Number(last);
    if (change.op === 'remove') {
      if (position > parent.length || change.from === undefined) return false;
      parent.splice(position, 0, change.from);
      return true;
    }
    const current = parent[position];
    if (current === undefined || change.to === undefined || !jsonEqual(current, change.to)) return false;
    if (change.op === 'add') parent.splice(position, 1);
    else if (change.from !== undefined) parent[position] = change.from;
    return true;
  }
  if (!isJsonObject(parent)) return false;
  if (change.op === 'remove') {
    if (Object.hasOwn(parent, last) || change.from === undefined) return false;
    setProperty(parent, last, change.from);
    return true;
  }
  const current = getProperty(parent, last);
  if (current === undefined || change.to === undefined || !jsonEqual(current, change.to)) return false;
  if (change.op === 'add') delete parent[last];
  else if (change.from !== undefined) setProperty(parent, last, change.from);
  return true;
}
