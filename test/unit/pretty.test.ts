import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent } from '../../src/diff/types.ts';
import { prettyRenderer, readablePath, renderValue } from '../../src/sinks/pretty.ts';

describe('pretty output', () => {
  it('renders a header and one line per change', () => {
    const event: ChangeEvent = {
      id: 'u:2',
      type: 'UPDATED',
      time: '2026-11-22T10:31:07.412Z',
      cluster: 'prod-eu',
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        resource: 'deployments',
        namespace: 'shop',
        name: 'web',
        uid: 'u',
        resourceVersion: '2',
      },
      changes: [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
        { op: 'add', path: '/metadata/labels/app.kubernetes.io~1name', to: 'web' },
        { op: 'remove', path: '/spec/template/spec/containers/1', from: { name: 'sidecar' } },
      ],
    };
    assert.equal(
      prettyRenderer({ color: false })(event),
      [
        '10:31:07 UPDATED deployments.apps shop/web [prod-eu]',
        '  ~ spec.replicas: 2 → 5',
        '  + metadata.labels["app.kubernetes.io/name"]: "web"',
        '  - spec.template.spec.containers[1]: {"name":"sidecar"}',
        '',
      ].join('\n'),
    );
  });

  it('marks offline events and elides long values in the middle', () => {
    const text = prettyRenderer({ color: false })({
      id: 'u:9',
      type: 'DELETED',
      time: '2026-11-22T10:31:07.412Z',
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        resource: 'configmaps',
        namespace: 'a',
        name: 'b',
        uid: 'u',
        resourceVersion: '9',
      },
      offline: true,
      finalStateUnknown: true,
    });
    assert.equal(text, '10:31:07 DELETED configmaps a/b (while not watching, final state unknown)\n');
    const long = renderValue('x'.repeat(500), 21);
    assert.equal(long.length, 21);
    assert.ok(long.includes('…'));
    assert.equal(renderValue('line1\nline2\nline3', 100), '"line1" (+2 more lines)');
    assert.equal(readablePath(''), '(whole object)');
  });
});
