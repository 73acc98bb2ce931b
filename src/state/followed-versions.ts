// How far each listed type's recorded objects are followed: a resourceVersion up to which every change
// of the type is committed (a change is committed only once every sink is done with it, in the order the
// informer handed it on). A restart replays the changes after it (src/informer/reflector.ts, replayFrom):
// among them, those a kill -9 kept from the store, whose objects the LIST can no longer show.
//
// Per informer (one per namespace with -n, each in the order of its own stream): the newer of the
// resourceVersion its first LIST ended at and the newest of its committed changes. Per type: the oldest
// of its informers'. Written in the transaction that commits the changes it counts: never ahead of what
// is committed.
import type { Informer } from '../informer/informer.ts';
import { numericResourceVersion as numeric, qualifiedName } from '../kube/types.ts';
import type { ListedTypes } from './listed-types.ts';
import type { SerializedWrite } from './store.ts';

/** An informer of every namespace counts the changes of any (the key's namespace part). */
const ANY_NAMESPACE = '';

export class FollowedVersions {
  /** The newest committed change's resourceVersion, by resource and namespace ('' for any). */
  private readonly newest = new Map<string, bigint>();
  /** What the store holds, by resource. */
  private readonly stored = new Map<string, string>();

  /** `batch` is committed: its changes count. */
  committed(batch: readonly { write: SerializedWrite }[]): void {
    raiseBy(this.newest, batch);
  }

  /**
   * The types whose point moves past what the store holds once `batch` is committed too: resource →
   * resourceVersion.
   */
  moved(
    informers: readonly Informer[],
    listed: ListedTypes,
    batch: readonly { write: SerializedWrite }[],
  ): Map<string, string> {
    const newest = new Map(this.newest);
    raiseBy(newest, batch);
    const points = new Map<string, bigint | undefined>();
    for (const informer of informers) {
      const resource = qualifiedName(informer.type);
      if (points.has(resource) && points.get(resource) === undefined) continue;
      const base = numeric(listed.followedFrom(informer));
      if (base === undefined) {
        // Not listed yet, or not numeric: the type has no point.
        points.set(resource, undefined);
        continue;
      }
      const changes = newest.get(keyOf(resource, informer.namespace ?? ANY_NAMESPACE));
      const point = changes !== undefined && changes > base ? changes : base;
      const before = points.get(resource);
      points.set(resource, before === undefined || point < before ? point : before);
    }
    const moved = new Map<string, string>();
    for (const [resource, point] of points) {
      if (point === undefined) continue;
      const stored = numeric(this.stored.get(resource));
      if (stored === undefined || point > stored) moved.set(resource, point.toString());
    }
    return moved;
  }

  /** The store holds these points now. */
  wrote(points: ReadonlyMap<string, string>): void {
    for (const [resource, point] of points) this.stored.set(resource, point);
  }
}

/** Raises `newest` by the changes of `batch`: per resource and namespace, and per resource. */
function raiseBy(newest: Map<string, bigint>, batch: readonly { write: SerializedWrite }[]): void {
  const raise = (key: string, version: bigint) => {
    const before = newest.get(key);
    if (before === undefined || version > before) newest.set(key, version);
  };
  for (const { write } of batch) {
    if (write.kind !== 'object' && write.kind !== 'delete') continue;
    const version = numeric(write.resourceVersion);
    if (version === undefined) continue;
    raise(keyOf(write.resource, write.namespace ?? ANY_NAMESPACE), version);
    raise(keyOf(write.resource, ANY_NAMESPACE), version);
  }
}

function keyOf(resource: string, namespace: string): string {
  return `${resource}\u0000${namespace}`;
}
