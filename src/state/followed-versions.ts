// How far each listed type's recorded objects are followed: a resourceVersion up to which every change
// of the type is committed (a change is committed only once every sink is done with it). A restart
// replays the changes after it (src/informer/reflector.ts, replayFrom): among them, those a kill -9 kept
// from the store, whose objects the LIST can no longer show.
//
// Per informer (one per namespace with -n): where its first LIST left it (the LIST's resourceVersion;
// with a replay, the replay point until the replay's changes are committed, then the LIST's), raised by
// each committed live change: the changes of one informer are queued in the order it read them and
// committed as a prefix of the queue, so every change before a committed one is committed. Changes found
// by comparing a LIST come in no such order and raise nothing. A change dropped at the backlog bound
// (never committed), or committed there before every sink finished it, keeps the point below it for the
// rest of the run. Events a new leader hands over (held back as a standby, older than its informers) hold
// the point below them until they are committed. Recorded per type: one resourceVersion, or with -n one
// per namespace (followed-points.ts), each informer replaying from its own. Written in the transaction
// that commits the changes it counts.
import type { Informer } from '../informer/informer.ts';
import { numericResourceVersion as numeric, qualifiedName } from '../kube/types.ts';
import { ANY_NAMESPACE, encodePoints } from './followed-points.ts';
import type { ListedTypes } from './listed-types.ts';
import { type QueuedWrite, resourceOf } from './write-queue.ts';

type Entries = readonly Pick<QueuedWrite, 'write' | 'followed'>[];

export class FollowedVersions {
  /** The newest committed change's resourceVersion, by resource and namespace ('' for any). */
  private readonly newest = new Map<string, bigint>();
  /** Below the oldest change dropped uncommitted, by resource and namespace ('' for any). */
  private readonly caps = new Map<string, bigint>();
  /** Where an informer is followed from past its first LIST: its replay over, a takeover's resync. */
  private readonly movedTo = new Map<Informer, bigint>();
  /**
   * What waits for the queue entries up to seq `until` to be committed: caps below events a new leader
   * handed over (lifted then), or an informer's move past its replay (made then).
   */
  private waiting: (
    | { until: number; caps: Map<string, bigint> }
    | { until: number; move: { informer: Informer; to: bigint } }
  )[] = [];
  /** What the store holds, by resource. */
  private readonly stored = new Map<string, string>();

  /** `batch` is committed: its changes count. */
  committed(batch: Entries): void {
    raiseBy(this.newest, batch);
  }

  /**
   * `entries` left the queue uncommitted, or were committed before every sink finished them (both at the
   * backlog bound): no point reaches them for the rest of the run.
   */
  unconfirmed(entries: Entries): void {
    capBelow(this.caps, entries);
  }

  /** Handed-over events, queued up to seq `until`: no point reaches them before they are committed. */
  hold(until: number, entries: Entries): void {
    const caps = new Map<string, bigint>();
    capBelow(caps, entries);
    if (caps.size > 0) this.waiting.push({ until, caps });
  }

  /**
   * `informer` is followed from `resourceVersion` once the queue entries up to seq `until` are committed
   * (at once without `until`); never moved back.
   */
  moveTo(informer: Informer, resourceVersion: string, until?: number): void {
    const to = numeric(resourceVersion);
    if (to === undefined) return;
    if (until === undefined) this.move({ informer, to });
    else this.waiting.push({ until, move: { informer, to } });
  }

  /** After a commit: what waited for entries that are all committed now (none left at or below `until`). */
  release(oldestWaiting: number | undefined): void {
    this.waiting = this.waiting.filter((entry) => {
      if (oldestWaiting !== undefined && oldestWaiting <= entry.until) return true;
      if ('move' in entry) this.move(entry.move);
      return false;
    });
  }

  private move({ informer, to }: { informer: Informer; to: bigint }): void {
    const before = this.movedTo.get(informer);
    if (before === undefined || to > before) this.movedTo.set(informer, to);
  }

