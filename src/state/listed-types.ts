// Which resource types' objects in the store are a complete inventory ("listed", with where each informer
// is followed from, followed-points.ts): every informer of the type (one per namespace with -n) has ended
// its first LIST and every entry of those LISTs is committed. At the next start a listed type is
// reconciled against its recorded objects even when it has none (so that what was created meanwhile is
// reported); an unlisted one without objects takes a silent baseline instead.
import type { Informer } from '../informer/informer.ts';
import { qualifiedName } from '../kube/types.ts';
import { ANY_NAMESPACE, encodePoints, replayPointOf } from './followed-points.ts';
import type { QueuedWrite, WriteQueue } from './write-queue.ts';

export class ListedTypes {
  /** The resourceVersion at which each informer's first LIST ended (during a replay: its replay point). */
  private readonly syncedAt = new Map<Informer, string>();
  /** Per type marked listed in the store: where its informers were followed from (encoded). */
  private readonly listed = new Map<string, string>();

  /** An informer's first LIST ended: true the first time only. */
  firstListEnded(informer: Informer): boolean {
    if (this.syncedAt.has(informer)) return false;
    this.syncedAt.set(informer, informer.resourceVersion);
    return true;
  }

  /**
   * Types not marked yet whose informers (all of them) have ended their first LIST, and whose entries of
   * those LISTs are all committed once `batch` is: resource → each informer's first LIST's end, encoded.
   */
  newlyListed(
    informers: readonly Informer[],
    queue: WriteQueue,
    batch: readonly QueuedWrite[],
  ): Map<string, string> {
    const perType = new Map<string, Map<string, string>>();
    const incomplete = new Set<string>();
    for (const informer of informers) {
      const resource = qualifiedName(informer.type);
      const resourceVersion = this.syncedAt.get(informer);
      if (resourceVersion === undefined) incomplete.add(resource);
      else {
        const perNamespace = perType.get(resource) ?? new Map<string, string>();
        perNamespace.set(informer.namespace ?? ANY_NAMESPACE, resourceVersion);
        perType.set(resource, perNamespace);
      }
    }
    const versions = new Map<string, string>();
    for (const [resource, perNamespace] of perType) {
      if (incomplete.has(resource) || this.listed.has(resource) || !queue.firstListDone(resource, batch))
        continue;
      versions.set(resource, encodePoints(perNamespace));
    }
    return versions;
  }

  /** The store marked these types listed. */
  marked(versions: ReadonlyMap<string, string>): void {
    for (const [resource, resourceVersion] of versions) this.listed.set(resource, resourceVersion);
  }

  has(resource: string): boolean {
    return this.listed.has(resource);
  }

  /**
   * Where `informer` is followed from, when the store holds its type as listed (or the commit in progress
   * marks it, `marking`): where its first LIST ended, else what the type was marked with.
   */
  followedFrom(informer: Informer, marking?: ReadonlyMap<string, string>): string | undefined {
    const resource = qualifiedName(informer.type);
    const marked = this.listed.get(resource) ?? marking?.get(resource);
    if (marked === undefined) return undefined;
    return this.syncedAt.get(informer) ?? replayPointOf(marked, informer.namespace);
  }

  /** Of `versions`, those not marked yet. */
  unmarked(versions: ReadonlyMap<string, string>): Map<string, string> {
    return new Map([...versions].filter(([resource]) => !this.listed.has(resource)));
  }

  /** Types no longer watched lose their mark: they must be listed again when they come back. */
  keepWatched(watched: ReadonlySet<string>): void {
    for (const resource of [...this.listed.keys()]) if (!watched.has(resource)) this.listed.delete(resource);
  }
}
