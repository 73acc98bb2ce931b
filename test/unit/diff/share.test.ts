// The diff's fast path (changesOfVersions and share.ts) must report exactly what jsondiffpatch reports
// for the whole objects: checked against that reference on fixed cases and on random objects and
// edits (fixed seeds), with keys that need escaping, "__proto__", keyed and keyless lists,
// reorders and reordered keys.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changesBetween } from '../../../src/diff/delta-changes.ts';
import { computeDelta, diffObjects } from '../../../src/diff/diff.ts';
import { shareUnchanged } from '../../../src/diff/share.ts';
import type { JsonObject, JsonValue } from '../../../src/kube/types.ts';
import { clone, seededRandom, setKey } from '../../helpers/random-json.ts';

/** What diffObjects reported before the fast path: jsondiffpatch over the whole objects. */
function reference(old: JsonObject, updated: JsonObject) {
  return changesBetween(old, updated, computeDelta);
}

const KEYS = ['a', 'b', 'spec', 'data', 'x/y', 't~z', '__proto__', '', '0', '10'];
const NAMES = ['web', 'proxy', 'init'];
const STRINGS = ['', 'v1', 'v2', 'x'.repeat(80)];

class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = seededRandom(seed);
  }
  int(limit: number): number {
    return Math.floor(this.next() * limit);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  scalar(): JsonValue {
    return this.pick<JsonValue>([this.pick(STRINGS), this.int(3), this.int(2) === 0, null]);
  }
  item(kind: number, depth: number): JsonValue {
    if (kind === 0) return this.scalar();
    if (kind === 1)
      return { name: this.pick(NAMES), image: this.pick(STRINGS), env: this.list(depth + 1, 0) };
    if (kind === 2) return { weight: this.int(3), tags: this.list(depth + 1, 0) }; // keyless: by position
    return this.value(depth + 1);
  }
  list(depth: number, kind = this.int(4)): JsonValue[] {
    const length = depth > 3 ? 0 : this.int(5);
    return Array.from({ length }, () => this.item(kind, depth));
  }
  object(depth: number): JsonObject {
    const result: JsonObject = {};
    const size = depth > 3 ? 0 : this.int(5);
    for (let index = 0; index < size; index++) setKey(result, this.pick(KEYS), this.value(depth + 1));
    return result;
  }
  value(depth: number): JsonValue {
    if (depth > 3 || this.int(5) < 2) return this.scalar();
    return this.int(2) === 0 ? this.object(depth) : this.list(depth);
  }
  /** One edit somewhere in `target`, in place. */
  edit(target: JsonObject | JsonValue[], depth: number): void {
    const children = Array.isArray(target) ? Array.from(target.keys()) : Object.keys(target);
    if (children.length > 0 && this.int(10) < 6) {
      const child = this.pick<string | number>(children);
      const next = Array.isArray(target) ? target[child as number] : target[child as string];
      if (typeof next === 'object' && next !== null) {
        this.edit(next, depth + 1);
        return;
      }
    }
    if (Array.isArray(target)) {
      const action = this.int(6);
      if (action === 0 || target.length === 0)
        target.splice(this.int(target.length + 1), 0, this.item(this.int(4), depth));
      else if (action === 1) target.splice(this.int(target.length), 1);
      else if (action === 2) target[this.int(target.length)] = this.item(this.int(4), depth);
      else if (action === 3)
        target.push(clone(target[this.int(target.length)]!)); // an equal item twice
      else if (action === 4) {
        const [moved] = target.splice(this.int(target.length), 1);
        target.splice(this.int(target.length + 1), 0, moved!);
      } else target.reverse();
      return;
    }
    const action = this.int(4);
    if (action === 0) {
      // The same properties in another order.
      const entries = Object.keys(target)
        .map((key) => [key, target[key]!] as const)
        .reverse();
      for (const [key] of entries) delete target[key];
      for (const [key, value] of entries) setKey(target, key, value);
      return;
    }
    const key = this.pick(KEYS);
    if (Object.hasOwn(target, key) && action === 1) delete target[key];
    else setKey(target, key, this.value(depth + 1));
  }
}

