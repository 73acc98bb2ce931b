// Which resource types' objects in the store are a complete inventory ("listed", with the resourceVersion
// they were followed to): every informer of the type (one per namespace with -n) has ended its first LIST
// and every entry of those LISTs is committed. At the next start a listed type is reconciled against its
// recorded objects even when it has none (so that what was created meanwhile is reported); an unlisted
// one without objects takes a silent baseline instead.
import type { Informer } from '../informer/informer.ts';
import { olderResourceVersion, qualifiedName } from '../kube/types.ts';
import type { QueuedWrite, WriteQueue } from './write-queue.ts';

export class ListedTypes {
  /** The resourceVersion at which each informer's first LIST ended. */
  private readonly syncedAt = new Map<Informer, string>();
  /** Per type marked listed in the store: the resourceVersion it was followed to. */
  private readonly listed = new Map<string, string>();

  /** An informer's first LIST ended: true the first time only. */
  firstListEnded(informer: Informer): boolean {
    if (this.syncedAt.has(informer)) return false;
    this.syncedAt.set(informer, informer.resourceVersion);
    return true;
  }

  /**
   * Types not marked yet whose informers (all of them) have ended their first LIST, and whose entries of
   * those LISTs are all committed once `batch` is: resource → resourceVersion.
   */
  newlyListed(
    informers: readonly Informer[],
    queue: WriteQueue,
    batch: readonly QueuedWrite[],
  ): Map<string, string> {
    const versions = new Map<string, string>();
    const incomplete = new Set<string>();
    for (const informer of informers) {
      const resource = qualifiedName(informer.type);
      const resourceVersion = this.syncedAt.get(informer);
      if (resourceVersion === undefined) incomplete.add(resource);
      // With -n, one informer per namespace: the type is followed as far as the one behind.
      else versions.set(resource, olderResourceVersion(versions.get(resource), resourceVersion));
    }
    for (const resource of versions.keys()) {
      if (incomplete.has(resource) || this.listed.has(resource) || !queue.firstListDone(resource, batch))
        versions.delete(resource);
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
   * Where `informer`'s type is followed from, when the store holds it as listed: the resourceVersion the
   * informer's first LIST ended at (or, after a takeover's resync, the one it was marked with).
   */
  followedFrom(informer: Informer): string | undefined {
    const marked = this.listed.get(qualifiedName(informer.type));
    return marked === undefined ? undefined : (this.syncedAt.get(informer) ?? marked);
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
