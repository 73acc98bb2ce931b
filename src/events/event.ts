// The events of the contract (docs/event.md): one JSON line on stdout, the body of a webhook, a
// row of the state file's history. A change of an object (ADDED, UPDATED, DELETED) is what every stage
// after the event builder passes along; an OUTCOME (docs/outcomes.md) says what a rollout's change did,
// and joins the path after the watch's rules.
import type { Change } from '../diff/types.ts';
import type { WithoutWriteCause } from '../informer/informer.ts';
import type { PodReference } from '../kube/pod-references.ts';
import { groupOf, qualifiedName } from '../kube/types.ts';
import { identityOf, type ObjectIdentity } from '../util/event-failures.ts';

export type EventType = 'ADDED' | 'UPDATED' | 'DELETED';

export const EVENT_TYPES: readonly EventType[] = ['ADDED', 'UPDATED', 'DELETED'];

/** What a sink's filter can ask for by type: a change's type, or OUTCOME. */
export type FilterEventType = EventType | 'OUTCOME';

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

/**
 * One way a workload uses a ConfigMap or Secret (docs/used-by.md): a reference of its pod spec
 * (`env`, `envFrom`, `volume`, `projected`, `imagePullSecrets`), or `serviceAccount`: the image pull
 * secrets of the ServiceAccount its pods run as (named in `serviceAccount`).
 */
export type UseVia = Omit<PodReference, 'kind' | 'name' | 'type'> & {
  type: Exclude<PodReference['type'], 'serviceAccount'> | 'serviceAccount';
  serviceAccount?: string;
};

/** A workload (its root owner) whose template or pods use the event's ConfigMap or Secret. */
export interface UsingWorkload {
  /** The root owner, as an event's `owner` names it, with its namespace. */
  object: OwnerRef & { namespace?: string };
  via: UseVia[];
  /** The changed keys it reads (every key of the object for an ADDED or a DELETED). */
  keys: string[];
  /**
   * Whether its running pods see the change: `true`, `false` (some read it at their start, through
   * env, envFrom, a subPath mount or an init container, and started before the change), `eventually`
   * (mounted as a volume: the kubelet updates the files within its sync period). Absent when pods are
   * not watched or when none of the keys it reads changed.
   */
  live?: boolean | 'eventually';
  /** When pods are watched: its pods that use it, and of them those started before the change. */
  pods?: { total: number; old?: number };
}

/** What a ConfigMap or Secret change reaches (docs/used-by.md). */
export interface UsedBy {
  workloads: UsingWorkload[];
  /** The changed keys none of the workloads reads. */
  unreadKeys?: string[];
  /**
   * The index may miss users: `syncing` (a type it indexes has not been listed yet, or cannot be),
   * `limit` (it reached its bound and left objects out).
   */
  incomplete?: 'syncing' | 'limit';
}

/** A change to a ConfigMap or Secret that a rollout brings to pods that ran the old value. */
export interface RolloutLink {
  /** The ConfigMap or Secret. */
  object: { kind: string; namespace?: string; name: string };
  /** The id of its change's event, and that event's time. */
  id: string;
  time: string;
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
  /** ConfigMaps and Secrets: the workloads that use it, and whether the change is live (docs/used-by.md). */
  usedBy?: UsedBy;
  /** A workload's rollout: the earlier ConfigMap and Secret changes its new pods bring (docs/used-by.md). */
  rollsOut?: RolloutLink[];
}

/** How a followed rollout ended (docs/outcomes.md). */
export type Verdict = 'healthy' | 'degraded' | 'failed' | 'superseded' | 'unknown';

export const VERDICTS: readonly Verdict[] = ['healthy', 'degraded', 'failed', 'superseded', 'unknown'];

/** A pod of the rollout's revision, as the verdict saw it. */
export interface PodEvidence {
  name: string;
  /** The pod's phase: Pending, Running, Succeeded, Failed, Unknown. */
  phase: string;
  ready: boolean;
  /** When it became Ready (its Ready condition's lastTransitionTime, as the API server has it). */
  readySince?: string;
  /** What tells most about it: CrashLoopBackOff, ImagePullBackOff, Unschedulable, ContainerCreating… */
  reason?: string;
  /** The container `reason` is about. */
  container?: string;
  /** The reason's message, shortened: `Back-off pulling image "shop:1.6"`, the scheduler's. */
  message?: string;
  /** Container restarts since the change. */
  restarts: number;
  /** The last termination of a container that restarted (`OOMKilled`, exit 137). */
  lastTermination?: { container: string; reason?: string; exitCode?: number };
}

