// `kubediff resources --used-by configmap/app-config -n shop`: the workloads that use one ConfigMap or
// Secret now (docs/used-by.md), read from the cluster in one pass: the object itself (its keys, and its
// last write, from its managedFields), then the pods, workload templates and ServiceAccounts of its
// namespace, indexed and grouped exactly as `watch` does for a change (src/events/used-by/). Whether it
// is live is judged against the object's last write: pods started before it run an older value.
//
// A Secret's values are redacted as soon as it is read, before anything looks at it: only its keys and
// names are used.

import type { Writable } from 'node:stream';
import type { WatchSettings } from '../config/watch-settings.ts';
import { Redactor, redactSecret } from '../diff/redact.ts';
import type { UsedBy } from '../events/event.ts';
import { OwnerResolver } from '../events/owners.ts';
import { keysOf } from '../events/used-by/changed-keys.ts';
import { INDEXED_RESOURCES, indexedObjectOf, isPodType } from '../events/used-by/indexed-objects.ts';
import { type IndexedObject, UsageIndex } from '../events/used-by/usage-index.ts';
import { type UseTarget, usedByOf } from '../events/used-by/used-by.ts';
import type { StoredObject } from '../informer/store.ts';
import { type HttpSettings, KubeClient } from '../kube/client.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import { Discovery } from '../kube/discovery.ts';
import { KubeError } from '../kube/errors.ts';
import type { ClusterIdentity } from '../kube/kubeconfig.ts';
import { ListPager } from '../kube/list-pager.ts';
import { listerWatcherFor } from '../kube/lister-watcher.ts';
import { managedFieldsOf } from '../kube/managed-fields.ts';
import {
  isJsonObject,
  type JsonObject,
  type KubeObject,
  objectKey,
  qualifiedName,
  type ResourceType,
} from '../kube/types.ts';
import { wayText } from '../sinks/core/used-by-text.ts';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import type { Logger, StderrLogger } from '../util/log.ts';
import { printable } from '../util/terminal-text.ts';
import { type ClusterPlan, clusterPlans } from './cluster-plans.ts';

/** What one cluster answers: the object asked about, when it was last written, and its usedBy. */
export interface UsedByAnswer {
  /** The context, when several clusters are listed. */
  cluster?: string;
  object: UseTarget & { found: boolean };
  /** The object's last write (its managedFields' newest time), against which `live` is judged. */
  lastChange?: string;
  usedBy: UsedBy;
}

const KINDS: Readonly<Record<string, UseTarget['kind']>> = {
  configmap: 'ConfigMap',
  configmaps: 'ConfigMap',
  cm: 'ConfigMap',
  secret: 'Secret',
  secrets: 'Secret',
};

/** `configmap/app-config`, `cm/app-config`, `secret/db`: the object --used-by names, without its namespace. */
export function parseUsedByTarget(text: string): Pick<UseTarget, 'kind' | 'name'> {
  const slash = text.indexOf('/');
  const kind = KINDS[text.slice(0, slash).toLowerCase()];
  const name = text.slice(slash + 1);
  if (slash < 0 || !kind || name === '' || name.includes('/')) {
    throw new UsageError(
      `--used-by "${text}" names no ConfigMap or Secret: give configmap/<name> or secret/<name> (the namespace with -n).`,
    );
  }
  return { kind, name };
}

export async function runUsedBy(
  settings: WatchSettings,
  options: { target: string; output: 'json' | 'table'; http?: Partial<HttpSettings>; log: StderrLogger },
  out: Writable,
): Promise<void> {
  const target = parseUsedByTarget(options.target);
  if (settings.namespaces.length > 1) {
    throw new UsageError(
      "--used-by looks in one namespace: give -n once (or none: the context's namespace).",
    );
  }
  const plans = clusterPlans(settings);
  const several = plans.length > 1;
  const answers: UsedByAnswer[] = [];
  const failed: string[] = [];
  for (const plan of plans) {
    try {
      const answer = await clusterAnswer(plan, target, settings.namespaces[0], options);
      answers.push(several ? { cluster: plan.name, ...answer } : answer);
    } catch (error) {
      if (!several) throw error;
      failed.push(plan.name);
      options.log.error(`${plan.label}: ${errorMessage(error)}`);
    }
  }
  if (options.output === 'json') for (const answer of answers) out.write(`${JSON.stringify(answer)}\n`);
  else out.write(usedByTable(answers));
  if (failed.length > 0) {
    throw new KubediffError(
      `${failed.length} of ${plans.length} clusters could not be read (${failed.map((name) => `"${name}"`).join(', ')}; the reasons are above).`,
    );
  }
}

