import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiscoveredResource } from '../../../src/kube/discovery.ts';
import {
  parseResourceName,
  resolveResourceName,
  suggestResourceName,
} from '../../../src/kube/resource-names.ts';
import { selectResources } from '../../../src/kube/selection.ts';
import { qualifiedName } from '../../../src/kube/types.ts';

function type(partial: Partial<DiscoveredResource> & { resource: string; kind: string }): DiscoveredResource {
  return {
    group: '',
    version: 'v1',
    namespaced: true,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    shortNames: [],
    singularName: partial.kind.toLowerCase(),
    categories: [],
    stale: false,
    ...partial,
  };
}

const catalog: DiscoveredResource[] = [
  type({ resource: 'pods', kind: 'Pod', shortNames: ['po'] }),
  type({ resource: 'configmaps', kind: 'ConfigMap', shortNames: ['cm'] }),
  type({ resource: 'events', kind: 'Event', shortNames: ['ev'] }),
  type({ resource: 'endpoints', kind: 'Endpoints', shortNames: ['ep'] }),
  type({ resource: 'namespaces', kind: 'Namespace', namespaced: false, shortNames: ['ns'] }),
  type({ resource: 'bindings', kind: 'Binding', verbs: ['create'] }),
  type({ group: 'apps', resource: 'deployments', kind: 'Deployment', shortNames: ['deploy'] }),
  type({ group: 'events.k8s.io', resource: 'events', kind: 'Event', shortNames: ['ev'] }),
  type({ group: 'coordination.k8s.io', resource: 'leases', kind: 'Lease' }),
  type({ group: 'example.com', resource: 'widgets', kind: 'Widget', shortNames: ['wd'] }),
  type({ group: 'metrics.k8s.io', resource: 'podmetrics', kind: 'PodMetrics', stale: true }),
];

function names(types: DiscoveredResource[]): string[] {
  return types.map(qualifiedName).sort();
}

describe('resource names as kubectl resolves them', () => {
  const resolve = (text: string) => names(resolveResourceName(parseResourceName(text), catalog));

  it('accepts plural, singular, short name and kind', () => {
    for (const text of [
      'deployments',
      'deployment',
      'deploy',
      'Deployment',
      'deployments.apps',
      'deployments.v1.apps',
    ]) {
      assert.deepEqual(resolve(text), ['deployments.apps'], text);
    }
    assert.deepEqual(resolve('po'), ['pods']);
    assert.deepEqual(resolve('widgets.example.com'), ['widgets.example.com']);
  });

  it('prefers the core group for a name two groups share, and honours an explicit group', () => {
    assert.deepEqual(resolve('events'), ['events']);
    assert.deepEqual(resolve('ev'), ['events']);
    assert.deepEqual(resolve('events.events.k8s.io'), ['events.events.k8s.io']);
  });

  it('resolves nothing for unknown names and suggests a close one', () => {
    assert.deepEqual(resolve('deploymnets'), []);
    assert.equal(suggestResourceName('deploymnets', catalog), 'deployments.apps');
    assert.equal(suggestResourceName('zzz', catalog), undefined);
  });
});

describe('which resource types are watched', () => {
  it('by default: everything listable and watchable except high-churn, stale and duplicate types', () => {
    const selection = selectResources(catalog, { include: [], exclude: [], namespaceScoped: false });
    assert.deepEqual(names(selection.watched), [
      'configmaps',
      'deployments.apps',
      'namespaces',
      'pods',
      'widgets.example.com',
    ]);
    const reasons = Object.fromEntries(
      selection.skipped.map((skipped) => [qualifiedName(skipped.type), skipped.reason]),
    );
    assert.deepEqual(reasons, {
      bindings: 'no list/watch verbs',
      events: 'excluded by default (high churn)',
      endpoints: 'excluded by default (high churn)',
      'events.events.k8s.io': 'excluded by default (high churn)',
      'leases.coordination.k8s.io': 'excluded by default (high churn)',
      'podmetrics.metrics.k8s.io': 'stale (aggregated API unavailable)',
    });
  });

  it('watches a high-churn type when named, and both event APIs at most once', () => {
    const selection = selectResources(catalog, {
      include: ['events', 'events.events.k8s.io', 'pods'].map(parseResourceName),
      exclude: [],
      namespaceScoped: false,
    });
    assert.deepEqual(names(selection.watched), ['events', 'pods']);
    assert.ok(
      selection.skipped.some(
        (skipped) =>
          qualifiedName(skipped.type) === 'events.events.k8s.io' &&
          skipped.reason === 'same objects as events',
      ),
    );
  });

  it('excludes by flag, skips cluster-scoped types with --namespace unless named, and lists unresolved names', () => {
    const selection = selectResources(catalog, {
      include: [],
      exclude: [parseResourceName('cm')],
      namespaceScoped: true,
    });
    assert.deepEqual(names(selection.watched), ['deployments.apps', 'pods', 'widgets.example.com']);
    const named = selectResources(catalog, {
      include: ['ns', 'gadgets.example.com'].map(parseResourceName),
      exclude: [],
      namespaceScoped: true,
    });
    assert.deepEqual(names(named.watched), ['namespaces']);
    assert.deepEqual(
      named.unresolved.map((name) => name.text),
      ['gadgets.example.com'],
    );
  });
});
