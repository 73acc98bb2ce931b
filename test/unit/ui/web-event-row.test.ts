// What a row of the events table says (src/ui/web/event-row.ts): the first changes as `path: from → to`
// and how many more, and who: the user when known, else the field manager.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  byText,
  changesText,
  outcomeText,
  summaryChangeText,
  worstVerdict,
} from '../../../src/ui/web/event-row.ts';

describe('an events table row', () => {
  it('says what changed: the first changes, then how many more', () => {
    const first = [
      { path: '/spec/template/spec/containers/0/image', from: '"shop:1.4"', to: '"shop:1.5"' },
      { path: '/spec/replicas', from: '2', to: '5' },
    ];
    assert.equal(
      changesText({ type: 'UPDATED', changes: 2, first }),
      '/spec/template/spec/containers/0/image: "shop:1.4" → "shop:1.5"; /spec/replicas: 2 → 5',
    );
    assert.equal(changesText({ type: 'UPDATED', changes: 5, first }).split('; ').at(-1), '+3 more');
  });

  it('an added or removed field as ∅ on its missing side; nothing for ADDED and DELETED', () => {
    assert.equal(summaryChangeText({ path: '/data/mode', to: '"b"' }), '/data/mode: ∅ → "b"');
    assert.equal(summaryChangeText({ path: '/data/mode', from: '"a"' }), '/data/mode: "a" → ∅');
    assert.equal(changesText({ type: 'ADDED', changes: 0 }), '');
    assert.equal(changesText({ type: 'UPDATED', changes: 3 }), '3 changes');
  });

  it('by: the user when known, else the manager', () => {
    assert.equal(byText({ user: 'alice@example.com', manager: 'kubectl-edit' }), 'alice@example.com');
    assert.equal(byText({ manager: 'kubectl-edit' }), 'kubectl-edit');
    assert.equal(byText({}), '');
  });

  it('the outcome of the rollout it started, worded: verdict first, then its summary; the worst of a story', () => {
    assert.equal(outcomeText({}), '');
    assert.equal(
      outcomeText({ outcome: { verdict: 'degraded', summary: '3/3 pods CrashLoopBackOff' } }),
      'degraded: 3/3 pods CrashLoopBackOff',
    );
    assert.equal(outcomeText({ outcome: { verdict: 'healthy', summary: '' } }), 'healthy');
    const healthy = { outcome: { verdict: 'healthy' as const, summary: '' } };
    const failed = { outcome: { verdict: 'failed' as const, summary: '' } };
    assert.equal(worstVerdict([{}, healthy]), 'healthy');
    assert.equal(worstVerdict([healthy, failed, {}]), 'failed');
    assert.equal(worstVerdict([{}]), undefined);
  });
});
