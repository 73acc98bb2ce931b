// Shapes kubediff relies on. Objects stay raw JSON end to end: only the few
// metadata fields every object carries are typed.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** An object (not an array, not null): what a JSON object parses to. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: JsonValue | undefined;
}

/** Any Kubernetes object as the API server serves it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: JsonValue | ObjectMeta | undefined;
}

/** One watchable resource type, as discovery describes it. */
export interface ResourceType {
  /** API group; '' for the core group. */
  group: string;
  version: string;
  /** Plural resource name, e.g. 'deployments'. */
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
  shortNames: string[];
  singularName: string;
  categories: string[];
}

/** 'deployments.apps', or 'pods' for the core group: the name kubectl and kubediff print. */
export function qualifiedName(type: Pick<ResourceType, 'group' | 'resource'>): string {
  return type.group === '' ? type.resource : `${type.resource}.${type.group}`;
}

export function apiVersionOf(type: Pick<ResourceType, 'group' | 'version'>): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

/** The API group of an apiVersion ('apps/v1' → 'apps'; 'v1' → '', the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The URL path of a resource's collection, across all namespaces or within one. */
export function collectionPath(type: ResourceType, namespace?: string): string {
  const base = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  return namespace && type.namespaced
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${type.resource}`
    : `${base}/${type.resource}`;
}

/** An object's path on the API server, what `kubectl get --raw` takes: `/apis/apps/v1/namespaces/shop/deployments/web`. */
export function objectApiPath(object: {
  apiVersion: string;
  resource: string;
  namespace?: string | undefined;
  name: string;
}): string {
  const base = groupOf(object.apiVersion) === '' ? `/api/${object.apiVersion}` : `/apis/${object.apiVersion}`;
  const namespace = object.namespace ? `/namespaces/${encodeURIComponent(object.namespace)}` : '';
  return `${base}${namespace}/${object.resource}/${encodeURIComponent(object.name)}`;
}

/** The store key of an object: 'namespace/name', or 'name' when cluster-scoped. */
export function objectKey(meta: Pick<ObjectMeta, 'name' | 'namespace'>): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

/**
 * A resourceVersion as a number, when it is one. The API calls them opaque; etcd's are its revisions,
 * in the order of the writes, and kubediff compares them only where they are numeric.
 */
export function numericResourceVersion(resourceVersion: string | undefined): bigint | undefined {
  return resourceVersion !== undefined && /^\d+$/.test(resourceVersion) ? BigInt(resourceVersion) : undefined;
}
