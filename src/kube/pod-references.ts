// What a pod uses by name, read from its spec: the ConfigMaps and Secrets its containers read (env
// `valueFrom`, `envFrom`, `configMap`/`secret` volumes and projected volume sources), its image pull
// secrets, its ServiceAccount (whose own image pull secrets it then uses) and its PersistentVolumeClaims;
// each reference says how (with the key, the prefix, the volume and its items), in which container,
// init container or ephemeral container, and whether it is optional. The same for the pod template of a
// workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController) and for
// a ServiceAccount's image pull secrets.
//
// Pure functions of an object's JSON, as served or as stored (normalized objects keep `spec`): the
// "used by" index (src/events/used-by/) and `kubediff why` read references through this module alone.
// Not covered: Secrets named by in-tree and CSI volume drivers (`csi.nodePublishSecretRef`,
// `cephfs.secretRef`, …) and the PVCs of generic ephemeral volumes (named after the pod).

import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

/** The kinds of object a pod references by name (all in the pod's namespace). */
export type ReferencedKind = 'ConfigMap' | 'Secret' | 'ServiceAccount' | 'PersistentVolumeClaim';

/** How it is referenced. */
export type ReferenceType =
  | 'env'
  | 'envFrom'
  | 'volume'
  | 'projected'
  | 'imagePullSecrets'
  | 'serviceAccount';

/** One use of one object by a pod (or pod template). Optional fields are absent, never undefined. */
export interface PodReference {
  kind: ReferencedKind;
  name: string;
  type: ReferenceType;
  /** `env`: the key it reads, and the environment variable it sets. */
  key?: string;
  env?: string;
  /** `envFrom`: the prefix of the variables (every key becomes one). */
  prefix?: string;
  /** `volume`, `projected`: the volume's name in the pod. */
  volume?: string;
  /** `volume`, `projected`: the keys it projects (`items`); absent when it projects every key. */
  items?: string[];
  /** Where it is used: one of the three, or none for the pod itself (image pull secrets, a volume no container mounts). */
  container?: string;
  initContainer?: string;
  ephemeralContainer?: string;
  /** `volume`, `projected`: mounted with `subPath`/`subPathExpr` in that container (its file never updates). */
  subPath?: true;
  optional?: true;
}

/** The three lists of containers of a pod spec, and the field naming each in a reference. */
const CONTAINER_LISTS = [
  ['containers', 'container'],
  ['initContainers', 'initContainer'],
  ['ephemeralContainers', 'ephemeralContainer'],
] as const;

type ContainerField = (typeof CONTAINER_LISTS)[number][1];

/** The workloads whose pod template is at spec.template, by API group. */
const TEMPLATE_KINDS: Readonly<Record<string, readonly string[]>> = {
  '': ['ReplicationController'],
  apps: ['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet'],
  batch: ['Job'],
};

/** Whether objects of this group and kind have a pod spec podSpecOf() finds. */
export function hasPodSpec(group: string, kind: string): boolean {
  return (
    (group === '' && kind === 'Pod') ||
    (group === 'batch' && kind === 'CronJob') ||
    (TEMPLATE_KINDS[group]?.includes(kind) ?? false)
  );
}

/** The pod spec of a Pod, or of a workload's pod template; undefined for other kinds or a malformed object. */
export function podSpecOf(group: string, kind: string, object: JsonObject): JsonObject | undefined {
  if (!hasPodSpec(group, kind)) return undefined;
  const spec = object.spec;
  if (kind === 'Pod') return isJsonObject(spec) ? spec : undefined;
  const template =
    kind === 'CronJob'
      ? child(child(child(spec, 'jobTemplate'), 'spec'), 'template')
      : child(spec, 'template');
  const podSpec = child(template, 'spec');
  return isJsonObject(podSpec) ? podSpec : undefined;
}

/**
 * Everything an object references by name: a Pod's or a workload's pod spec (podSpecReferences), a
 * ServiceAccount's image pull secrets; nothing for other kinds. What `kubediff why` follows from a pod.
 */
export function objectReferences(group: string, kind: string, object: JsonObject): PodReference[] {
  if (group === '' && kind === 'ServiceAccount') return serviceAccountReferences(object);
  const spec = podSpecOf(group, kind, object);
  return spec ? podSpecReferences(spec) : [];
}

/** The objects behind `references`, each once: `{kind, name}` in the order first referenced. */
export function referencedObjects(
  references: readonly PodReference[],
): { kind: ReferencedKind; name: string }[] {
  const seen = new Map<string, { kind: ReferencedKind; name: string }>();
  for (const { kind, name } of references) {
    const key = `${kind}/${name}`;
    if (!seen.has(key)) seen.set(key, { kind, name });
  }
  return [...seen.values()];
}

/** A ServiceAccount's `imagePullSecrets`: the Secrets the pods running as it pull their images with. */
export function serviceAccountReferences(serviceAccount: JsonObject): PodReference[] {
  return pullSecrets(serviceAccount.imagePullSecrets);
}

/**
 * Every reference of a pod spec, in spec order: containers, init containers, ephemeral containers
 * (env, then envFrom, then volume mounts, each), volumes no container mounts, image pull secrets, the
 * ServiceAccount (`default` when the spec names none, as the API server fills it in).
 */
