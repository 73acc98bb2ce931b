// The event of the contract (README, "The event"): one JSON line on stdout, the body of a webhook, a
// row of the state file's history. What every stage after the event builder passes along.
import type { Change } from '../diff/types.ts';
import { identityOf, type ObjectIdentity } from '../util/event-failures.ts';

export type EventType = 'ADDED' | 'UPDATED' | 'DELETED';

export const EVENT_TYPES: readonly EventType[] = ['ADDED', 'UPDATED', 'DELETED'];

export interface ManagerRef {
  manager: string;
  operation: string;
  subresource?: string;
  time?: string;
}
export interface UserInfo {
  username: string;
  groups?: string[];
  uid?: string;
}
export interface ByInfo {
  managers?: ManagerRef[]; // #14: field managers whose managedFields entries changed
  user?: UserInfo; // #15: from the audit event
  impersonatedUser?: UserInfo; // #15
  userAgent?: string; // #15
  sourceIPs?: string[]; // #15
  auditID?: string; // #15
  match?: 'exact' | 'nearest'; // #15
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
  /** Who made the change: the API server's audit record joined to it (--audit-listen). */
  by?: ByInfo;
  changes?: Change[];
  offline?: true;
  finalStateUnknown?: true;
}

/** 'deployments.apps', 'configmaps': how kubectl names the event's resource type (labels, rules, logs). */
export function qualifiedResource(event: ChangeEvent): string {
  const { apiVersion, resource } = event.object;
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? resource : `${resource}.${apiVersion.slice(0, slash)}`;
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
  const { changes, offline, finalStateUnknown, by: known, ...head } = event;
  return {
    ...head,
    by: { ...known, ...by },
    ...(changes !== undefined ? { changes } : {}),
    ...(offline !== undefined ? { offline } : {}),
    ...(finalStateUnknown !== undefined ? { finalStateUnknown } : {}),
  };
}

/** The tool in a User-Agent: `kubectl` from `kubectl/v1.36.3 (linux/amd64) kubernetes/abc`. */
export function toolOf(userAgent: string | undefined): string | undefined {
  const tool = userAgent?.split(/[\s/]/, 1)[0];
  return tool ? tool : undefined;
}

/**
 * Who made a change, in words: `alice (kubectl)` when the user and the tool are known (the tool is the
 * first field manager, else the User-Agent's product), the user or the manager alone otherwise;
 * `bob via alice` when alice impersonated bob.
 */
export function describeBy(by: ByInfo | undefined): string | undefined {
  if (!by) return undefined;
  const user = by.user?.username;
  const tool = by.managers?.[0]?.manager ?? toolOf(by.userAgent);
  if (user) {
    const acting = by.impersonatedUser ? `${by.impersonatedUser.username} via ${user}` : user;
    return tool ? `${acting} (${tool})` : acting;
  }
  return tool;
}
