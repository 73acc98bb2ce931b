// Small helpers over raw JSON values, shared by redaction, normalization and the diff.

import type { JsonObject, JsonValue } from '../kube/types.ts';

/**
 * JSON.parse makes "__proto__" an ordinary own key (a ConfigMap may well have one), but assigning it
 * with `object[key] = value` would replace the object's prototype instead. Copies use this setter.
 */
export function setProperty(object: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

/** A shallow copy that keeps own "__proto__" keys as keys. */
export function copyObject(object: JsonObject): JsonObject {
  const copy: JsonObject = {};
  for (const key of Object.keys(object)) setProperty(copy, key, object[key]!);
  return copy;
}

/** Own property lookup: `object.__proto__` would otherwise read the prototype when the key is absent. */
export function getProperty(object: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** Deep equality of JSON values: object key order does not matter, array order does. */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let index = 0; index < a.length; index++) {
      if (!jsonEqual(a[index]!, b[index]!)) return false;
    }
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    const other = getProperty(b, key);
    if (other === undefined || !jsonEqual(a[key]!, other)) return false;
  }
  return true;
}
