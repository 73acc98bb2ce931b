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
  type JsonValue,
  qualifiedName,
  type ResourceType,
} from '../../kube/types.ts';
import { controllerOf } from '../owners.ts';
import type { IndexedObject, StartedAt } from './usage-index.ts';

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

const NO_STARTS: readonly StartedAt[] = [];

/**
 * What the index keeps of `object` (of the indexed `type`); null when it is no user now (see above),
 * undefined when the type is not indexed or the object is malformed. `restored`: an object from the
 * state of a previous run (normalized: no status), whose pods are taken as started before any change.
 * `known`: what the index holds of it already; its references are kept when the spec's generation is
 * the same (a status update: the most frequent by far), without reading the spec again.
 */
export function indexedObjectOf(
  type: ResourceType,
  object: JsonObject,
  restored: boolean,
  known?: IndexedObject,
): IndexedObject | null | undefined {
  const role = ROLES.get(qualifiedName(type));
  const metadata = object.metadata;
  if (!role || !isJsonObject(metadata)) return undefined;
  const { uid, name, namespace } = metadata;
  if (typeof uid !== 'string' || typeof name !== 'string' || typeof namespace !== 'string') return undefined;
  if (!runsSomething(type, object)) return null;
  const generation =
    typeof metadata.generation === 'number' && metadata.generation > 0 ? metadata.generation : undefined;
  const references =
    known !== undefined && generation !== undefined && known.generation === generation && known.uid === uid
      ? known.references
      : (role === 'serviceAccount'
          ? serviceAccountReferences(object)
          : objectReferences(type.group, type.kind, object)
        ).filter((reference) => KEPT_KINDS.has(reference.kind));
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
    ...(generation !== undefined ? { generation } : {}),
    ...(role === 'pod' ? { started: restored ? null : containerStarts(object, references) } : {}),
  };
}

/**
 * Whether `object` (served again) would be indexed exactly as `known` is: the same generation of its spec,
 * still running, the same controller, its containers started when they did. The usual update of a pod
 * (a status condition, a probe) then costs no new entry.
 */
export function indexedAsBefore(type: ResourceType, object: JsonObject, known: IndexedObject): boolean {
  const metadata = object.metadata;
  if (!isJsonObject(metadata) || known.generation === undefined || metadata.generation !== known.generation)
    return false;
  if (!runsSomething(type, object) || controllerOf(object)?.uid !== known.controller?.uid) return false;
  const before = known.started;
  if (before === undefined) return true;
  // Restored from the state: its start times are to be read now.
  if (before === null) return false;
  const started = containerStarts(object, known.references);
  return (
    started.length === before.length &&
    started.every(([slot, at], index) => before[index]?.[0] === slot && before[index]?.[1] === at)
  );
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

const STATUS_LISTS = [
  ['containerStatuses', 'container', false],
  ['initContainerStatuses', 'initContainer', true],
  ['ephemeralContainerStatuses', 'ephemeralContainer', false],
] as const;

/**
 * When each container that references something started (status is read as served), as served
 * (RFC 3339, parsed only when a change asks): running containers by `state.running.startedAt`, init
 * containers also by `state.terminated.startedAt` (what they read at their start is what they
 * produced). A container that waits has not started: it reads the value when it does.
 */
function containerStarts(object: JsonObject, references: readonly PodReference[]): readonly StartedAt[] {
  const status = object.status;
  if (!isJsonObject(status)) return NO_STARTS;
  let starts: StartedAt[] | undefined;
  for (const [list, field, ended] of STATUS_LISTS) {
    const statuses = status[list];
    if (!Array.isArray(statuses)) continue;
    for (const entry of statuses) {
      if (!isJsonObject(entry) || !isJsonObject(entry.state)) continue;
      const name = entry.name;
      if (typeof name !== 'string' || !references.some((reference) => reference[field] === name)) continue;
      const at = startedAt(entry.state.running) ?? (ended ? startedAt(entry.state.terminated) : undefined);
      if (at === undefined) continue;
      starts ??= [];
      starts.push([`${field}:${name}`, at]);
    }
  }
  return starts ?? NO_STARTS;
}

function startedAt(state: JsonValue | undefined): string | undefined {
  return isJsonObject(state) && typeof state.startedAt === 'string' ? state.startedAt : undefined;
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
