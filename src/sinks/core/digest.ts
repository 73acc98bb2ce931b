// A digest stands for many events in little space: counts by type, resource
// and namespace, the time span, and the most recent events in full. Sinks
// fold events into one when they arrive faster than they can be delivered
// (a full queue, a chat platform's one message per second), so that a burst costs a
// bounded amount of memory and reaches the receiver as one summary instead
// of hours of backlog. Events that no longer fit in full are handed to
// `onEvict` (the dead-letter file) and stay counted.
import { randomUUID } from 'node:crypto';
import {
  type ChangeEvent,
  type EventType,
  type FilterEventType,
  type KubediffEvent,
  qualifiedResource,
} from '../../events/event.ts';
import { eventJsonLength } from '../../events/event-json.ts';
import { groupedCount } from '../../util/count-text.ts';
import { isoTimestamp } from '../../util/timestamp.ts';

export interface DigestGroup {
  /** A change's type, or OUTCOME (a webhook's or a batch sink's queue folds OUTCOMEs too). */
  type: FilterEventType;
  /** 'pods', 'deployments.apps'. */
  resource: string;
  kind: string;
  /** Absent for cluster-scoped objects. */
  namespace?: string;
  count: number;
}

/** The JSON a webhook receives for a digest (`"kind": "digest"`; events have no `kind`). */
export interface DigestPayload<E extends KubediffEvent = KubediffEvent> {
  kind: 'digest';
  /** Unique per digest, stable across retries: deduplicate by it like by an event's id. */
  id: string;
  cluster?: string;
  /** How many events the digest stands for. */
  count: number;
  /** Time of the first and the last event. */
  from: string;
  to: string;
  /** '37 changes in shop: 30 pods added, 5 deployments updated, 2 configmaps deleted'. */
  summary: string;
  /** Events per type; `OUTCOME` only when the digest holds OUTCOMEs. */
  byType: DigestCounts;
  groups: DigestGroup[];
  /** The most recent events, in full, oldest first. */
  events: E[];
  /** Events counted here but not included in `events`. */
  omitted: number;
}

/** Events per type of a digest: the change types always, OUTCOME when there are any. */
export type DigestCounts = Record<EventType, number> & { OUTCOME?: number };

export interface DigestOptions<E extends KubediffEvent = ChangeEvent> {
  /** How many of the most recent events are kept in full… */
  retain: number;
  /** …and at most this many bytes of them (as JSON). Default: no limit. */
  retainBytes?: number;
  /** Called with each event that drops out of the retained ones (still counted). */
  onEvict?: (event: E) => void;
}

const VERBS: Record<FilterEventType, string> = {
  ADDED: 'added',
  UPDATED: 'updated',
  DELETED: 'deleted',
  OUTCOME: 'followed to an outcome',
};

/**
 * E: what it holds. A chat sink's digests hold changes alone (ChangeEvent, the default); the queues of
 * the webhook and batch sinks fold OUTCOMEs too (KubediffEvent).
 */
export class Digest<E extends KubediffEvent = ChangeEvent> {
  readonly id = `digest:${randomUUID()}`;
  private readonly retainLimit: number;
  private readonly retainBytes: number;
  private readonly retainedSizes: number[] = [];
  private retainedBytes = 0;
  private readonly onEvict: ((event: E) => void) | undefined;
  private readonly groupMap = new Map<string, DigestGroup>();
  private retained: E[] = [];
  private total = 0;
  private first: string | undefined;
  private last: string | undefined;
  private clusterName: string | undefined;

  constructor(options: DigestOptions<E>) {
    this.retainLimit = Math.max(0, options.retain);
    this.retainBytes = options.retainBytes ?? Number.POSITIVE_INFINITY;
    this.onEvict = options.onEvict;
  }

  get count(): number {
    return this.total;
  }

  get isEmpty(): boolean {
    return this.total === 0;
  }

  /** The events kept in full, oldest first. */
  get events(): readonly E[] {
    return this.retained;
  }

  /** Bytes (as JSON) of the events kept in full; measured only when `retainBytes` is set. */
  get bytes(): number {
    return this.retainedBytes;
  }

  /** Every event of the digest is kept in full. */
  get complete(): boolean {
    return this.retained.length === this.total;
  }

  get cluster(): string | undefined {
    return this.clusterName;
  }

  get firstTime(): string | undefined {
    return this.first;
  }

  get lastTime(): string | undefined {
    return this.last;
  }

  add(event: E): void {
    this.count1(event);
    this.retain([event]);
  }

  /** Takes over everything `other` stands for; `other` should not be used afterwards. */
  merge(other: Digest<E>): void {
    if (other.isEmpty) return;
    this.total += other.total;
    for (const group of other.groupMap.values()) {
      const key = groupKey(group.type, group.resource, group.namespace);
      const mine = this.groupMap.get(key);
      if (mine) mine.count += group.count;
      else this.groupMap.set(key, { ...group });
    }
    if (other.first !== undefined && (this.first === undefined || other.first < this.first))
      this.first = other.first;
    if (other.last !== undefined && (this.last === undefined || other.last > this.last))
      this.last = other.last;
    this.clusterName ??= other.clusterName;
    // Sizes already measured by `other` are not measured again.
    this.retain(other.retained, other.retainedSizes);
  }