async function clusterAnswer(
  plan: ClusterPlan,
  wanted: Pick<UseTarget, 'kind' | 'name'>,
  namespaceFlag: string | undefined,
  options: { http?: Partial<HttpSettings>; log: Logger },
): Promise<UsedByAnswer> {
  const { identity } = plan;
  const namespace = namespaceFlag ?? contextNamespace(identity);
  const target: UseTarget = { ...wanted, namespace };
  const client = await KubeClient.create(identity, { http: options.http });
  try {
    let types: ResourceType[];
    try {
      const discovered = await new Discovery(client).discover();
      types = discovered.resources.filter((type) => INDEXED_RESOURCES.includes(qualifiedName(type)));
    } catch (error) {
      throw explainConnectionFailure(error, identity);
    }
    const object = await readTarget(client, target);
    const index = new UsageIndex(Number.MAX_SAFE_INTEGER);
    const stored = new Map<string, StoredObject>();
    let podsListed = false;
    for (const type of types) {
      try {
        await listInto(client, type, namespace, (item) => {
          const indexed = indexedObjectOf(type, item as JsonObject, false);
          if (indexed) index.upsert(indexed, 0);
          stored.set(lookupKey(type.group, type.kind, objectKey(item.metadata)), storedOf(item));
        });
        if (isPodType(type)) podsListed = true;
      } catch (error) {
        if (!(error instanceof KubeError) || error.kind !== 'forbidden') throw error;
        options.log.warn(
          `cannot list ${qualifiedName(type)} in namespace "${namespace}" (forbidden): what uses ${wanted.kind.toLowerCase()}/${wanted.name} through them is not shown${isPodType(type) ? ', nor whether it is live' : ''}.`,
        );
      }
    }
    const owners = new OwnerResolver();
    owners.attach(undefined, (group, kind, ns, name) =>
      stored.get(lookupKey(group, kind, objectKey({ name, ...(ns !== undefined ? { namespace: ns } : {}) }))),
    );
    const rootOf = (indexed: IndexedObject) =>
      owners.rootAbove(
        undefined,
        { apiVersion: indexed.apiVersion, kind: indexed.kind, name: indexed.name, uid: indexed.uid },
        indexed.controller,
        indexed.namespace,
      );
    const lastChange = object ? lastWrite(object) : undefined;
    const usedBy = usedByOf(
      { index, rootOf, podsWatched: podsListed },
      target,
      object ? keysOf(object) : [],
      lastChange !== undefined ? Date.parse(lastChange) : Date.now(),
    );
    return {
      object: { ...target, found: object !== undefined },
      ...(lastChange !== undefined ? { lastChange } : {}),
      usedBy,
    };
  } finally {
    await client.close();
  }
}