/** A Warning Event of the rollout's pods or of the workload, counted since the change. */
export interface WarningEvidence {
  /** `Pod/web-5fc8c76ccf-x2v9k`, `ReplicaSet/web-5fc8c76ccf`, `Deployment/web`. */
  object: string;
  reason: string;
  message: string;
  count: number;
}

/** A condition of the workload (or of its new ReplicaSet) as its controller set it. */
export interface ConditionEvidence {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** What shows an OUTCOME's verdict. */
export interface OutcomeEvidence {
  /** One line: `1/1 pods CrashLoopBackOff, last OOMKilled (exit 137), 3 restarts`. */
  summary: string;
  /** The revision followed: the new ReplicaSet, the StatefulSet's updateRevision, the pods' hash. */
  revision?: string;
  /** The workload's replica counts as its controller reports them. */
  replicas?: { desired: number; updated: number; ready: number; available: number };
  /** The pods of the revision (the worst first, at most OUTCOME_PODS_LISTED). */
  pods: PodEvidence[];
  /** How many pods the revision has (`pods` lists at most OUTCOME_PODS_LISTED). */
  podCount: number;
  warnings: WarningEvidence[];
  conditions: ConditionEvidence[];
  /** `superseded`: the id of the change that came first. */
  supersededBy?: string;
  /** What the verdict could not see, or how it was reached (after a restart, a bound reached). */
  note?: string;
}

/** What a followed change did (docs/outcomes.md); field order is the order printed. */
export interface OutcomeEvent {
  /** `outcome:` and the id of the first event it follows: the same outcome has the same id on a restart. */
  id: string;
  type: 'OUTCOME';
  /** When the verdict was reached. */
  time: string;
  cluster?: string;
  /** The workload, as in the change it follows. */
  object: ChangeEvent['object'];
  owner?: OwnerRef;
  /** The ids of the events it is the outcome of: the change, and the scales that joined it. */
  follows: string[];
  verdict: Verdict;
  /** Seconds from the change to the verdict. */
  after: number;
  evidence: OutcomeEvidence;
  /** Who made the change, as on the change. */
  by?: ByInfo;
  /** The change was found offline (a relist, a catch-up): `after` counts from when it was found. */
  offline?: true;
}

/** Every event of the contract: a change of an object, or the outcome of one. */
export type KubediffEvent = ChangeEvent | OutcomeEvent;

/** Narrows an event of the contract to a change of an object. */
export function isChange(event: KubediffEvent): event is ChangeEvent {
  return event.type !== 'OUTCOME';
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
export function qualifiedResource(event: KubediffEvent): string {
  const { apiVersion, resource } = event.object;
  return qualifiedName({ group: groupOf(apiVersion), resource });
}

/** `event` with `owner` in its place in the field order (after `object`). */
export function withOwner(event: ChangeEvent, owner: OwnerRef): ChangeEvent {
  const { id, type, time, cluster, object, owner: _previous, ...rest } = event;
  return { id, type, time, ...(cluster !== undefined ? { cluster } : {}), object, owner, ...rest };
}

/** Which object an event is about, for failure reports: never its contents. */
export function identityOfEvent(event: KubediffEvent): ObjectIdentity {
  return identityOf(qualifiedResource(event), event.object);
}

/**
 * `event` with `by` merged in, its fields kept in the printed order (`by` before `changes`): a stage that
 * learns who made a change adds to what an earlier one found.
 */
export function withBy(event: ChangeEvent, by: ByInfo): ChangeEvent {
  const { changes, offline, cause, finalStateUnknown, usedBy, rollsOut, by: known, ...head } = event;
  return {
    ...head,
    by: { ...known, ...by },
    ...(changes !== undefined ? { changes } : {}),
    ...(offline !== undefined ? { offline } : {}),
    ...(cause !== undefined ? { cause } : {}),
    ...(finalStateUnknown !== undefined ? { finalStateUnknown } : {}),
    ...(usedBy !== undefined ? { usedBy } : {}),
    ...(rollsOut !== undefined ? { rollsOut } : {}),
  };
}