describe('shareUnchanged', () => {
  it('returns the previous value itself when equal, property order included', () => {
    const previous = { a: [1, { b: 'x' }], c: { d: null } };
    assert.equal(shareUnchanged(previous, clone(previous)), previous);
    const reordered = { c: { d: null }, a: [1, { b: 'x' }] };
    const shared = shareUnchanged(previous, reordered) as JsonObject;
    assert.notEqual(shared, previous);
    assert.deepEqual(Object.keys(shared), ['c', 'a']);
    assert.equal(shared.a, previous.a);
    assert.equal(shared.c, previous.c);
  });

  it('shares equal subtrees, keeps changed ones, and mutates neither input', () => {
    const previous = {
      metadata: { labels: { app: 'web' }, name: 'a' },
      spec: { items: [{ k: 1 }, { k: 2 }] },
    };
    const next = {
      metadata: { labels: { app: 'web' }, name: 'b' },
      spec: { items: [{ k: 1 }, { k: 3 }, { k: 4 }] },
    };
    const before = [JSON.stringify(previous), JSON.stringify(next)];
    const shared = shareUnchanged(previous, next) as typeof next;
    assert.equal(JSON.stringify(shared), JSON.stringify(next));
    assert.equal(shared.metadata.labels, previous.metadata.labels);
    assert.equal(shared.spec.items[0], previous.spec.items[0]);
    assert.equal(shared.spec.items[1], next.spec.items[1]);
    assert.deepEqual([JSON.stringify(previous), JSON.stringify(next)], before);
  });

  it('keeps own "__proto__" keys as keys', () => {
    const previous = JSON.parse('{"data":{"__proto__":{"x":1},"a":"1"}}') as JsonObject;
    const next = JSON.parse('{"data":{"__proto__":{"x":1},"a":"2"}}') as JsonObject;
    const shared = shareUnchanged(previous, next) as JsonObject;
    const data = shared.data as JsonObject;
    assert.equal(Object.getPrototypeOf(data), Object.prototype);
    assert.deepEqual(Object.keys(data), ['__proto__', 'a']);
    assert.equal(JSON.stringify(shared), JSON.stringify(next));
  });

  it('shares a prefix when items were removed from the end', () => {
    const previous: JsonValue[] = [{ a: 1 }, { b: 2 }, { c: 3 }];
    const shared = shareUnchanged(previous, [{ a: 1 }, { b: 2 }]) as JsonValue[];
    assert.deepEqual(shared, [{ a: 1 }, { b: 2 }]);
    assert.equal(shared[0], previous[0]);
  });
});

describe('diffObjects with shared subtrees', () => {
  it('reports what jsondiffpatch reports for the whole objects (random objects and edits)', () => {
    let nonEmpty = 0;
    for (let seed = 1; seed <= 4000; seed++) {
      const random = new Random(seed);
      const old = random.object(0);
      setKey(old, 'spec', {
        containers: random.list(1, 1),
        args: random.list(1, 0),
        rules: random.list(1, 2),
      });
      const updated = clone(old);
      const edits = 1 + random.int(4);
      for (let index = 0; index < edits; index++) random.edit(updated, 0);
      const expected = reference(old, updated);
      const actual = diffObjects(old, updated);
      assert.deepEqual(
        actual,
        expected,
        `seed ${seed}\nold ${JSON.stringify(old)}\nnew ${JSON.stringify(updated)}`,
      );
      if (expected.length > 0) nonEmpty++;
    }
    assert.ok(nonEmpty > 3000, `only ${nonEmpty} cases had changes`);
  });

  it('reports what jsondiffpatch reports below the depth where the direct walk hands over', () => {
    const deep = (depth: number, leaf: JsonValue): JsonObject => {
      let value: JsonValue = leaf;
      for (let level = depth; level > 0; level--) value = { [`k${level}`]: value, same: level };
      return value as JsonObject;
    };
    const cases: [JsonObject, JsonObject][] = [
      [deep(40, { a: 1, l: [{ name: 'x', v: 1 }] }), deep(40, { b: 2, l: [{ name: 'x', v: 2 }] })],
      [deep(33, 'old'), deep(33, 'new')],
      [deep(31, { a: [1, 2] }), deep(31, { a: [2, 1], c: {} })],
    ];
    for (const [old, updated] of cases) {
      const expected = reference(old, clone(updated));
      assert.ok(expected.length > 0);
      assert.deepEqual(diffObjects(old, clone(updated)), expected, JSON.stringify([old, updated]));
    }
  });

  it('reports what jsondiffpatch reports for list edits of Kubernetes shapes', () => {
    const pod = (containers: JsonValue[]): JsonObject => ({ spec: { containers } });
    const c = (name: string, image: string) => ({ name, image, ports: [{ containerPort: 80 }] });
    const cases: [JsonObject, JsonObject][] = [
      [pod([c('a', '1'), c('b', '1')]), pod([c('x', '1'), c('a', '1'), c('b', '2')])],
      [pod([c('a', '1'), c('b', '1')]), pod([c('b', '1'), c('a', '1')])],
      [pod([c('a', '1'), c('b', '1'), c('c', '1')]), pod([c('c', '2'), c('a', '1')])],
      [{ l: [{ w: 1 }, { w: 2 }] }, { l: [{ w: 0 }, { w: 1 }, { w: 2 }] }],
      [{ l: [{ w: 1 }, { w: 1 }] }, { l: [{ w: 1 }] }],
      [{ l: ['a', 'b', 'c'] }, { l: ['c', 'a', 'b'] }],
    ];
    for (const [old, updated] of cases) {
      assert.deepEqual(
        diffObjects(old, clone(updated)),
        reference(old, clone(updated)),
        JSON.stringify([old, updated]),
      );
    }
  });
});
