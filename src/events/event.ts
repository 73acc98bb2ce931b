// The event of the contract (docs/event.md): one JSON line on stdout, the body of a webhook, a
// row of the state file's history. What every stage after the event builder passes along.
import type { Change } from '../diff/types.ts';
import type { WithoutWriteCause } from '../informer/informer.ts';
import { groupOf, qualifiedName } from '../kube/types.ts';
import { identityOf, type ObjectIdentity } from '../util/event-failures.ts';

export type EventType = 'ADDED' | 'UPDATED' | 'DELETED';

export const EVENT_TYPES: readonly EventType[] = ['ADDED', 'UPDATED', 'DELETED'];

/**
 * The root controller of an event's object (docs/stories.md): found by following `ownerReferences` with
 * `controller: true`; the object itself when nothing controls it.
 */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** A field manager of metadata.managedFields: who wrote the object, how, and when (one-second resolution). */
export interface ManagerRef {
  manager: string;
  operation: string;
  subresource?: string;
  time?: string;
}

/** A user as the API server's audit log names it. */
export interface UserInfo {
  username: string;
  groups?: string[];
  uid?: string;
}

/** Who made the change (docs/who.md). */
export interface ByInfo {
  /** The field managers whose managedFields entries this change wrote; for an ADDED, the creating one. */
  managers?: ManagerRef[];
  user?: UserInfo;
  impersonatedUser?: UserInfo;
  userAgent?: string;
  sourceIPs?: string[];
  auditID?: string;
  /** The admission review that named the user (docs/who.md). */
  reviewUID?: string;
  /**
   * How the record was joined: `exact`, `nearest` (audit records without a response object), or
   * `ambiguous` (admission reviews that name different users for the same write: nobody is named).
   */
  match?: 'exact' | 'nearest' | 'ambiguous';
}

/** Field order is the order printed. */
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
  owner?: OwnerRef;
  /** Who made the change: its field managers, and the audit record joined to it (--audit-listen). */
  by?: ByInfo;
  changes?: Change[];
  offline?: true;
  /**
   * On an UPDATED: the object changed without a write (its resourceVersion did not change), and why
   * (docs/event.md): `schema`, its CRD changed how it is served; `relist`, a relist found it so.
   */
  cause?: WithoutWriteCause;
  finalStateUnknown?: true;
}

/**
 * How output says where an offline event came from: a change without a write names its cause (a CRD
 * change, a relist), any other one happened while kubediff was not watching. Undefined when not offline.
 */
export function offlineNote(event: Pick<ChangeEvent, 'offline' | 'cause'>): string | undefined {
  if (!event.offline) return undefined;
  switch (event.cause) {
    case 'schema':
      return 'no write: served differently since its CRD changed';
    case 'relist':
      return 'no write: found changed by a relist';
    default:
      return 'while not watching';
  }
}

/** 'deployments.apps', 'configmaps': how kubectl names the event's resource type (labels, rules, logs). */
export function qualifiedResource(event: ChangeEvent): string {
  const { apiVersion, resource } = event.object;
  return qualifiedName({ group: groupOf(apiVersion), resource });
}

/** `event` with `owner` in its place in the field order (after `object`). */
export function withOwner(event: ChangeEvent, owner: OwnerRef): ChangeEvent {
  const { id, type, time, cluster, object, owner: _previous, ...rest } = event;
  return { id, type, time, ...(cluster !== undefined ? { cluster } : {}), object, owner, ...rest };
}

/** Which object an event is about, for failure reports: never its contents. */
export function identityOfEvent(event: ChangeEvent): ObjectIdentity {
  return identityOf(qualifiedResource(event), event.object);
}

/**
 * `event` with `by` merged in, its fields kept in the printed order (`by` before `changes`): a stage that
 * learns who made a change adds to what an earlier one found.
 */
export function withBy(event: ChangeEvent, by: ByInfo): ChangeEvent {
  const { changes, offline, cause, finalStateUnknown, by: known, ...head } = event;
  return {
    ...head,
    by: { ...known, ...by },
    ...(changes !== undefined ? { changes } : {}),
    ...(offline !== undefined ? { offline } : {}),
    ...(cause !== undefined ? { cause } : {}),
    ...(finalStateUnknown !== undefined ? { finalStateUnknown } : {}),
  };
}
