import type { JsonValue } from '../kube/types.ts';

/** One field-level change of an UPDATED event (see docs/event.md). */
export interface Change {
  op: 'add' | 'remove' | 'replace';
  /** RFC 6901 JSON Pointer into the object. */
  path: string;
  /** The old value; absent for 'add'. */
  from?: JsonValue;
  /** The new value; absent for 'remove'. */
  to?: JsonValue;
  /** The field manager that owns the path in the new object (docs/who.md); absent when unknown. */
  manager?: string;
}
