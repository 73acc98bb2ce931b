import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prettyRenderer, readablePath, renderValue } from '../../../src/sinks/core/pretty.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { degradedRollout } from '../../helpers/outcome-fixtures.ts';

describe('pretty output', () => {
  it('renders an OUTCOME: its verdict and when, the summary, the pods that are not well, the Warning Events', () => {
    const { outcome } = degradedRollout('prod-eu');
    assert.equal(
      prettyRenderer({ color: false })({
        ...outcome,
        evidence: { ...outcome.evidence, pods: outcome.evidence.pods.slice(0, 1), note: 'a note' },
      }),
      [
        '10:31:47Z OUTCOME deployments.apps shop/web degraded 40.0s after the change by alice [prod-eu]',
        '  3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)',
        '  • pod web-7d9f8-a: CrashLoopBackOff, 2 restarts, last OOMKilled (exit 137)',
        '  ! Pod/web-7d9f8-a BackOff ×4: Back-off restarting failed container app',
        '  a note',
        '',
      ].join('\n'),
    );
  });

  it('renders a header and one line per change', () => {
    const event = sampleEvent({
      cluster: 'prod-eu',
      changes: [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
        { op: 'add', path: '/metadata/labels/app.kubernetes.io~1name', to: 'web' },
        { op: 'remove', path: '/spec/template/spec/containers/1', from: { name: 'sidecar' } },
      ],
    });
    assert.equal(
      prettyRenderer({ color: false })(event),
      [
        '10:31:07Z UPDATED deployments.apps shop/web [prod-eu]',
        '  ~ spec.replicas: 2 → 5',
        '  + metadata.labels["app.kubernetes.io/name"]: "web"',
        '  - spec.template.spec.containers[1]: {"name":"sidecar"}',
        '',
      ].join('\n'),
    );
  });

  it('says what a ConfigMap change reaches and what a rollout brings, names made printable', () => {
    const render = prettyRenderer({ color: false });
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name: 'app-config',
      uid: 'c1',
      resourceVersion: '9',
    };
    const changed = sampleEvent({
      id: 'c1:9',
      object,
      changes: [{ op: 'replace', path: '/data/APP_MODE', from: 'a', to: 'b' }],
      usedBy: {
        workloads: [
          {
            object: {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              name: 'web\u001b[31m',
              uid: 'd1',
              namespace: 'shop',
            },
            via: [{ type: 'env', key: 'APP_MODE', env: 'APP_MODE', container: 'app' }],
            keys: ['APP_MODE'],
            live: false,
            pods: { total: 3, old: 3 },
          },
        ],
        unreadKeys: ['DEBUG'],
      },
    });
    assert.equal(
      render(changed),
      [
        '10:31:07Z UPDATED configmaps shop/app-config [prod]',
        '  ~ data.APP_MODE: "a" → "b"',
        '  ↳ used by deployment/web\\u001b[31m (env APP_MODE: 3 pods still run the old value)',
        '  ↳ read by nobody: DEBUG',
        '',
      ].join('\n'),
    );
    const rollout = sampleEvent({
      rollsOut: [
        {
          object: { kind: 'ConfigMap', namespace: 'shop', name: 'app-config' },
          id: 'c1:9',
          time: '2026-11-22T10:30:00.000Z',
        },
      ],
    });
    assert.match(render(rollout), /\n {2}↳ rolls out configmap shop\/app-config \(changed 10:30:00Z\)\n$/);
    // Bounded on the terminal: 25 workloads and 50 unread keys named, the rest counted (-o json has them all).
    const crowded = sampleEvent({
      object,
      usedBy: {
        workloads: Array.from({ length: 500 }, (_, n) => ({
          object: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: `w${n}`,
            uid: `d${n}`,
            namespace: 'shop',
          },
          via: [{ type: 'volume' as const, volume: 'cfg', container: 'app' }],
          keys: [],
        })),
        unreadKeys: Array.from({ length: 1000 }, (_, n) => `K${n}`),
      },
    });
    const lines = render(crowded).split('\n');
    const users = lines.find((line) => line.includes('↳ used by')) ?? '';
    assert.equal(users.match(/deployment\/w\d+/g)?.length, 25);
    assert.match(users, /deployment\/w24 \(volume cfg: reads none of the changed keys\) and 475 more$/);
    assert.match(lines.find((line) => line.includes('read by nobody')) ?? '', /K49 and 950 more$/);
  });

  it('names who made the change: by user (tool), the tool from the User-Agent', () => {
    const render = prettyRenderer({ color: false });
    const by = { user: { username: 'alice' }, userAgent: 'kubectl/v1.36.3 (linux/amd64) kubernetes/abc' };
    assert.equal(
      render(sampleEvent({ by: { ...by, auditID: 'a1', match: 'exact' }, changes: [] })),
      '10:31:07Z UPDATED deployments.apps shop/web by alice (kubectl) [prod]\n',
    );
    assert.equal(
      render(
        sampleEvent({
          by: { user: { username: 'bob' }, impersonatedUser: { username: 'carol' } },
          changes: [],
        }),
      ),
      '10:31:07Z UPDATED deployments.apps shop/web by carol via bob [prod]\n',
    );
    assert.equal(
      render(sampleEvent({ by: { user: { username: 'eve\u001b[2J' } }, changes: [] })),
      '10:31:07Z UPDATED deployments.apps shop/web by eve\\u001b[2J [prod]\n',
      'a username is text from the API server: no terminal escapes',
    );
  });

  it('says a change without a write came from its CRD or a relist, not from a time kubediff was not watching', () => {
    const render = prettyRenderer({ color: false });
    const event = (cause: 'schema' | 'relist') =>
      render(
        sampleEvent({
          cluster: undefined,
          object: {
            apiVersion: 'example.com/v1',
            kind: 'Widget',
            resource: 'widgets',
            namespace: 'a',
            name: 'b',
          },
          changes: [{ op: 'add', path: '/spec/shards', to: 1 }],
          offline: true,
          cause,
        }),
      ).split('\n')[0];
    assert.equal(
      event('schema'),
      '10:31:07Z UPDATED widgets.example.com a/b (no write: served differently since its CRD changed)',
    );
    assert.equal(
      event('relist'),
      '10:31:07Z UPDATED widgets.example.com a/b (no write: found changed by a relist)',
    );
  });

  it('marks offline events and elides long values in the middle', () => {
    const text = prettyRenderer({ color: false })(
      sampleEvent({
        type: 'DELETED',
        cluster: undefined,
        object: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'a', name: 'b' },
        changes: undefined,
        offline: true,
        finalStateUnknown: true,
      }),
    );
    assert.equal(text, '10:31:07Z DELETED configmaps a/b (while not watching, final state unknown)\n');
    const long = renderValue('x'.repeat(500), 21);
    assert.equal(long.length, 21);
    assert.ok(long.includes('…'));
    assert.equal(renderValue('line1\nline2\nline3', 100), '"line1" (+2 more lines)');
    assert.equal(readablePath(''), '(whole object)');
  });

  it('says who made it, and the manager of each change when the changes come from several', () => {
    const render = prettyRenderer({ color: false });
    const one = sampleEvent({
      by: { managers: [{ manager: 'kubectl-set', operation: 'Update' }] },
      changes: [{ op: 'replace', path: '/spec/replicas', from: 2, to: 5, manager: 'kubectl-set' }],
    });
    assert.equal(
      render(one),
      '10:31:07Z UPDATED deployments.apps shop/web by kubectl-set [prod]\n  ~ spec.replicas: 2 → 5\n',
    );
    const several = sampleEvent({
      cluster: undefined,
      by: {
        managers: [
          { manager: 'kubectl', operation: 'Update', subresource: 'scale' },
          { manager: 'kubectl-set', operation: 'Update' },
        ],
      },
      changes: [
        { op: 'replace', path: '/spec/replicas', from: 2, to: 5, manager: 'kubectl' },
        {
          op: 'replace',
          path: '/spec/template/spec/containers/0/image',
          from: 'a',
          to: 'b',
          manager: 'kubectl-set',
        },
      ],
    });
    assert.equal(
      render(several),
      [
        '10:31:07Z UPDATED deployments.apps shop/web by kubectl, kubectl-set',
        '  ~ spec.replicas: 2 → 5 (kubectl)',
        '  ~ spec.template.spec.containers[0].image: "a" → "b" (kubectl-set)',
        '',
      ].join('\n'),
    );
    const withUser = sampleEvent({
      by: { user: { username: 'alice' }, managers: [{ manager: 'kubectl-set', operation: 'Update' }] },
    });
    assert.match(render(withUser), /shop\/web by alice \(kubectl-set\) \[prod\]/);
  });
});
