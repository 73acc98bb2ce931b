// `kubediff resources`: what `watch` would watch with the same flags, and
// why everything else is skipped, including types the identity may not
// list or watch (asked with SelfSubjectAccessReviews).
import type { Writable } from 'node:stream';
import type { WatchSettings } from '../config/watch-settings.ts';
import type { HttpSettings, KubeClient } from '../kube/client.ts';
import { KubeClient as Client } from '../kube/client.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { Discovery } from '../kube/discovery.ts';
import { type Selection, type SkipReason, selectResources } from '../kube/selection.ts';
import { qualifiedName } from '../kube/types.ts';
import { errorMessage, KubediffError } from '../util/errors.ts';
import { type Logger, stderrLogger } from '../util/log.ts';
import { textTable } from '../util/text-table.ts';
import { type ClusterPlan, clusterPlans } from './cluster-plans.ts';
import { checkResourceNames } from './resource-name-check.ts';

export interface ResourceRow {
  /** The context, when several clusters are listed. */
  cluster?: string;
  name: string;
  group: string;
  version: string;
  resource: string;
  kind: string;
  scope: 'Namespaced' | 'Cluster';
  watched: boolean;
  reason?: SkipReason;
}

/**
 * Lists every cluster `watch` would watch with the same flags and file (--context repeated, --all-contexts,
 * `clusters:` with each one's own selection). With
 * several, each row names its cluster, and a cluster that cannot be listed is said on stderr while the
 * others are listed; the command then fails (exit 1) after them.
 */
export async function runResources(
  settings: WatchSettings,
  options: { output: 'json' | 'table'; http?: Partial<HttpSettings> },
  out: Writable,
): Promise<void> {
  const plans = clusterPlans(settings);
  const several = plans.length > 1;
  const log = stderrLogger({ debug: false });
  const rows: ResourceRow[] = [];
  const failed: string[] = [];
  for (const plan of plans) {
    try {
      const listed = await clusterRows(plan, options.http, log);
      rows.push(...(several ? listed.map((entry) => ({ cluster: plan.name, ...entry })) : listed));
    } catch (error) {
      if (!several) throw error;
      failed.push(plan.name);
      log.error(`${plan.label}: ${errorMessage(error)}`);
    }
  }
  if (options.output === 'json') {
    for (const entry of rows) out.write(`${JSON.stringify(entry)}\n`);
  } else if (rows.length > 0) {
    out.write(resourcesTable(rows));
  }
  if (failed.length > 0) {
    throw new KubediffError(
      `${failed.length} of ${plans.length} clusters could not be listed (${failed.map((name) => `"${name}"`).join(', ')}; the reasons are above).`,
    );
  }
}

/** One cluster's rows: watched first, then skipped, each by name. */
async function clusterRows(
  { identity, selection: wanted }: ClusterPlan,
  http: Partial<HttpSettings> | undefined,
  log: Logger,
): Promise<ResourceRow[]> {
  const client = await Client.create(identity, { http });
  try {
    let selection: Selection;
    try {
      const discovered = await new Discovery(client).discover();
      selection = selectResources(discovered.resources, {
        include: wanted.resources,
        exclude: wanted.excludeResources,
        namespaceScoped: wanted.namespaces.length > 0,
      });
    } catch (error) {
      throw explainConnectionFailure(error, identity);
    }
    // The same -r check as `watch`: a typo is an error with a suggestion, not a list where nothing is watched.
    checkResourceNames(selection, log);
    const forbidden = await forbiddenTypes(client, selection.watched, wanted.namespaces);
    return [
      ...selection.watched.map((type) =>
        forbidden.has(type) ? row(type, false, 'forbidden') : row(type, true, undefined),
      ),
      ...selection.skipped.map((skipped) => row(skipped.type, false, skipped.reason)),
    ].sort((a, b) => Number(b.watched) - Number(a.watched) || a.name.localeCompare(b.name));
  } finally {
    await client.close();
  }
}

function row(type: DiscoveredResource, watched: boolean, reason: SkipReason | undefined): ResourceRow {
  return {
    name: qualifiedName(type),
    group: type.group,
    version: type.version,
    resource: type.resource,
    kind: type.kind,
    scope: type.namespaced ? 'Namespaced' : 'Cluster',
    watched,
    ...(reason ? { reason } : {}),
  };
}

export function resourcesTable(rows: readonly ResourceRow[]): string {
  const several = rows.some((entry) => entry.cluster !== undefined);
  const header = [...(several ? ['CLUSTER'] : []), 'NAME', 'APIVERSION', 'KIND', 'SCOPE', 'WATCHED'];
  // Discovery documents come from the API server and aggregated APIs: textTable makes them printable.
  const lines = rows.map((entry) => [
    ...(several ? [entry.cluster ?? ''] : []),
    entry.name,
    entry.group ? `${entry.group}/${entry.version}` : entry.version,
    entry.kind,
    entry.scope,
    entry.watched ? 'yes' : `no: ${entry.reason}`,
  ]);
  return textTable([header, ...lines]);
}

/** The watched types that this identity may not list or watch, asked of the server in one batch. */
async function forbiddenTypes(
  client: KubeClient,
  types: DiscoveredResource[],
  namespaces: readonly string[],
): Promise<Set<DiscoveredResource>> {
  const forbidden = new Set<DiscoveredResource>();
  await Promise.all(
    types.map(async (type) => {
      const scopes = type.namespaced && namespaces.length > 0 ? namespaces : [undefined];
      for (const namespace of scopes) {
        for (const verb of ['list', 'watch']) {
          const allowed = await client.canI({ verb, group: type.group, resource: type.resource, namespace });
          if (!allowed) forbidden.add(type);
        }
      }
    }),
  );
  return forbidden;
}
