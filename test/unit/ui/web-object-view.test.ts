// How the page writes one object's history (src/ui/web/object-view.ts): a change as `path: from → to`
// with its manager, a value cut to fit, who made the change, and the lines two versions share.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { changeText, commonLines, valueText, whoText } from '../../../src/ui/web/object-view.ts';

function event(by?: ChangeEvent['by']): ChangeEvent {
  return {
    id: 'u1:2',
    type: 'UPDATED',
    time: '2026-03-04T10:00:00.000Z',
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      resource: 'deployments',
      namespace: 'shop',
      name: 'web',
      uid: 'u1',
      resourceVersion: '2',
    },
    ...(by ? { by } : {}),
  };
}

describe('a change', () => {
  it('replaced, added and removed, with the manager that made it when known', () => {
    assert.equal(
      changeText({ op: 'replace', path: '/spec/replicas', from: 1, to: 3, manager: 'kubectl-scale' }),
      '/spec/replicas: 1 → 3  (kubectl-scale)',
    );
    assert.equal(changeText({ op: 'add', path: '/data/color', to: 'blue' }), '/data/color: ∅ → "blue"');
    assert.equal(
      changeText({ op: 'remove', path: '/metadata/labels/tier', from: 'web' }),
      '/metadata/labels/tier: "web" → ∅',
    );
  });

  it('values as JSON, cut at 160 characters', () => {
    assert.equal(valueText(undefined), '∅');
    assert.equal(valueText(null), 'null');
    assert.equal(valueText({ a: [1, 'x'] }), '{"a":[1,"x"]}');
    const long = valueText('x'.repeat(200));
    assert.equal(long, `"${'x'.repeat(158)}…`);
    assert.equal(long.length, 160);
    assert.equal(valueText('y'.repeat(158)), `"${'y'.repeat(158)}"`, '160 characters fit');
  });
});

describe('who made it', () => {
  it('the user and the field managers (each once), either alone, or nobody', () => {
    const managers = [
      { manager: 'kubectl-edit', operation: 'Update' },
      { manager: 'helm', operation: 'Apply' },
      { manager: 'kubectl-edit', operation: 'Update', subresource: 'status' },
    ];
    assert.equal(whoText(event({ user: { username: 'alice' }, managers })), 'by alice (kubectl-edit, helm)');
    assert.equal(whoText(event({ managers })), 'by kubectl-edit, helm');
    assert.equal(whoText(event({ user: { username: 'alice' } })), 'by alice');
    assert.equal(whoText(event({ managers: [] })), undefined);
    assert.equal(whoText(event()), undefined);
  });
});

describe('the lines two versions share', () => {
  const shared = (left: string[], right: string[]) =>
    commonLines(left, right).map((lines) => [...lines].sort((a, b) => a - b));

  it('a line changed, one added, one removed: the others kept on both sides, by index', () => {
    assert.deepEqual(shared(['a', 'b', 'c'], ['a', 'x', 'c']), [
      [0, 2],
      [0, 2],
    ]);
    assert.deepEqual(shared(['a', 'c'], ['a', 'b', 'c']), [
      [0, 1],
      [0, 2],
    ]);
    assert.deepEqual(shared(['a', 'b', 'c'], ['b', 'c']), [
      [1, 2],
      [0, 1],
    ]);
  });

  it('nothing shared, an empty side, and beyond 4,000,000 line pairs: nothing kept', () => {
    assert.deepEqual(shared(['a'], ['b']), [[], []]);
    assert.deepEqual(shared([], ['a']), [[], []]);
    const many = Array.from({ length: 2_001 }, (_, index) => `line ${index}`);
    assert.deepEqual(shared(many, many), [[], []]);
    assert.equal(commonLines(many.slice(0, 2_000), many.slice(0, 2_000))[0].size, 2_000);
  });
});