/** The object asked about, a Secret's values redacted at once; undefined when it does not exist (yet). */
async function readTarget(client: KubeClient, target: UseTarget): Promise<JsonObject | undefined> {
  const resource = target.kind === 'ConfigMap' ? 'configmaps' : 'secrets';
  const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/${resource}/${encodeURIComponent(target.name)}`;
  try {
    const answer = await client.getJSON<KubeObject>(path);
    if (answer.notModified) throw new KubediffError('the API server answered 304 to a plain GET.');
    const object = answer.body as JsonObject;
    return target.kind === 'Secret' ? redactSecret(object, new Redactor()) : object;
  } catch (error) {
    if (error instanceof KubeError && error.kind === 'not-found') return undefined;
    throw error;
  }
}

async function listInto(
  client: KubeClient,
  type: ResourceType,
  namespace: string,
  each: (item: KubeObject) => void,
): Promise<void> {
  const pager = new ListPager(listerWatcherFor(client, type, { namespace }), {
    pageSize: 500,
    idleTimeoutMs: 60_000,
    slowListWarnMs: Number.MAX_SAFE_INTEGER,
  });
  await pager.list(
    {
      started: () => {},
      page: (items) => {
        for (const item of items) each(item);
        return undefined;
      },
      progress: () => {},
    },
    new AbortController().signal,
  );
}

/** The newest time of the object's managedFields (its last write), else its creation. */
function lastWrite(object: JsonObject): string | undefined {
  let latest: string | undefined;
  for (const entry of managedFieldsOf(object as KubeObject) ?? []) {
    if (entry.time && (latest === undefined || entry.time > latest)) latest = entry.time;
  }
  const metadata = isJsonObject(object.metadata) ? object.metadata : {};
  const created = typeof metadata.creationTimestamp === 'string' ? metadata.creationTimestamp : undefined;
  return latest ?? created;
}

/** The namespace of the context in use, as kubectl takes it; `default` when it names none. */
function contextNamespace(identity: ClusterIdentity): string {
  const context = identity.document.contexts.find((entry) => entry.name === identity.contextName)?.context;
  const namespace = context?.namespace;
  return typeof namespace === 'string' && namespace !== '' ? namespace : 'default';
}

function lookupKey(group: string, kind: string, key: string): string {
  return `${group}\u0000${kind}\u0000${key}`;
}

function storedOf(item: KubeObject): StoredObject {
  const { metadata } = item;
  return {
    key: objectKey(metadata),
    namespace: metadata.namespace,
    name: metadata.name,
    uid: metadata.uid,
    resourceVersion: metadata.resourceVersion,
    object: { metadata: { ownerReferences: metadata.ownerReferences ?? [] } } as JsonObject,
  };
}

/** The table: one row per workload, or one line saying nothing uses it. */
export function usedByTable(answers: readonly UsedByAnswer[]): string {
  const several = answers.some((answer) => answer.cluster !== undefined);
  const header = [...(several ? ['CLUSTER'] : []), 'WORKLOAD', 'VIA', 'KEYS', 'LIVE', 'PODS'];
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const answer of answers) {
    const { object, usedBy } = answer;
    const what = `${object.kind.toLowerCase()} ${object.namespace}/${object.name}`;
    if (!object.found) notes.push(`${what} does not exist (yet): what is listed waits for it.`);
    if (usedBy.workloads.length === 0) notes.push(`nothing in namespace ${object.namespace} uses ${what}.`);
    if (usedBy.unreadKeys?.length)
      notes.push(`keys of ${what} read by nobody: ${usedBy.unreadKeys.join(', ')}.`);
    for (const workload of usedBy.workloads) {
      const pods = workload.pods;
      rows.push(
        [
          ...(several ? [answer.cluster ?? ''] : []),
          `${workload.object.kind.toLowerCase()}/${workload.object.name}`,
          workload.via.map(wayText).join(', '),
          workload.keys.join(',') || '-',
          workload.live === undefined
            ? '-'
            : workload.live === true
              ? 'yes'
              : workload.live === false
                ? 'no'
                : 'eventually',
          pods === undefined
            ? '-'
            : pods.old
              ? `${pods.total} (${pods.old} older than the last change)`
              : String(pods.total),
        ].map((cell) => printable(cell)),
      );
    }
  }
  const lines: string[] = [];
  if (rows.length > 0) {
    const widths = header.map((title, column) =>
      Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
    );
    for (const row of [header, ...rows]) {
      lines.push(
        row
          .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
          .join('  '),
      );
    }
  }
  return [...lines, ...notes.map((note) => printable(note))].map((line) => `${line}\n`).join('');
}
