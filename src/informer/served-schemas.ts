// What of each CustomResourceDefinition decides how the API server serves its objects: its versions'
// names, whether each is served and which is stored, their schemas (defaults, pruning, nullable, …),
// conversion and preserveUnknownFields. When that changes, the API server rebuilds the type's storage
// and from then on serves every stored object of the type in the new form (defaults are applied on
// read), at the same resourceVersion, with no watch event: the type must be read again
// (Informer.servedSchemaChanged). Names, printer columns, categories, status and metadata do not change
// the objects and are left out.
//
// Bounded: one SHA-256 per CRD the API server has, forgotten when the CRD is deleted or a relist of
// the CRDs no longer finds it.
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube/types.ts';

/** The custom resource type a CRD defines, as the informers are keyed (kube/types.ts, qualifiedName). */
export interface DefinedType {
  group: string;
  resource: string;
}

interface CrdSpec {
  group?: unknown;
  names?: { plural?: unknown };
  versions?: { name?: unknown; served?: unknown; storage?: unknown; schema?: unknown }[];
  conversion?: unknown;
  preserveUnknownFields?: unknown;
}

export class ServedSchemas {
  /** By CRD name: the signature of what decides how its objects are served. */
  private readonly signatures = new Map<string, string>();
  private seenInList: Set<string> | undefined;

  /**
   * A CRD as listed or watched (not deleted): the type it defines when what decides how its objects are
   * served changed since it was last seen, else undefined (also the first time it is seen).
   */
  observe(crd: KubeObject): DefinedType | undefined {
    const name = crd.metadata.name;
    this.seenInList?.add(name);
    const spec = (crd as { spec?: CrdSpec }).spec;
    if (!spec || typeof spec.group !== 'string' || typeof spec.names?.plural !== 'string') return undefined;
    const signature = servedSignature(spec);
    const before = this.signatures.get(name);
    this.signatures.set(name, signature);
    return before !== undefined && before !== signature
      ? { group: spec.group, resource: spec.names.plural }
      : undefined;
  }

  /** A CRD deleted. */
  forget(crd: KubeObject): void {
    this.signatures.delete(crd.metadata.name);
  }

  /** A LIST of the CRDs begins: what it does not find again is forgotten when it completes. */
  listStarted(): void {
    this.seenInList = new Set();
  }

  listCompleted(): void {
    const seen = this.seenInList;
    this.seenInList = undefined;
    if (!seen) return;
    for (const name of [...this.signatures.keys()]) if (!seen.has(name)) this.signatures.delete(name);
  }

  get size(): number {
    return this.signatures.size;
  }
}

function servedSignature(spec: CrdSpec): string {
  const served = {
    versions: (Array.isArray(spec.versions) ? spec.versions : []).map((version) => ({
      name: version.name,
      served: version.served,
      storage: version.storage,
      schema: version.schema,
    })),
    conversion: spec.conversion,
    preserveUnknownFields: spec.preserveUnknownFields,
  };
  return createHash('sha256').update(JSON.stringify(served)).digest('hex');
}
