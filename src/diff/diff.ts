// The field-by-field diff of two versions of an object (normally both from normalizeObject).

import type { DiffContext, Filter } from 'jsondiffpatch';
import { create } from 'jsondiffpatch';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { jsonEqual } from '../util/json-equal.ts';
import type { ComputedDelta } from './delta-changes.ts';
import { changesOfVersions, UNDIFFABLE_KEY } from './delta-changes.ts';
import { getProperty } from './json.ts';
import { listItemKey } from './list-keys.ts';
import type { Change } from './types.ts';

/**
 * List items are matched by their Kubernetes merge key (see listItemKey); items without one, and
 * nested arrays, by position. jsondiffpatch compares primitives (args, finalizers) by value itself.
 * The position hash starts with '#', which no merge key does, so the two never collide.
 */
function itemIdentity(item: object, index?: number): string | undefined {
  const key = listItemKey(item as JsonValue);
  if (key !== undefined) return key;
  return index === undefined ? undefined : `#${index}`;
}

/**
 * Replaces jsondiffpatch's text filter: a changed string is always one whole replace. Without this,
 * strings of 60+ characters would get a text patch as soon as anything in the process loads
 * jsondiffpatch's text-diff support (its diff-match-patch instance is module-wide).
 */
const wholeStringDiff: Filter<DiffContext> = Object.assign(
  (context: DiffContext): void => {
    // The trivial filter before this one has already handled equal strings and differing types.
    if (context.leftType === 'string') context.setResult([context.left, context.right]).exit();
  },
  { filterName: 'wholeStrings' },
);

/**
 * Filled while the differ runs: see ComputedDelta.undiffableTrail. jsondiffpatch is synchronous and
 * a nested diff only starts after the outer one returned, so one slot for the process is enough.
 */
let undiffableTrail: Set<JsonValue> | undefined;

/** Skips "__proto__" keys (see UNDIFFABLE_KEY), recording the trail to those whose value changed. */
function diffableProperty(name: string, context: DiffContext): boolean {
  if (name !== UNDIFFABLE_KEY) return true;
  const oldValue = getProperty(context.left as JsonObject, name);
  const newValue = getProperty(context.right as JsonObject, name);
  const unchanged = oldValue !== undefined && newValue !== undefined && jsonEqual(oldValue, newValue);
  if (!unchanged && undiffableTrail) {
    for (let step: DiffContext | undefined = context; step; step = step.parent) {
      undiffableTrail.add(step.left as JsonValue);
    }
  }
  return false;
}

// One instance for the process: it holds no per-diff state.
const differ = create({
  objectHash: itemIdentity,
  arrays: { detectMove: true, includeValueOnMove: false },
  // Delta values are never read (changes take their values from the inputs), so do not copy them.
  cloneDiffValues: false,
  propertyFilter: diffableProperty,
});
differ.processor.pipes.diff.replace('texts', wholeStringDiff);

/** The jsondiffpatch delta of two values, and the trail to their "__proto__" keys (see delta-changes.ts). */
export function computeDelta(left: JsonValue, right: JsonValue): ComputedDelta {
  const trail = new Set<JsonValue>();
  undiffableTrail = trail;
  try {
    return { delta: differ.diff(left, right), undiffableTrail: trail };
  } finally {
    undiffableTrail = undefined;
  }
}

/**
 * The changes that turn `oldObj` into `newObj`, as the event contract reports them (RFC 6901 paths,
 * list items matched by merge key; ordering and array rules in delta-changes.ts). `from`/`to` share
 * structure with the inputs and must not be mutated.
 */
export function diffObjects(oldObj: JsonObject, newObj: JsonObject): Change[] {
  // A watch update, a resync and a relist all hand over a whole object that is mostly equal to the
  // one before. One plain walk over both compares objects key by key and scalars by value, and hands only
  // a changed array to jsondiffpatch (which costs many times more per node), for its list-key matching,
  // with the array's unchanged items shared first (see share.ts). The changes are those jsondiffpatch
  // gives for the whole objects (test/unit/diff/share.test.ts).
  return changesOfVersions(oldObj, newObj, computeDelta);
}
