// Applies an event's changes to an object as an RFC 6902 JSON Patch, checking every `from` (what a `test`
// operation would), so that a wrong `from` side fails as surely as a wrong `to`. The reorder rule of
// src/diff/delta-changes.ts: a later `replace` of a whole list supersedes the changes reported inside
// it, which are then skipped (their `from` sides are the old list's). Used by the diff's property test
// and by the event contract's test over a real upgrade (test/integration/watch-upgrade.test.ts).
import assert from 'node:assert/strict';
import { parsePointer } from '../../src/diff/pointer.ts';
import type { Change } from '../../src/diff/types.ts';
import type { JsonObject, JsonValue } from '../../src/kube/types.ts';
import { clone, setKey } from './random-json.ts';

/** `document` with `changes` applied, in order (a copy: `document` is not changed). Throws on a mismatch. */
export function applyChanges(document: JsonObject, changes: readonly Change[]): JsonValue {
  const effective = changes.filter(
    (change, index) =>
      !changes
        .slice(index + 1)
        .some((later) => later.op === 'replace' && change.path.startsWith(`${later.path}/`)),
  );
  const root: JsonObject = { document: clone(document) };
  for (const change of effective) applyChange(root, change);
  return root.document!;
}

function applyChange(root: JsonObject, change: Change): void {
  const segments = ['document', ...parsePointer(change.path)];
  const last = segments.pop()!;
  let parent: JsonValue = root;
  for (const segment of segments) {
    assert.ok(typeof parent === 'object' && parent !== null, `${change.path}: no container at ${segment}`);
    parent = Array.isArray(parent) ? parent[Number(segment)]! : parent[segment]!;
  }
  assert.ok(typeof parent === 'object' && parent !== null, `${change.path}: parent is not a container`);
  if (Array.isArray(parent)) {
    assert.match(last, /^(0|[1-9]\d*)$/, `${change.path}: not an index`);
    const index = Number(last);
    if (change.op === 'add') {
      assert.ok(index <= parent.length, `${change.path}: add beyond the end`);
      parent.splice(index, 0, change.to!);
      return;
    }
    assert.ok(index < parent.length, `${change.path}: no item`);
    assert.deepEqual(parent[index], change.from, `${change.path}: from differs`);
    if (change.op === 'remove') parent.splice(index, 1);
    else parent[index] = change.to!;
    return;
  }
  if (change.op === 'add') {
    assert.equal(Object.hasOwn(parent, last), false, `${change.path}: add of an existing key`);
    setKey(parent, last, change.to!);
    return;
  }
  assert.ok(Object.hasOwn(parent, last), `${change.path}: no such key`);
  assert.deepEqual(parent[last], change.from, `${change.path}: from differs`);
  if (change.op === 'remove') delete parent[last];
  else setKey(parent, last, change.to!);
}
