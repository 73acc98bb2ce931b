// Which admission reviews can name a change kubediff reports, and the digest of the object each write
// produces, normalized exactly as the watch stores objects of that type (so that it equals the digest of
// the stored object when the review is of that change: admission-match.ts). The watch tells it the types
// it watches (every cluster's); a review of another resource names nothing kubediff reports.

import type { Normalizer } from '../diff/normalize.ts';
import type { JsonObject, ResourceType } from '../kube/types.ts';
import { objectDigest } from './object-digest.ts';

/** What a review says of its write, as far as the digest goes. */
export interface DigestedWrite {
  group: string;
  resource: string;
  /** request.kind: the kind of the object reviewed (a Scale for `scale`, the object's own for `status`). */
  kind: { group: string; version: string; kind: string };
  object?: JsonObject;
}

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
   * undefined when kubediff watches no such resource; `{}` when the object is not the watched type's in
   * the watched version (a Scale, another version: the review cannot be checked against the change).
   */
  of(write: DigestedWrite): { digest?: string } | undefined {
    const type = this.#types.get(`${write.group}/${write.resource}`);
    if (!type) return undefined;
    const { kind, object } = write;
    if (!object || kind.group !== type.group || kind.version !== type.version || kind.kind !== type.kind) {
      return {};
    }
    return { digest: objectDigest(this.#normalizer.normalize(type, object)) };
  }
}
