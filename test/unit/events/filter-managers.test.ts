// Filters on field managers: `managers`/`excludeManagers` in a filter, `managers` on path rules, and the
// reasons --explain prints for them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Change } from '../../../src/diff/types.ts';
import { compileFilter } from '../../../src/events/filter.ts';
import { sampleEvent } from '../../helpers/events.ts';

const byManager = (manager: string, changes: Change[]) =>
  sampleEvent({
    by: { managers: [{ manager, operation: 'Update' }] },
    changes: changes.map((change) => ({ ...change, manager: change.manager ?? manager })),
  });
const replicas = (manager: string) =>
  byManager(manager, [{ op: 'replace', path: '/spec/replicas', from: 2, to: 5 }]);

describe('filters on field managers', () => {
  it('an ignore rule with managers drops the autoscaler-style change and keeps a person’s', () => {
    const filter = compileFilter({
      ignore: [{ path: '/spec/replicas', managers: ['horizontal-pod-autoscaler', 'kube-controller-*'] }],
    });
    const auto = filter.evaluate(replicas('kube-controller-manager'));
    assert.deepEqual(auto, {
      deliver: false,
      rule: 'ignore',
      reason: 'every change is ignored (/spec/replicas by horizontal-pod-autoscaler, kube-controller-*)',
    });
    assert.equal(filter.evaluate(replicas('kubectl')).deliver, true);
    // Unknown manager: the rule does not apply (reported rather than guessed away).
    assert.equal(filter.evaluate(sampleEvent()).deliver, true);
  });

  it('excludeManagers removes that manager’s changes, drops an UPDATED left empty and an ADDED it created', () => {
    const filter = compileFilter({ excludeManagers: ['argocd-*'] });
    const mixed = sampleEvent({
      by: {
        managers: [
          { manager: 'argocd-controller', operation: 'Apply' },
          { manager: 'kubectl', operation: 'Update' },
        ],
      },
      changes: [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 5, manager: 'kubectl' },
        { op: 'replace', path: '/spec/paused', from: false, to: true, manager: 'argocd-controller' },
      ],
    });
    const verdict = filter.evaluate(mixed);
    assert.equal(verdict.deliver, true);
    assert.deepEqual(verdict.deliver ? verdict.event?.changes : undefined, [
      { op: 'replace', path: '/spec/replicas', from: 2, to: 5, manager: 'kubectl' },
    ]);
    assert.deepEqual(filter.evaluate(replicas('argocd-controller')), {
      deliver: false,
      rule: 'excludeManagers',
      reason: 'every change is made by an excluded manager (argocd-controller; excluded [argocd-*])',
    });
    const added = sampleEvent({
      type: 'ADDED',
      changes: undefined,
      by: { managers: [{ manager: 'argocd-controller', operation: 'Apply' }] },
    });
    assert.equal(filter.evaluate(added).deliver, false);
    // No manager named: nothing to exclude.
    assert.equal(filter.evaluate(sampleEvent({ type: 'DELETED', changes: undefined })).deliver, true);
  });

  it('managers keeps only events by those managers; an event naming none does not match', () => {
    const filter = compileFilter({ managers: ['kubectl*'] });
    const kept = filter.evaluate(replicas('kubectl-scale'));
    assert.deepEqual(kept, { deliver: true, reason: 'manager kubectl-scale (kubectl*)' });
    assert.deepEqual(filter.evaluate(replicas('helm')), {
      deliver: false,
      rule: 'managers',
      reason: 'made by helm, not by [kubectl*]',
    });
    assert.equal(filter.evaluate(sampleEvent({ type: 'DELETED', changes: undefined })).deliver, false);
  });

  it('an only rule with managers keeps an UPDATED when that path was changed by one of them', () => {
    const filter = compileFilter({ only: [{ path: '/spec/replicas', managers: ['kubectl'] }] });
    assert.equal(filter.evaluate(replicas('kubectl')).deliver, true);
    assert.equal(filter.evaluate(replicas('hpa')).deliver, false);
  });

  it('rejects a manager pattern that cannot be a name', () => {
    assert.throws(() => compileFilter({ managers: [' '] }), /is not a field manager name/);
    assert.throws(() => compileFilter({ excludeManagers: ['x'.repeat(129)] }), /at most 128 characters/);
  });
});
