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
