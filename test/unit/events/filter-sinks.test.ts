import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { compileFilter } from '../../../src/events/filter.ts';
import { sampleEvent } from '../../helpers/events.ts';

const event = sampleEvent;

describe('sink filter', () => {
  it('accepts everything when empty, and says so', () => {
    const filter = compileFilter({});
    assert.equal(filter.acceptsAll, true);
    assert.deepEqual(filter.evaluate(event()), { deliver: true, reason: 'the sink has no filter' });
  });

  it('filters by who made the change (globs; the impersonated user counts too)', () => {
    const by = (username: string, impersonated?: string): Partial<ChangeEvent> => ({
      by: { user: { username }, ...(impersonated ? { impersonatedUser: { username: impersonated } } : {}) },
    });
    const only = compileFilter({ users: ['alice', 'system:serviceaccount:ci:*'] });
    assert.equal(only.evaluate(event(by('alice'))).deliver, true);
    assert.equal(only.evaluate(event(by('system:serviceaccount:ci:deployer'))).deliver, true);
    assert.equal(only.evaluate(event(by('admin', 'alice'))).deliver, true);
    assert.deepEqual(only.evaluate(event()), {
      deliver: false,
      rule: 'users',
      reason: 'who made it is not known and the filter lists users [alice, system:serviceaccount:ci:*]',
    });
    const muted = compileFilter({ excludeUsers: ['system:serviceaccount:argocd:*'] });
    assert.deepEqual(muted.evaluate(event(by('system:serviceaccount:argocd:app'))), {
      deliver: false,
      rule: 'excludeUsers',
      reason: 'user system:serviceaccount:argocd:app is excluded (system:serviceaccount:argocd:*)',
    });
    assert.equal(muted.evaluate(event()).deliver, true, 'an unknown user is not excluded');
    assert.equal(muted.evaluate(event(by('alice'))).deliver, true);
    assert.throws(() => compileFilter({ users: [' '] }), /not a username/);
  });

  it('filters by namespace, with the reason', () => {
    const filter = compileFilter({ namespaces: ['shop', 'web'] });
    assert.equal(filter.evaluate(event()).deliver, true);
    const verdict = filter.evaluate(event({ object: { namespace: 'kube-system' } }));
    assert.deepEqual(verdict, {
      deliver: false,
      rule: 'namespaces',
      reason: 'namespace kube-system is not in [shop, web]',
    });
  });

  it('drops cluster-scoped objects under a namespace filter, except a listed Namespace itself', () => {
    const filter = compileFilter({ namespaces: ['shop'] });
    const node = event({
      object: { apiVersion: 'v1', kind: 'Node', resource: 'nodes', namespace: undefined },
    });
    delete node.object.namespace;
    const verdict = filter.evaluate(node);
    assert.equal(verdict.deliver, false);
    assert.match(verdict.reason, /Node web is cluster-scoped/);
    const namespace = event({
      type: 'DELETED',
      object: { apiVersion: 'v1', kind: 'Namespace', resource: 'namespaces', name: 'shop' },
    });
    delete namespace.object.namespace;
    assert.equal(filter.evaluate(namespace).deliver, true);
  });

  it('matches resources by plural, kind, group and version, like kubectl names them', () => {
    const deployment = event();
    const configmap = event({ object: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps' } });
    const cases: [string, ChangeEvent, boolean][] = [
      ['deployments', deployment, true],
      ['Deployment', deployment, true],
      ['deployment', deployment, true],
      ['deployments.apps', deployment, true],
      ['deployments.v1.apps', deployment, true],
      ['deployments.v2.apps', deployment, false],
      ['deployments.extensions', deployment, false],
      ['configmaps', configmap, true],
      ['configmaps.core', configmap, true],
      ['configmaps.apps', configmap, false],
      ['pods', configmap, false],
    ];
    for (const [name, subject, expected] of cases) {
      assert.equal(compileFilter({ resources: [name] }).evaluate(subject).deliver, expected, name);
    }
    assert.match(
      compileFilter({ resources: ['pods', 'secrets'] }).evaluate(deployment).reason,
      /deployments\.apps is not one of pods, secrets/,
    );
  });

  it('filters by event type', () => {
    const filter = compileFilter({ types: ['ADDED', 'DELETED'] });
    const verdict = filter.evaluate(event());
    assert.equal(verdict.deliver, false);
    assert.equal(verdict.deliver === false && verdict.rule, 'types');
    assert.equal(filter.evaluate(event({ type: 'ADDED', changes: undefined })).deliver, true);
  });

  it('passes an UPDATED only when a change is at, under or above a path prefix', () => {
    const filter = compileFilter({ only: ['/spec/template/spec/containers/*/image', '/metadata/labels'] });
    const image = event({
      changes: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'a', to: 'b' }],
    });
    const wholeContainer = event({
      changes: [{ op: 'add', path: '/spec/template/spec/containers/1', to: { name: 'x', image: 'y' } }],
    });
    const label = event({ changes: [{ op: 'add', path: '/metadata/labels/tier', to: 'web' }] });
    const labelsLookAlike = event({ changes: [{ op: 'add', path: '/metadata/labelsX', to: 'web' }] });
    const replicas = event();
    assert.equal(filter.evaluate(image).deliver, true);
    assert.equal(filter.evaluate(wholeContainer).deliver, true);
    assert.equal(filter.evaluate(label).deliver, true);
    assert.equal(filter.evaluate(labelsLookAlike).deliver, false);
    const verdict = filter.evaluate(replicas);
    assert.equal(verdict.deliver, false);
    assert.equal(verdict.deliver === false && verdict.rule, 'only');
    assert.match(
      filter.evaluate(image).reason,
      /change at \/spec\/template\/spec\/containers\/0\/image matches/,
    );
    // ADDED and DELETED carry no changes: a path filter does not concern them.
    assert.equal(filter.evaluate(event({ type: 'DELETED', changes: undefined })).deliver, true);
  });

  it('combines rules: every one must accept, the first refusal is the reason', () => {
    const filter = compileFilter({ namespaces: ['shop'], resources: ['configmaps'], types: ['UPDATED'] });
    const verdict = filter.evaluate(event());
    assert.equal(verdict.deliver === false && verdict.rule, 'resources');
    const ok = filter.evaluate(
      event({ object: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps' } }),
    );
    assert.deepEqual(ok, { deliver: true, reason: 'type UPDATED; namespace shop; resource configmaps' });
  });

  it('rejects malformed entries with one sentence', () => {
    assert.throws(() => compileFilter({ only: ['spec/replicas'] }), /must start with "\/"/);
    assert.throws(() => compileFilter({ only: [''] }), /whole object/);
    assert.throws(() => compileFilter({ resources: ['deploy ments'] }), /not a resource name/);
  });
});
