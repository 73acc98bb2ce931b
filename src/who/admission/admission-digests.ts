// What an admission review says that admission-match.ts can check against the change, worked out from the
// objects it carries (then dropped): the digest of the object a CREATE or UPDATE produces, of a DELETE's
// old object (normalized as the watch stores that type), or a `scale` UPDATE's replicas for types whose
// Scale maps spec.replicas. A review of a type not watched names nothing. Normalizing and digesting may
// throw (an object nested too deep): the caller drops the review.

import type { Normalizer } from '../../diff/normalize.ts';
import { isJsonObject, type JsonObject, type ResourceType } from '../../kube/types.ts';
import { objectDigest } from './object-digest.ts';

/** What a review says of its write, as far as the checks go. */
export interface DigestedWrite {
  operation: string;
  group: string;
  resource: string;
  subresource?: string;
  /** request.kind: the kind of the object reviewed (a Scale for `scale`, the object's own for `status`). */
  kind: { group: string; version: string; kind: string };
  /** CREATE, UPDATE: the object as it will be stored. */
  object?: JsonObject;
  /** DELETE: the object as it is before the deletion. */
  oldObject?: JsonObject;
}

/** What a record keeps to be checked by (AdmissionRecord's fields of the same names). */
export interface WriteChecks {
  digest?: string;
  oldDigest?: string;
  replicas?: number;
}

/** The types whose `scale` subresource sets spec.replicas. */
const SCALED_BY_SPEC_REPLICAS = new Set([
  'apps/deployments',
  'apps/replicasets',
  'apps/statefulsets',
  '/replicationcontrollers',
]);

export class AdmissionDigests {
  readonly #normalizer: Normalizer;
  #types = new Map<string, ResourceType>();

  constructor(normalizer: Normalizer) {
    this.#normalizer = normalizer;
  }

  /** The types watched now (on every cluster). */
  update(types: readonly ResourceType[]): void {
    this.#types = new Map(types.map((type) => [`${type.group}/${type.resource}`, type]));
  }

  /**
   * undefined when kubediff watches no such resource; `{}` when nothing the review carries can be checked
   * (another version, a `status` write, a custom resource's scale). Throws when an object cannot be
   * normalized or digested.
   */
  of(write: DigestedWrite): WriteChecks | undefined {
    const key = `${write.group}/${write.resource}`;
    const type = this.#types.get(key);
    if (!type) return undefined;
    const { kind } = write;
    if (write.subresource === 'scale') {
      const replicas = isJsonObject(write.object?.spec) ? write.object.spec.replicas : undefined;
      const scale = kind.group === 'autoscaling' && kind.kind === 'Scale';
      return scale && SCALED_BY_SPEC_REPLICAS.has(key) && Number.isSafeInteger(replicas)
        ? { replicas: replicas as number }
        : {};
    }
    if (kind.group !== type.group || kind.version !== type.version || kind.kind !== type.kind) return {};
    const digest = (object: JsonObject) => objectDigest(this.#normalizer.normalize(type, object));
    if (write.operation === 'DELETE') return write.oldObject ? { oldDigest: digest(write.oldObject) } : {};
    return write.object ? { digest: digest(write.object) } : {};
  }
}
