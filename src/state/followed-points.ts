// How the store keeps how far a type is followed (followed-versions.ts): one resourceVersion when one
// informer watches every namespace, a JSON object of namespace → resourceVersion with -n (each informer
// replays from its own). A single resourceVersion holds for every informer of the type.

/** The namespace key of an informer of every namespace. */
export const ANY_NAMESPACE = '';

/** A type's points, by its informers' namespaces (ANY_NAMESPACE for all), as the store keeps them. */
export function encodePoints(perNamespace: ReadonlyMap<string, string>): string {
  const all = perNamespace.get(ANY_NAMESPACE);
  if (perNamespace.size === 1 && all !== undefined) return all;
  const entries = [...perNamespace].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(entries));
}

/** Where the informer of `namespace` (undefined: every namespace) replays from, given the stored points. */
export function replayPointOf(stored: string, namespace: string | undefined): string | undefined {
  if (!stored.startsWith('{')) return stored || undefined;
  try {
    const points = JSON.parse(stored) as Record<string, unknown>;
    const point = points[namespace ?? ANY_NAMESPACE];
    return typeof point === 'string' ? point : undefined;
  } catch {
    return undefined;
  }
}