export function podSpecReferences(spec: JsonObject): PodReference[] {
  const references: PodReference[] = [];
  const volumes = volumeSources(spec.volumes);
  const mounted = new Set<string>();
  for (const [list, field] of CONTAINER_LISTS) {
    for (const container of items(spec[list])) {
      const containerName = text(container.name);
      if (containerName === undefined) continue;
      const where = { [field]: containerName } as Pick<PodReference, ContainerField>;
      references.push(...envReferences(container, where), ...envFromReferences(container, where));
      for (const [volume, subPath] of mountsOf(container)) {
        const sources = volumes.get(volume);
        if (!sources) continue;
        mounted.add(volume);
        for (const source of sources)
          references.push({ ...source, ...where, ...(subPath ? { subPath: true as const } : {}) });
      }
    }
  }
  // A volume no container mounts is still set up for the pod (a missing ConfigMap keeps it Pending).
  for (const [volume, sources] of volumes) if (!mounted.has(volume)) references.push(...sources);
  references.push(...pullSecrets(spec.imagePullSecrets));
  const serviceAccount = text(spec.serviceAccountName) ?? text(spec.serviceAccount) ?? 'default';
  references.push({ kind: 'ServiceAccount', name: serviceAccount, type: 'serviceAccount' });
  return references;
}

function envReferences(container: JsonObject, where: Pick<PodReference, ContainerField>): PodReference[] {
  const references: PodReference[] = [];
  for (const variable of items(container.env)) {
    const from = child(variable, 'valueFrom');
    for (const [field, kind] of [
      ['configMapKeyRef', 'ConfigMap'],
      ['secretKeyRef', 'Secret'],
    ] as const) {
      const selector = child(from, field);
      const name = text(selector?.name);
      const key = text(selector?.key);
      if (!selector || name === undefined || key === undefined) continue;
      const env = text(variable.name);
      references.push({
        kind,
        name,
        type: 'env',
        key,
        ...(env !== undefined ? { env } : {}),
        ...where,
        ...optional(selector),
      });
    }
  }
  return references;
}

function envFromReferences(container: JsonObject, where: Pick<PodReference, ContainerField>): PodReference[] {
  const references: PodReference[] = [];
  for (const source of items(container.envFrom)) {
    const prefix = text(source.prefix);
    for (const [field, kind] of [
      ['configMapRef', 'ConfigMap'],
      ['secretRef', 'Secret'],
    ] as const) {
      const selector = child(source, field);
      const name = text(selector?.name);
      if (!selector || name === undefined) continue;
      references.push({
        kind,
        name,
        type: 'envFrom',
        ...(prefix ? { prefix } : {}),
        ...where,
        ...optional(selector),
      });
    }
  }
  return references;
}

/** A container's volume mounts: volume name → whether any mount of it uses subPath or subPathExpr. */
function mountsOf(container: JsonObject): Map<string, boolean> {
  const mounts = new Map<string, boolean>();
  for (const mount of items(container.volumeMounts)) {
    const name = text(mount.name);
    if (name === undefined) continue;
    const subPath = Boolean(text(mount.subPath) || text(mount.subPathExpr));
    mounts.set(name, (mounts.get(name) ?? false) || subPath);
  }
  return mounts;
}

/** Per volume name, what it references: without the container fields (added per mount). */
function volumeSources(volumes: JsonValue | undefined): Map<string, PodReference[]> {
  const sources = new Map<string, PodReference[]>();
  for (const volume of items(volumes)) {
    const name = text(volume.name);
    if (name === undefined) continue;
    const found: PodReference[] = [];
    const configMap = child(volume, 'configMap');
    if (configMap) found.push(...projection('ConfigMap', text(configMap.name), 'volume', name, configMap));
    const secret = child(volume, 'secret');
    if (secret) found.push(...projection('Secret', text(secret.secretName), 'volume', name, secret));
    for (const source of items(child(volume, 'projected')?.sources)) {
      const projectedMap = child(source, 'configMap');
      if (projectedMap)
        found.push(...projection('ConfigMap', text(projectedMap.name), 'projected', name, projectedMap));
      const projectedSecret = child(source, 'secret');
      if (projectedSecret)
        found.push(...projection('Secret', text(projectedSecret.name), 'projected', name, projectedSecret));
    }
    const claim = text(child(volume, 'persistentVolumeClaim')?.claimName);
    if (claim !== undefined)
      found.push({ kind: 'PersistentVolumeClaim', name: claim, type: 'volume', volume: name });
    if (found.length > 0) sources.set(name, found);
  }
  return sources;
}

function projection(
  kind: 'ConfigMap' | 'Secret',
  name: string | undefined,
  type: 'volume' | 'projected',
  volume: string,
  source: JsonObject,
): PodReference[] {
  if (name === undefined) return [];
  const keys = items(source.items)
    .map((item) => text(item.key))
    .filter((key): key is string => key !== undefined);
  return [
    {
      kind,
      name,
      type,
      volume,
      // An empty `items` projects every key, as an absent one does.
      ...(keys.length > 0 ? { items: keys } : {}),
      ...optional(source),
    },
  ];
}

function pullSecrets(list: JsonValue | undefined): PodReference[] {
  const references: PodReference[] = [];
  for (const entry of items(list)) {
    const name = text(entry.name);
    if (name !== undefined) references.push({ kind: 'Secret', name, type: 'imagePullSecrets' });
  }
  return references;
}

function optional(selector: JsonObject): { optional?: true } {
  return selector.optional === true ? { optional: true } : {};
}

function child(value: JsonValue | undefined, key: string): JsonObject | undefined {
  if (!isJsonObject(value)) return undefined;
  const found = value[key];
  return isJsonObject(found) ? found : undefined;
}

function items(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

/** A non-empty string, else undefined (an empty name references nothing). */
function text(value: JsonValue | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
