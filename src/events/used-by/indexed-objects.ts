// Which resource types the "used by" index reads, and what it keeps of one of their objects: pods, the
// pod templates of the workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
// ReplicationController) and ServiceAccounts (their image pull secrets). The type decides, as the
// informer's resource type, never the object's own `kind`.
//
// An object that runs nothing and will run nothing is no user: a pod that has ended (Succeeded, Failed),
// a ReplicaSet or ReplicationController scaled to zero (a Deployment's old revisions), a Job that has
// finished. Read from the object as served: its status too, which the store does not keep.

import { objectReferences, type PodReference, serviceAccountReferences } from '../../kube/pod-references.ts';
import {
  apiVersionOf,
  isJsonObject,
  type JsonObject,
  qualifiedName,
  type ResourceType,
} from '../../kube/types.ts';
import { controllerOf } from '../owners.ts';
import type { IndexedObject } from './usage-index.ts';

type Role = 'pod' | 'template' | 'serviceAccount';

/** Indexed resource types by qualified name. */
const ROLES: ReadonlyMap<string, Role> = new Map([
  ['pods', 'pod'],
  ['serviceaccounts', 'serviceAccount'],
  ['replicationcontrollers', 'template'],
  ['deployments.apps', 'template'],
  ['replicasets.apps', 'template'],
  ['statefulsets.apps', 'template'],
  ['daemonsets.apps', 'template'],
  ['jobs.batch', 'template'],
  ['cronjobs.batch', 'template'],
]);

/** The resource types whose objects the index reads (for `kubediff resources --used-by` too). */
export const INDEXED_RESOURCES: readonly string[] = [...ROLES.keys()];

export function isIndexedType(type: Pick<ResourceType, 'group' | 'resource'>): boolean {
  return ROLES.has(qualifiedName(type));
}

export function isPodType(type: Pick<ResourceType, 'group' | 'resource'>): boolean {
  return type.group === '' && type.resource === 'pods';
}

/** The referenced kinds the index keeps (PersistentVolumeClaims are for `kubediff why` alone). */
const KEPT_KINDS = new Set(['ConfigMap', 'Secret', 'ServiceAccount']);

const NO_STARTS: ReadonlyMap<string, number> = new Map();

/**
 * What the index keeps of `object` (of the indexed `type`); null when it is no user now (see above),
 * undefined when the type is not indexed or the object is malformed. `restored`: an object from the
 * state of a previous run (normalized: no status), whose pods are taken as started before any change.
 */
export function indexedObjectOf(
  type: ResourceType,
  object: JsonObject,
  restored: boolean,
): IndexedObject | null | undefined {
  const role = ROLES.get(qualifiedName(type));
  const metadata = object.metadata;
  if (!role || !isJsonObject(metadata)) return undefined;
  const { uid, name, namespace } = metadata;
  if (typeof uid !== 'string' || typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  if (!runsSomething(type, object)) return null;
  const all =
    role === 'serviceAccount'
      ? serviceAccountReferences(object)
      : objectReferences(type.group, type.kind, object);
  const references = all.filter((reference) => KEPT_KINDS.has(reference.kind));
  return {
    uid,
    group: type.group,
    kind: type.kind,
    apiVersion: apiVersionOf(type),
    resource: qualifiedName(type),
    namespace,
    name,
    controller: controllerOf(object),
    references,
    ...(role === 'pod' ? { started: restored ? null : containerStarts(object, references) } : {}),
  };
}

/** False for what has stopped running for good, or is scaled to nothing (see the header). */
function runsSomething(type: ResourceType, object: JsonObject): boolean {
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const status = isJsonObject(object.status) ? object.status : {};
  switch (type.kind) {
    case 'Pod':
      return status.phase !== 'Succeeded' && status.phase !== 'Failed';
    case 'ReplicaSet':
    case 'ReplicationController':
      // Absent means 1, as the API server defaults it.
      return spec.replicas !== 0;
    case 'Job': {
      if (typeof status.completionTime === 'string') return false;
      const conditions = Array.isArray(status.conditions) ? status.conditions : [];
      return !conditions.some(
        (condition) =>
          isJsonObject(condition) &&
          (condition.type === 'Complete' || condition.type === 'Failed') &&
          condition.status === 'True',
      );
    }
    default:
      return true;
  }
}

/**
 * When each container that references something started (status is read as served): running
 * containers by `state.running.startedAt`, init containers also by `state.terminated.startedAt` (what
 * they read at their start is what they produced). A container that waits has not started: it reads the
 * value when it does.
 */
function containerStarts(
  object: JsonObject,
  references: readonly PodReference[],
): ReadonlyMap<string, number> {
  const wanted = new Set<string>();
  for (const reference of references) {
    const where = containerSlot(reference);
    if (where) wanted.add(where);
  }
  if (wanted.size === 0 || !isJsonObject(object.status)) return NO_STARTS;
  const starts = new Map<string, number>();
  const status = object.status;
  for (const [list, field, ended] of [
    ['containerStatuses', 'container', false],
    ['initContainerStatuses', 'initContainer', true],
    ['ephemeralContainerStatuses', 'ephemeralContainer', false],
  ] as const) {
    const statuses = status[list];
    if (!Array.isArray(statuses)) continue;
    for (const entry of statuses) {
      if (!isJsonObject(entry) || typeof entry.name !== 'string') continue;
      const slot = `${field}:${entry.name}`;
      if (!wanted.has(slot) || !isJsonObject(entry.state)) continue;
      const state = entry.state;
      const at = startedAt(state.running) ?? (ended ? startedAt(state.terminated) : undefined);
      if (at !== undefined) starts.set(slot, at);
    }
  }
  return starts;
}

function startedAt(state: unknown): number | undefined {
  if (!isJsonObject(state) || typeof state.startedAt !== 'string') return undefined;
  const ms = Date.parse(state.startedAt);
  return Number.isNaN(ms) ? undefined : ms;
}

/** `container:<name>` (or init, ephemeral) for a reference made in a container; undefined for the pod's own. */
export function containerSlot(
  reference: PodReference | Omit<PodReference, 'kind' | 'name'>,
): string | undefined {
  if (reference.container !== undefined) return `container:${reference.container}`;
  if (reference.initContainer !== undefined) return `initContainer:${reference.initContainer}`;
  if (reference.ephemeralContainer !== undefined) return `ephemeralContainer:${reference.ephemeralContainer}`;
  return undefined;
}
