// Resource names in rules (sink filters, the config file's rules, `redact:`) resolved through discovery:
// short names and kinds of custom resources too, as kubectl resolves them. The watch feeds it what
// discovery offers on every cluster it watches.

import { parseResourceName, resolveResourceName } from '../kube/resource-names.ts';
import { qualifiedName, type ResourceType } from '../kube/types.ts';

/** The resource types discovery offers, for resolving the names people write in filters. */
export class DiscoveryResolver {
  #types: readonly ResourceType[] = [];
  #cache = new Map<string, readonly string[] | undefined>();

  update(types: readonly ResourceType[]): void {
    this.#types = types;
    this.#cache.clear();
  }

  /** `deploy` → ['deployments.apps']; undefined when discovery does not know the name (yet). */
  readonly resolve = (text: string): readonly string[] | undefined => {
    if (this.#cache.has(text)) return this.#cache.get(text);
    const matches = resolveResourceName(parseResourceName(text), this.#types).map(qualifiedName);
    const result = matches.length > 0 ? matches : undefined;
    this.#cache.set(text, result);
    return result;
  };
}