  byType(): DigestCounts {
    const counts: DigestCounts = { ADDED: 0, UPDATED: 0, DELETED: 0 };
    for (const group of this.groupMap.values()) counts[group.type] = (counts[group.type] ?? 0) + group.count;
    return counts;
  }

  /** The groups, largest first. */
  groups(): DigestGroup[] {
    return [...this.groupMap.values()].sort(
      (a, b) => b.count - a.count || a.resource.localeCompare(b.resource) || a.type.localeCompare(b.type),
    );
  }

  /** Events per namespace ('' for cluster-scoped objects), largest first. */
  namespaces(): [string, number][] {
    const counts = new Map<string, number>();
    for (const group of this.groupMap.values()) {
      const key = group.namespace ?? '';
      counts.set(key, (counts.get(key) ?? 0) + group.count);
    }
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  }

  /** '30 pods added', '1 deployment updated', … by resource and type, largest first. */
  parts(): string[] {
    const merged = new Map<
      string,
      { type: FilterEventType; resource: string; kind: string; count: number }
    >();
    for (const group of this.groupMap.values()) {
      const key = `${group.type} ${group.resource}`;
      const entry = merged.get(key);
      if (entry) entry.count += group.count;
      else
        merged.set(key, { type: group.type, resource: group.resource, kind: group.kind, count: group.count });
    }
    return [...merged.values()]
      .sort((a, b) => b.count - a.count || a.resource.localeCompare(b.resource))
      .map((entry) => `${groupedCount(entry.count)} ${noun(entry)} ${VERBS[entry.type]}`);
  }

  /** Where the changes happened: 'in shop', 'in shop and web', 'in 4 namespaces', 'to cluster-scoped objects'. */
  where(): string {
    const namespaces = this.namespaces();
    const named = namespaces.filter(([name]) => name !== '').map(([name]) => name);
    const clusterScoped = named.length < namespaces.length;
    if (named.length === 0) return 'to cluster-scoped objects';
    const suffix = clusterScoped ? ' and cluster-wide' : '';
    if (named.length === 1) return `in ${named[0]}${suffix}`;
    if (named.length === 2 && !clusterScoped) return `in ${named[0]} and ${named[1]}`;
    return `in ${named.length} namespaces${suffix}`;
  }

  /** '37 changes in shop: 30 pods added, 5 deployments updated, 2 configmaps deleted'. */
  summary(maxParts = 6): string {
    const parts = this.parts();
    const shown = parts.slice(0, maxParts);
    if (parts.length > maxParts) shown.push(`${parts.length - maxParts} more kinds of change`);
    const changes = this.total === 1 ? 'change' : 'changes';
    return `${groupedCount(this.total)} ${changes} ${this.where()}: ${shown.join(', ')}`;
  }

  toPayload(): DigestPayload<E> {
    const now = isoTimestamp();
    return {
      kind: 'digest',
      id: this.id,
      ...(this.clusterName ? { cluster: this.clusterName } : {}),
      count: this.total,
      from: this.first ?? now,
      to: this.last ?? now,
      summary: this.summary(),
      byType: this.byType(),
      groups: this.groups(),
      events: [...this.retained],
      omitted: this.total - this.retained.length,
    };
  }

  private count1(event: E): void {
    this.total++;
    const resource = qualifiedResource(event);
    const key = groupKey(event.type, resource, event.object.namespace);
    const group = this.groupMap.get(key);
    if (group) group.count++;
    else {
      this.groupMap.set(key, {
        type: event.type,
        resource,
        kind: event.object.kind,
        ...(event.object.namespace !== undefined ? { namespace: event.object.namespace } : {}),
        count: 1,
      });
    }
    if (this.first === undefined || event.time < this.first) this.first = event.time;
    if (this.last === undefined || event.time > this.last) this.last = event.time;
    this.clusterName ??= event.cluster;
  }

  /** `sizes[i]`, when given, is the JSON length of `events[i]`. */
  private retain(events: readonly E[], sizes: readonly number[] = []): void {
    const measure = Number.isFinite(this.retainBytes);
    for (const [i, event] of events.entries()) {
      this.retained.push(event);
      if (measure) {
        const size = sizes[i] ?? eventJsonLength(event);
        this.retainedSizes.push(size);
        this.retainedBytes += size;
      }
      // The newest event is always kept, however large.
      while (
        this.retained.length > this.retainLimit ||
        (this.retained.length > 1 && this.retainedBytes > this.retainBytes)
      ) {
        const evicted = this.retained.shift();
        if (measure) this.retainedBytes -= this.retainedSizes.shift() ?? 0;
        if (evicted) this.onEvict?.(evicted);
      }
    }
  }
}

function groupKey(type: FilterEventType, resource: string, namespace: string | undefined): string {
  return `${type}\u0000${resource}\u0000${namespace ?? ''}`;
}

/** 'pods' for many, 'pod' (the kind) for one: the plural is the resource, the singular is the kind. */
function noun(entry: { resource: string; kind: string; count: number }): string {
  const plural = entry.resource.split('.')[0] ?? entry.resource;
  return entry.count === 1 ? entry.kind.toLowerCase() : plural;
}
