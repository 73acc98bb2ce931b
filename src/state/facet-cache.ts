// The facets of a history (the values its filters offer: namespaces, resources with their kind,
// clusters, the time span), for either store's TimelineReader: what a store must answer (FacetSource),
// and the cache that keeps them current without a full scan per page.
import { CLUSTER_SCOPED, type Facets } from './timeline-reader.ts';

const FACET_REFRESH_MS = 10 * 60_000;
const FACET_INCREMENT_MAX = 100_000;

/** What a store tells the facet cache. `after`: only the events after that seq (undefined: all). */
export interface FacetSource {
  latestSeq(): Promise<number>;
  distinct(after: number | undefined): Promise<{
    namespaces: (string | null)[];
    resources: string[];
    clusters: string[];
  }>;
  /** The oldest and newest time, and the oldest seq. */
  span(): Promise<{ first: string | null; last: string | null; low: number | null }>;
  /** Each recorded resource's kind, from the stored discovery. */
  kinds(): Promise<Map<string, string>>;
  /** The kind of a resource no longer discovered, from one of its events. */
  kindFromHistory(resource: string): Promise<string>;
}

/**
 * The facets of a history, computed once (distinct values cost a scan of an index, long on a large
 * history: BENCHMARKS.md, section 10, "facets" first and median), then kept current from the events
 * added since, which are few; recomputed in full every
 * FACET_REFRESH_MS (so values whose events retention removed disappear) or when many events were added
 * at once. One computation at a time: requests that come while one runs share its answer. One cache for
 * every store.
 */
export class FacetCache {
  private readonly now: () => number;
  private cached: { at: number; seq: number; facets: Facets } | undefined;
  /** The computation running now: requests that come meanwhile share it rather than scan again. */
  private running: Promise<Facets> | undefined;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  facets(source: FacetSource): Promise<Facets> {
    this.running ??= this.compute(source).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async compute(source: FacetSource): Promise<Facets> {
    const seq = await source.latestSeq();
    const cached = this.cached;
    const age = cached ? this.now() - cached.at : Number.POSITIVE_INFINITY;
    if (cached && cached.seq === seq && age < FACET_REFRESH_MS) return cached.facets;
    const incremental =
      cached !== undefined && age < FACET_REFRESH_MS && seq - cached.seq <= FACET_INCREMENT_MAX;
    const found = await source.distinct(incremental ? cached.seq : undefined);
    const namespaces = new Set(incremental ? cached.facets.namespaces : []);
    for (const namespace of found.namespaces) namespaces.add(namespace ?? CLUSTER_SCOPED);
    const resources = new Set(incremental ? cached.facets.resources.map((entry) => entry.resource) : []);
    for (const resource of found.resources) resources.add(resource);
    const clusters = new Set(incremental ? cached.facets.clusters : []);
    for (const cluster of found.clusters) clusters.add(cluster);
    const kinds = await source.kinds();
    const known = new Map(
      incremental ? cached.facets.resources.map((entry) => [entry.resource, entry.kind]) : [],
    );
    const span = await source.span();
    const resourceKinds: Facets['resources'] = [];
    for (const resource of [...resources].sort()) {
      const kind = kinds.get(resource) ?? known.get(resource) ?? (await source.kindFromHistory(resource));
      resourceKinds.push({ resource, kind });
    }
    const facets: Facets = {
      count: span.low ? seq - span.low + 1 : 0,
      latestSeq: seq,
      namespaces: [...namespaces].sort(),
      resources: resourceKinds,
      clusters: [...clusters].sort(),
    };
    if (span.first) facets.first = span.first;
    if (span.last) facets.last = span.last;
    this.cached = { at: incremental ? cached.at : this.now(), seq, facets };
    return facets;
  }
}
