// Asks the API server which resource types it serves. Aggregated discovery
// (apidiscovery.k8s.io/v2, Kubernetes 1.30+) answers in two requests and
// supports ETags, so the periodic re-discovery that catches new CRDs and
// aggregated APIs costs a 304 when nothing changed. Older servers get the
// legacy walk: /api, /apis, then one document per group version.
import type { KubeClient } from './client.ts';
import type { ResourceType } from './types.ts';

/** A resource type as discovered, with what discovery said about its health. */
export interface DiscoveredResource extends ResourceType {
  /** Aggregated discovery marks versions of unavailable aggregated APIs as stale. */
  stale: boolean;
}

export interface DiscoveryResult {
  /** One entry per group/resource: its preferred version. Subresources are never included. */
  resources: DiscoveredResource[];
  /** Groups whose discovery failed (an aggregated API that is down); their resources are unknown. */
  failedGroups: { group: string; version: string; reason: string }[];
}

const AGGREGATED_ACCEPT = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  'application/json',
].join(',');

interface AggregatedResource {
  resource: string;
  responseKind?: { group?: string; version?: string; kind?: string };
  scope?: 'Namespaced' | 'Cluster';
  singularResource?: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
}
interface AggregatedVersion {
  version: string;
  resources?: AggregatedResource[];
  freshness?: 'Current' | 'Stale';
}
interface AggregatedGroup {
  metadata?: { name?: string };
  versions?: AggregatedVersion[];
}
interface AggregatedList {
  kind?: string;
  items?: AggregatedGroup[];
}

interface LegacyResource {
  name: string;
  namespaced: boolean;
  kind: string;
  verbs?: string[];
  shortNames?: string[];
  singularName?: string;
  categories?: string[];
}
interface LegacyGroupList {
  groups?: { name: string; versions: { version: string }[]; preferredVersion?: { version: string } }[];
}
interface LegacyVersions {
  versions?: string[];
}

export class Discovery {
  private readonly client: KubeClient;
  private readonly cache = new Map<string, { etag: string; list: AggregatedList }>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  async discover(signal?: AbortSignal): Promise<DiscoveryResult> {
    const [core, groups] = await Promise.all([
      this.aggregated('/api', signal),
      this.aggregated('/apis', signal),
    ]);
    if (core && groups) {
      return {
        resources: fromAggregated([...(core.items ?? []), ...(groups.items ?? [])]),
        failedGroups: [],
      };
    }
    return this.legacy(signal);
  }

  /** The aggregated document at `path`, or undefined when the server does not offer one. */
  private async aggregated(path: string, signal?: AbortSignal): Promise<AggregatedList | undefined> {
    const cached = this.cache.get(path);
    const response = await this.client.getJSON<AggregatedList>(path, {
      headers: { accept: AGGREGATED_ACCEPT },
      etag: cached?.etag,
      signal,
    });
    if (response.notModified) return cached?.list;
    if (response.body.kind !== 'APIGroupDiscoveryList') return undefined;
    if (response.etag) this.cache.set(path, { etag: response.etag, list: response.body });
    return response.body;
  }

  private async legacy(signal?: AbortSignal): Promise<DiscoveryResult> {
    const versions: { group: string; version: string; path: string }[] = [];
    const core = await this.client.getJSON<LegacyVersions>('/api', { signal });
    if (!core.notModified) {
      for (const version of core.body.versions ?? []) {
        versions.push({ group: '', version, path: `/api/${version}` });
      }
    }
    const groups = await this.client.getJSON<LegacyGroupList>('/apis', { signal });
    if (!groups.notModified) {
      for (const group of groups.body.groups ?? []) {
        // Preferred version first, so that the first version offering a resource wins.
        const ordered = [...group.versions].sort(
          (a, b) =>
            Number(b.version === group.preferredVersion?.version) -
            Number(a.version === group.preferredVersion?.version),
        );
        for (const { version } of ordered) {
          versions.push({ group: group.name, version, path: `/apis/${group.name}/${version}` });
        }
      }
    }
    const failedGroups: DiscoveryResult['failedGroups'] = [];
    const documents = await Promise.all(
      versions.map(async (entry) => {
        try {
          const response = await this.client.getJSON<{ resources?: LegacyResource[] }>(entry.path, {
            signal,
          });
          return { ...entry, resources: response.notModified ? [] : (response.body.resources ?? []) };
        } catch (error) {
          failedGroups.push({
            group: entry.group,
            version: entry.version,
            reason: String((error as Error).message),
          });
          return { ...entry, resources: [] };
        }
      }),
    );
    const resources: DiscoveredResource[] = [];
    const seen = new Set<string>();
    for (const document of documents) {
      for (const resource of document.resources) {
        if (resource.name.includes('/')) continue; // a subresource such as pods/log
        const key = `${document.group}/${resource.name}`;
        if (seen.has(key)) continue;
        seen.add(key);
        resources.push({
          group: document.group,
          version: document.version,
          resource: resource.name,
          kind: resource.kind,
          namespaced: resource.namespaced,
          verbs: resource.verbs ?? [],
          shortNames: resource.shortNames ?? [],
          singularName: resource.singularName || resource.kind.toLowerCase(),
          categories: resource.categories ?? [],
          stale: false,
        });
      }
    }
    return { resources, failedGroups };
  }
}

/** Flattens aggregated discovery: versions come in preference order, the first offering a resource wins. */
function fromAggregated(groups: AggregatedGroup[]): DiscoveredResource[] {
  const resources: DiscoveredResource[] = [];
  for (const group of groups) {
    const groupName = group.metadata?.name ?? '';
    const seen = new Set<string>();
    for (const version of group.versions ?? []) {
      for (const resource of version.resources ?? []) {
        if (seen.has(resource.resource)) continue;
        seen.add(resource.resource);
        const kind = resource.responseKind?.kind ?? '';
        resources.push({
          group: groupName,
          version: version.version,
          resource: resource.resource,
          kind,
          namespaced: resource.scope === 'Namespaced',
          verbs: resource.verbs ?? [],
          shortNames: resource.shortNames ?? [],
          singularName: resource.singularResource || kind.toLowerCase(),
          categories: resource.categories ?? [],
          stale: version.freshness === 'Stale',
        });
      }
    }
  }
  return resources;
}
