// Typed reads of an object as the API server serves it (raw JSON, never trusted to have the shape its
// type promises): the health rules read status fields that may be absent, of another type, or huge.
import { isJsonObject, type JsonObject, type JsonValue } from '../../kube/types.ts';

/** Longest text kept from the cluster (a condition's or an event's message): evidence stays small. */
export const MAX_TEXT = 240;

/** The object at `key`, if it is one. */
export function objectAt(value: JsonValue | undefined, key: string): JsonObject | undefined {
  if (!isJsonObject(value)) return undefined;
  const found = value[key];
  return isJsonObject(found) ? found : undefined;
}

/** The objects of the list at `key` (other items skipped). */
export function objectsAt(value: JsonValue | undefined, key: string): JsonObject[] {
  if (!isJsonObject(value)) return [];
  const found = value[key];
  return Array.isArray(found) ? found.filter(isJsonObject) : [];
}

/** The string at `key`, if it is one. */
export function textAt(value: JsonValue | undefined, key: string): string | undefined {
  if (!isJsonObject(value)) return undefined;
  const found = value[key];
  return typeof found === 'string' ? found : undefined;
}

/** The string at `key` shortened to MAX_TEXT characters (an ellipsis marks the cut). */
export function shortTextAt(value: JsonValue | undefined, key: string): string | undefined {
  const text = textAt(value, key);
  return text === undefined ? undefined : shorten(text);
}

export function shorten(text: string, max = MAX_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The whole number at `key`, if it is one. */
export function countAt(value: JsonValue | undefined, key: string): number | undefined {
  if (!isJsonObject(value)) return undefined;
  const found = value[key];
  return typeof found === 'number' && Number.isSafeInteger(found) ? found : undefined;
}

/** `key` is `true`. */
export function flagAt(value: JsonValue | undefined, key: string): boolean {
  return isJsonObject(value) && value[key] === true;
}

/** An RFC 3339 time at `key` in milliseconds, if it is one. */
export function timeAt(value: JsonValue | undefined, key: string): number | undefined {
  const text = textAt(value, key);
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The uid of the ownerReference marked `controller: true`, and its kind. */
export function controllerOf(metadata: JsonObject | undefined): { uid: string; kind: string } | undefined {
  for (const reference of objectsAt(metadata, 'ownerReferences')) {
    if (reference.controller !== true) continue;
    const uid = textAt(reference, 'uid');
    const kind = textAt(reference, 'kind');
    if (uid !== undefined && kind !== undefined) return { uid, kind };
  }
  return undefined;
}

/** The label `name` of an object's metadata. */
export function labelOf(metadata: JsonObject | undefined, name: string): string | undefined {
  return textAt(objectAt(metadata, 'labels'), name);
}
