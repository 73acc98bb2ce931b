// Who owns the lines that are older than the history (blame): the object's managedFields, read from the
// cluster now, the way kubectl-blame reads them. Only the object's metadata is asked for
// (PartialObjectMetadata): a Secret's values are never even fetched. The entries say who owns each field
// *now*, so they are used only for lines that have not changed since the version blamed (the caller
// checks), and only when the live object is the recorded one (same uid).
import type { FieldOwnership } from '../../diff/field-owners.ts';
import { KubeClient } from '../../kube/client.ts';
import { kubeconfigContexts, loadKubeconfig } from '../../kube/kubeconfig.ts';
import { type ManagedFieldsEntry, managedFieldsOf } from '../../kube/managed-fields.ts';
import { type JsonObject, type KubeObject, objectApiPath } from '../../kube/types.ts';
import { KubediffError } from '../../util/errors.ts';
import { resolveLinePath } from './object-yaml.ts';

export interface LiveObjectRef {
  apiVersion: string;
  resource: string;
  namespace?: string | undefined;
  name: string;
  uid: string;
}

export interface ClusterChoice {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** The history's cluster name: the context of that name, when the kubeconfig has one and no --context is given. */
  cluster?: string | undefined;
}

/**
 * The live object's managedFields entries and its metadata (creationTimestamp: who created it is the
 * entry stamped then, when only one is); a KubediffError saying why not (unreachable, another uid…).
 */
export async function liveManagedFields(
  ref: LiveObjectRef,
  choice: ClusterChoice,
): Promise<{ entries: readonly ManagedFieldsEntry[]; metadata: JsonObject; context: string }> {
  let context = choice.context;
  if (context === undefined && choice.cluster !== undefined) {
    const contexts = kubeconfigContexts({ kubeconfig: choice.kubeconfig });
    if (contexts.includes(choice.cluster)) context = choice.cluster;
  }
  const identity = loadKubeconfig({ kubeconfig: choice.kubeconfig, context });
  const client = await KubeClient.create(identity);
  try {
    const answer = await client.getJSON<KubeObject>(objectApiPath(ref), {
      headers: { accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json' },
    });
    if (answer.notModified) throw new KubediffError('the API server answered 304 to a plain GET.');
    const live = answer.body;
    if (live.metadata?.uid !== ref.uid) {
      throw new KubediffError(
        `the object in context "${identity.contextName}" is not the one recorded (uid ${live.metadata?.uid ?? 'none'}, recorded ${ref.uid})`,
      );
    }
    return {
      entries: managedFieldsOf(live) ?? [],
      metadata: (live.metadata ?? {}) as JsonObject,
      context: identity.contextName,
    };
  } finally {
    await client.close();
  }
}

/**
 * The owners of the line at `path` (a blame line path: map keys, list items as `[name=web]` or `[#3]`)
 * in `object` (the recorded object, whose lists the entries' `k:` keys are matched against).
 */
export function ownersOf(
  ownership: FieldOwnership,
  object: JsonObject,
  path: readonly string[],
): ManagedFieldsEntry[] {
  const resolved = resolveLinePath(object, path);
  return resolved === undefined ? [] : ownership.ownersOf(resolved.pointer);
}
