// How the page writes one object's history (src/ui/web/object-view.ts): a change as `path: from → to`
// with its manager, a value cut to fit, who made the change, and the diff of two versions laid out
// unified and side by side (src/ui/web/diff-view.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectYaml } from '../../../src/diff/object-yaml.ts';
import { unifiedDiff } from '../../../src/diff/unified-diff.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { parseUnified, splitRows } from '../../../src/ui/web/diff-view.ts';
import { changeText, valueText, whoText } from '../../../src/ui/web/object-view.ts';

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

describe('the diff of two versions, laid out', () => {
  // The lines the server sends: objectYaml and unifiedDiff, as `kubediff diff` prints them.
  const before = objectYaml({
    kind: 'Deployment',
    spec: { replicas: 2, paused: false, strategy: 'RollingUpdate' },
  });
  const after = objectYaml({ kind: 'Deployment', spec: { replicas: 5, strategy: 'RollingUpdate' } });
  const lines = unifiedDiff(
    { label: 'deployments.apps/shop/web', header: '#1', text: before },
    { label: 'deployments.apps/shop/web', header: '#2', text: after },
    { color: false, terminal: false },
  );

  it('unified: each line with its kind and its numbers in A and B', () => {
    assert.deepEqual(parseUnified(lines), [
      { kind: 'file', text: '--- deployments.apps/shop/web\t#1' },
      { kind: 'file', text: '+++ deployments.apps/shop/web\t#2' },
      { kind: 'hunk', text: '@@ -1,5 +1,4 @@' },
      { kind: 'context', text: 'kind: Deployment', a: 1, b: 1 },
      { kind: 'context', text: 'spec:', a: 2, b: 2 },
      { kind: 'removed', text: '  paused: false', a: 3 },
      { kind: 'removed', text: '  replicas: 2', a: 4 },
      { kind: 'added', text: '  replicas: 5', b: 3 },
      { kind: 'context', text: '  strategy: RollingUpdate', a: 5, b: 4 },
    ]);
  });

  it('side by side: a run of removed lines beside the added run after it, context on both sides', () => {
    const rows = splitRows(parseUnified(lines)).map((row) =>
      row.hunk ? row.hunk : [row.left?.text ?? '', row.right?.text ?? ''],
    );
    assert.deepEqual(rows, [
      '@@ -1,5 +1,4 @@',
      ['kind: Deployment', 'kind: Deployment'],
      ['spec:', 'spec:'],
      ['  paused: false', '  replicas: 5'],
      ['  replicas: 2', ''],
      ['  strategy: RollingUpdate', '  strategy: RollingUpdate'],
    ]);
  });

  it('an added line after context starts a row of its own, with nothing on the left', () => {
    const rows = splitRows(parseUnified(['@@ -1 +1,2 @@', ' a', '+b']));
    assert.deepEqual(
      rows.map((row) => [row.left?.kind, row.right?.kind]),
      [
        [undefined, undefined],
        ['context', 'context'],
        [undefined, 'added'],
      ],
    );
  });
});
