// Seeded randomness and small JSON tools for property tests (test/unit/diff-*.test.ts) and the soak
// bench (bench/soak.ts): fixed seeds, so every run sees the same cases.
import type { JsonObject, JsonValue } from '../../src/kube/types.ts';

/** mulberry32: a tiny seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sets an own, enumerable key, even "__proto__" (plain assignment would set the prototype). */
export function setKey(object: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A deep copy through JSON. */
export function clone<T extends JsonValue>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}