  /**
   * The types whose points differ from what the store holds once `batch` is committed, with the types
   * that commit marks listed (`marking`): resource → points (followed-points.ts).
   */
  moved(
    informers: readonly Informer[],
    listed: ListedTypes,
    batch: Entries,
    marking: ReadonlyMap<string, string>,
  ): Map<string, string> {
    // This batch's changes, over those committed before.
    const batchNewest = new Map<string, bigint>();
    raiseBy(batchNewest, batch);
    const holds = this.waiting.flatMap((entry) => ('caps' in entry ? [entry.caps] : []));
    /** Per type, each informer's point by its namespace ('' for all); undefined: the type has none. */
    const points = new Map<string, Map<string, bigint> | undefined>();
    for (const informer of informers) {
      const resource = qualifiedName(informer.type);
      if (points.has(resource) && points.get(resource) === undefined) continue;
      const first = numeric(listed.followedFrom(informer, marking));
      if (first === undefined) {
        // Not listed yet, or not numeric: the type has no point.
        points.set(resource, undefined);
        continue;
      }
      const namespace = informer.namespace ?? ANY_NAMESPACE;
      const key = keyOf(resource, namespace);
      let point = first;
      for (const raised of [this.movedTo.get(informer), this.newest.get(key), batchNewest.get(key)])
        if (raised !== undefined && raised > point) point = raised;
      for (const caps of [this.caps, ...holds]) {
        const cap = caps.get(key);
        if (cap !== undefined && cap < point) point = cap;
      }
      const perNamespace = points.get(resource) ?? new Map<string, bigint>();
      perNamespace.set(namespace, point);
      points.set(resource, perNamespace);
    }
    const moved = new Map<string, string>();
    for (const [resource, perNamespace] of points) {
      if (!perNamespace) continue;
      const encoded = encodePoints(
        new Map([...perNamespace].map(([namespace, point]) => [namespace, point.toString()])),
      );
      if (encoded !== this.stored.get(resource)) moved.set(resource, encoded);
    }
    return moved;
  }

  /** `resourceVersion`, or the lowest cap on any of the type's keys below it. */
  atMost(resource: string, resourceVersion: string): string {
    let point = numeric(resourceVersion);
    if (point === undefined) return resourceVersion;
    const prefix = keyOf(resource, '');
    for (const entry of [{ caps: this.caps }, ...this.waiting])
      if ('caps' in entry)
        for (const [key, cap] of entry.caps) if (key.startsWith(prefix) && cap < point) point = cap;
    return point.toString();
  }

  /** The store holds these points now. */
  wrote(points: ReadonlyMap<string, string>): void {
    for (const [resource, point] of points) this.stored.set(resource, point);
  }
}

/** Raises `newest` by the changes of `batch`: per resource and namespace, and per resource. */
function raiseBy(newest: Map<string, bigint>, batch: Entries): void {
  for (const { write, followed } of batch) {
    const version = numeric(followed?.resourceVersion);
    if (version === undefined) continue;
    for (const key of keysOf(resourceOf(write), followed?.namespace)) {
      const before = newest.get(key);
      if (before === undefined || version > before) newest.set(key, version);
    }
  }
}

/** Lowers `caps` below each of `entries`: per resource and namespace, and per resource. */
function capBelow(caps: Map<string, bigint>, entries: Entries): void {
  for (const { write, followed } of entries) {
    const version = numeric(followed?.resourceVersion);
    if (version === undefined) continue;
    for (const key of keysOf(resourceOf(write), followed?.namespace)) {
      const cap = caps.get(key);
      if (cap === undefined || version - 1n < cap) caps.set(key, version - 1n);
    }
  }
}

/** The keys a change of `namespace` counts under: its namespace's informer and an all-namespaces one. */
function keysOf(resource: string | undefined, namespace: string | undefined): string[] {
  if (resource === undefined) return [];
  const any = keyOf(resource, ANY_NAMESPACE);
  return namespace ? [keyOf(resource, namespace), any] : [any];
}

function keyOf(resource: string, namespace: string): string {
  return `${resource}\u0000${namespace}`;
}
