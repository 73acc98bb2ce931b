// A custom resource whose schema gains a default, as an operator's upgrade does (issue 36: prometheus-operator
// v0.93.0 gave Prometheus `spec.shards` a `default: 1`): the API server then serves every stored object
// without `shards` with `shards: 1`, at the same resourceVersion, with no watch event.
import type { KubeAdmin, KubeBody } from './kube-admin.ts';

/** The Sharded kind's schema: `spec.replicas` and `spec.shards`, integers; `shards` defaulted when given. */
export function shardedSchema(shardsDefault?: number): KubeBody {
  return {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          replicas: { type: 'integer' },
          shards: { type: 'integer', ...(shardsDefault === undefined ? {} : { default: shardsDefault }) },
        },
      },
    },
  };
}

/** Replaces the schema of the CRD `name`'s only version (a PUT of the CRD, as `kubectl apply` of a new release). */
export async function setCRDSchema(admin: KubeAdmin, name: string, schema: KubeBody): Promise<void> {
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
  const crd = (await admin.get(path)) as unknown as { spec: { versions: { schema: unknown }[] } };
  for (const version of crd.spec.versions) version.schema = { openAPIV3Schema: schema };
  await admin.update(path, crd as unknown as KubeBody);
}
