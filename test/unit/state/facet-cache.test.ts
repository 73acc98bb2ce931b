// src/state/facet-cache.ts: the facets of a history computed once and shared, not one scan per request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FacetCache, type FacetSource } from '../../../src/state/facet-cache.ts';

/** A history of one event whose full scans are counted, and held until `release()`. */
function countingSource() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const source: FacetSource & { scans: number } = {
    scans: 0,
    latestSeq: async () => 1,
    distinct: async () => {
      source.scans++;
      await held;
      return { namespaces: ['shop'], resources: ['configmaps'], clusters: [] };
    },
    span: async () => ({ first: '2026-11-27T10:00:00.000Z', last: '2026-11-27T10:00:00.000Z', low: 1 }),
    kinds: async () => new Map([['configmaps', 'ConfigMap']]),
    kindFromHistory: async () => 'ConfigMap',
  };
  return { source, release };
}

describe('facet cache', () => {
  it('requests that come while the facets are computed share that one scan', async () => {
    const { source, release } = countingSource();
    const cache = new FacetCache(() => 0);
    const answers = Array.from({ length: 8 }, () => cache.facets(source));
    release();
    const facets = await Promise.all(answers);
    assert.equal(source.scans, 1);
    for (const answer of facets) assert.deepEqual(answer.namespaces, ['shop']);
    // Computed: the next request is answered from the cache, without a scan.
    await cache.facets(source);
    assert.equal(source.scans, 1);
  });
});
