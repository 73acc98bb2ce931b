import type { JsonValue } from '../kube/types.ts';

/** One field-level change of an UPDATED event (see README, "The event"). */
export interface Change {
  op: 'add' | 'remove' | 'replace';
  /** RFC 6901 JSON Pointer into the object. */
  path: string;
  /** The old value; absent for 'add'. */
  from?: JsonValue;
  /** The new value; absent for 'remove'. */
  to?: JsonValue;
}

export type EventType = 'ADDED' | 'UPDATED' | 'DELETED';

/** The event contract: one JSON line on stdout, the body of a webhook. Field order is the order printed. */
export interface ChangeEvent {
  id: string;
  type: EventType;
  time: string;
  cluster?: string;
  object: {
    apiVersion: string;
    kind: string;
    resource: string;
    namespace?: string;
    name: string;
    uid: string;
    resourceVersion: string;
  };
  changes?: Change[];
  offline?: true;
  finalStateUnknown?: true;
}
