// What a pod uses, named from its spec: the seam where `kubediff why` (src/cli/object-history/why.ts)
// and the "used by" index read the same answer. Today it names the pod's ServiceAccount and its
// PersistentVolumeClaims; the ConfigMaps and Secrets a pod uses (volumes, projected sources, env,
// envFrom, imagePullSecrets) are added here by the "used by" work, and every reader gets them.
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

/** An object a pod uses, in the pod's namespace. */
export interface PodReference {
  /** The kind of the object used (its core-group type). */
  kind: 'ServiceAccount' | 'PersistentVolumeClaim';
  name: string;
  /** Where the pod spec names it: `serviceAccountName`, `volumes[data]`. */
  via: string;
}

/**
 * The pod spec of an object that has one, by its kind: a Pod's own; a workload's template (Deployment,
 * ReplicaSet, StatefulSet, DaemonSet, Job, ReplicationController); a CronJob's job template's.
 */
export function podSpecOf(kind: string, object: JsonObject): JsonObject | undefined {
  const spec = field(object, 'spec');
  if (kind === 'Pod') return spec;
  if (kind === 'CronJob') return field(field(field(field(spec, 'jobTemplate'), 'spec'), 'template'), 'spec');
  return field(field(spec, 'template'), 'spec');
}

/** The objects `podSpec` references (see the top), each once, in the order the spec names them. */
export function podReferences(podSpec: JsonObject): PodReference[] {
  const found: PodReference[] = [];
  const serviceAccount = podSpec.serviceAccountName ?? podSpec.serviceAccount;
  if (typeof serviceAccount === 'string' && serviceAccount !== '') {
    found.push({ kind: 'ServiceAccount', name: serviceAccount, via: 'serviceAccountName' });
  }
  const volumes = podSpec.volumes;
  for (const volume of Array.isArray(volumes) ? volumes : []) {
    const claim = field(volume, 'persistentVolumeClaim')?.claimName;
    if (typeof claim !== 'string' || claim === '') continue;
    const name = isJsonObject(volume) && typeof volume.name === 'string' ? volume.name : '?';
    if (!found.some((reference) => reference.kind === 'PersistentVolumeClaim' && reference.name === claim))
      found.push({ kind: 'PersistentVolumeClaim', name: claim, via: `volumes[${name}]` });
  }
  return found;
}

function field(value: JsonValue | undefined, key: string): JsonObject | undefined {
  if (!isJsonObject(value)) return undefined;
  const found = value[key];
  return isJsonObject(found) ? found : undefined;
}
