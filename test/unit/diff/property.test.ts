// Property test: for random objects and random edits, applying the reported changes to the old
// object, in order, gives the new object. Seeds are fixed, so a failure is reproducible.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffObjects } from '../../../src/diff/diff.ts';
import { parsePointer } from '../../../src/diff/pointer.ts';
import type { Change } from '../../../src/diff/types.ts';
import { undoChanges } from '../../../src/diff/undo.ts';
import type { JsonObject, JsonValue } from '../../../src/kube/types.ts';
import { jsonEqual } from '../../../src/util/json-equal.ts';
import { applyChanges } from '../../helpers/json-patch.ts';
import { clone, seededRandom, setKey } from '../../helpers/random-json.ts';

class Generator {
  readonly random: () => number;
  constructor(seed: number) {
    this.random = seededRandom(seed);
  }
  int(limit: number): number {
    return Math.floor(this.random() * limit);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(probability: number): boolean {
    return this.random() < probability;
  }
}

// Keys that need escaping, and one that JavaScript treats specially.
const KEYS = ['a', 'b', 'spec', 'data', 'x/y', 't~z', '__proto__', ''];
const NAMES = ['web', 'proxy', 'init', 'debug', 'a/b'];
const STRINGS = ['', 'v1', 'v2', 'shop:1.4', 'x'.repeat(80)];

function scalar(gen: Generator): JsonValue {
  return gen.pick<() => JsonValue>([
    () => gen.pick(STRINGS),
    () => gen.int(5),
    () => gen.chance(0.5),
    () => null,
  ])();
}

function listItem(gen: Generator, kind: number, depth: number): JsonValue {
  switch (kind) {
    case 0:
      return scalar(gen);
    case 1:
      return { name: gen.pick(NAMES), image: gen.pick(STRINGS), env: list(gen, depth + 1, 1) };
    case 2:
      return {
        containerPort: gen.pick([80, 443, 53]),
        protocol: gen.pick(['TCP', 'UDP']),
        hostPort: gen.int(3),
      };
    case 3:
      return { type: gen.pick(['Ready', 'Available']), status: gen.pick(['True', 'False']) };
    default:
      return value(gen, depth + 1);
  }
}

/** A list of one kind of item, as Kubernetes lists are; kind 4 mixes anything. */
function list(gen: Generator, depth: number, kind = gen.int(5)): JsonValue[] {
  const length = depth > 3 ? 0 : gen.int(5);
  return Array.from({ length }, () => listItem(gen, kind, depth));
}

function object(gen: Generator, depth: number): JsonObject {
  const result: JsonObject = {};
  const size = depth > 3 ? 0 : gen.int(4);
  for (let index = 0; index < size; index++) setKey(result, gen.pick(KEYS), value(gen, depth + 1));
  return result;
}

function value(gen: Generator, depth: number): JsonValue {
  if (depth > 3 || gen.chance(0.4)) return scalar(gen);
  return gen.chance(0.5) ? object(gen, depth) : list(gen, depth);
}

/** One random edit somewhere in `target` (a fresh copy, edited in place). */
function edit(gen: Generator, target: JsonObject | JsonValue[], depth: number): void {
  const children = Array.isArray(target) ? Array.from(target.keys()) : Object.keys(target);
  if (children.length > 0 && gen.chance(0.6)) {
    const child = gen.pick<string | number>(children);
    const next = Array.isArray(target) ? target[child as number] : target[child as string];
    if (typeof next === 'object' && next !== null) {
      edit(gen, next, depth + 1);
      return;
    }
  }
  if (Array.isArray(target)) {
    const kindOf = target.length > 0 && typeof target[0] === 'object' && target[0] !== null ? 4 : 0;
    const at = gen.int(target.length + 1);
    const action = gen.int(5);
    if (action === 0 || target.length === 0)
      target.splice(at, 0, listItem(gen, gen.chance(0.5) ? kindOf : 1, depth));
    else if (action === 1) target.splice(gen.int(target.length), 1);
    else if (action === 2) target[gen.int(target.length)] = listItem(gen, gen.int(5), depth);
    else if (action === 3) {
      // Move one item: a reorder.
      const [moved] = target.splice(gen.int(target.length), 1);
      target.splice(gen.int(target.length + 1), 0, moved!);
    } else target.reverse();
    return;
  }
  const key = gen.pick(KEYS);
  if (Object.hasOwn(target, key) && gen.chance(0.4)) delete target[key];
  else setKey(target, key, value(gen, depth + 1));
}

function assertWellFormed(change: Change): void {
  assert.equal(change.op === 'add' ? 'from' in change : change.from === undefined, false, 'from');
  assert.equal(change.op === 'remove' ? 'to' in change : change.to === undefined, false, 'to');
  parsePointer(change.path);
}

describe('diffObjects (property)', () => {
  it('reports changes that turn the old object into the new one, and back (undone)', () => {
    let reorders = 0;
    let protoKeys = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const gen = new Generator(seed);
      const old = object(gen, 0);
      setKey(old, 'spec', { containers: list(gen, 1, 1), args: list(gen, 1, 0), ports: list(gen, 1, 2) });
      const updated = clone(old);
      const edits = 1 + gen.int(4);
      for (let index = 0; index < edits; index++) edit(gen, updated, 0);
      const context = `seed ${seed}\nold ${JSON.stringify(old)}\nnew ${JSON.stringify(updated)}`;

      const changes = diffObjects(old, updated);
      try {
        changes.forEach(assertWellFormed);
        assert.deepEqual(applyChanges(old, changes), updated);
        // The UI rebuilds earlier versions this way (src/diff/undo.ts).
        assert.deepEqual(undoChanges(updated, changes), old, 'undone');
        assert.equal(changes.length > 0, !jsonEqual(old, updated));
        assert.deepEqual(diffObjects(updated, clone(updated)), []);
      } catch (error) {
        assert.fail(`${context}\nchanges ${JSON.stringify(changes)}\n${String(error)}`);
      }
      if (
        changes.some((change, index) =>
          changes.slice(index + 1).some((l) => change.path.startsWith(`${l.path}/`)),
        )
      )
        reorders++;
      if (changes.some((change) => change.path.includes('__proto__'))) protoKeys++;
    }
    // The generator must actually exercise the rare paths.
    assert.ok(reorders > 20, `only ${reorders} cases mixed a reorder with other changes`);
    assert.ok(protoKeys > 50, `only ${protoKeys} cases changed a __proto__ key`);
  });
});
