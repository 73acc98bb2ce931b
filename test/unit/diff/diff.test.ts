import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffObjects } from '../../../src/diff/diff.ts';
import type { JsonObject, JsonValue } from '../../../src/kube/types.ts';

type Container = { name: string; image: string; [key: string]: JsonValue };

function podTemplate(containers: Container[]): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { replicas: 2, template: { spec: { containers } } },
  };
}

const web: Container = { name: 'web', image: 'shop:1.4' };
const sidecar: Container = { name: 'proxy', image: 'envoy:1.30' };
const init: Container = { name: 'istio-init', image: 'istio:1.2' };

/** A deep copy to edit, so the two sides share no references (as two API responses would not). */
function copy<T extends JsonValue>(value: T): T {
  return structuredClone(value);
}

describe('diffObjects: objects', () => {
  it('reports a scalar change as one replace', () => {
    const old = podTemplate([web]);
    const updated = copy(old);
    (updated.spec as JsonObject).replicas = 5;
    assert.deepEqual(diffObjects(old, updated), [{ op: 'replace', path: '/spec/replicas', from: 2, to: 5 }]);
  });

  it('reports added, changed and removed labels and annotations with escaped keys', () => {
    const old: JsonObject = {
      metadata: {
        labels: { 'app.kubernetes.io/name': 'web', tier: 'front' },
        annotations: { 'example.com/owner': 'team-a', 'odd~key': 'x' },
      },
    };
    const updated: JsonObject = {
      metadata: {
        labels: { 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/version': '1.5' },
        annotations: { 'example.com/owner': 'team-b', 'odd~key': 'x', 'new~/key': 'y' },
      },
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/metadata/labels/app.kubernetes.io~1version', to: '1.5' },
      { op: 'remove', path: '/metadata/labels/tier', from: 'front' },
      { op: 'replace', path: '/metadata/annotations/example.com~1owner', from: 'team-a', to: 'team-b' },
      { op: 'add', path: '/metadata/annotations/new~0~1key', to: 'y' },
    ]);
  });

  it('adds and removes whole subtrees in one change', () => {
    const old: JsonObject = { metadata: { name: 'a', labels: { x: '1' } } };
    const updated: JsonObject = { metadata: { name: 'a', annotations: { y: '2' } } };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/metadata/annotations', to: { y: '2' } },
      { op: 'remove', path: '/metadata/labels', from: { x: '1' } },
    ]);
  });

  it('reports a type change as one replace', () => {
    const old: JsonObject = { spec: { value: { nested: 1 }, list: [1, 2], flag: 'true', gone: null } };
    const updated: JsonObject = { spec: { value: 'flat', list: { a: 1 }, flag: true, gone: 0 } };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'replace', path: '/spec/value', from: { nested: 1 }, to: 'flat' },
      { op: 'replace', path: '/spec/list', from: [1, 2], to: { a: 1 } },
      { op: 'replace', path: '/spec/flag', from: 'true', to: true },
      { op: 'replace', path: '/spec/gone', from: null, to: 0 },
    ]);
  });

  it('orders changes depth-first in the new key order, removed keys last', () => {
    const old: JsonObject = { a: 1, z: { y: 1, x: 1 }, gone: 1, b: 1 };
    const updated: JsonObject = { b: 2, z: { x: 2, y: 2 }, a: 2, added: 1 };
    assert.deepEqual(
      diffObjects(old, updated).map((change) => `${change.op} ${change.path}`),
      ['replace /b', 'replace /z/x', 'replace /z/y', 'replace /a', 'add /added', 'remove /gone'],
    );
  });

  it('replaces long strings whole, never as a text patch', () => {
    const old: JsonObject = { data: { script: `#!/bin/sh\n${'echo hello\n'.repeat(20)}` } };
    const updated: JsonObject = { data: { script: `#!/bin/sh\n${'echo hello\n'.repeat(20)}exit 1\n` } };
    assert.deepEqual(diffObjects(old, updated), [
      {
        op: 'replace',
        path: '/data/script',
        from: (old.data as JsonObject).script,
        to: (updated.data as JsonObject).script,
      },
    ]);
  });

  it('returns nothing for the same reference or equal objects', () => {
    const old = podTemplate([web, sidecar]);
    assert.deepEqual(diffObjects(old, old), []);
    assert.deepEqual(diffObjects(old, copy(old)), []);
    const reordered: JsonObject = {
      spec: old.spec!,
      kind: old.kind!,
      metadata: old.metadata!,
      apiVersion: old.apiVersion!,
    };
    assert.deepEqual(diffObjects(old, reordered), [], 'key order is not a change');
    assert.notDeepEqual(diffObjects(old, podTemplate([sidecar, web])), [], 'a reorder is a change');
  });

  it('takes from/to from the inputs, never undefined', () => {
    const old: JsonObject = { spec: { a: { deep: [1] } } };
    const updated: JsonObject = { spec: { b: { deep: [2] } } };
    const changes = diffObjects(old, updated);
    assert.equal(changes[0]?.to, (updated.spec as JsonObject).b);
    assert.equal(changes[1]?.from, (old.spec as JsonObject).a);
    for (const change of changes) {
      assert.equal(Object.values(change).includes(undefined), false);
    }
  });

  it('diffs keys named __proto__ like any other key', () => {
    const old = JSON.parse(
      '{"data":{"__proto__":{"a":1,"b":[1]},"k":"v"},"list":[{"name":"x","__proto__":1}]}',
    );
    const updated = JSON.parse(
      '{"data":{"__proto__":{"a":2,"b":[1]},"k":"v"},"list":[{"name":"x","__proto__":2}]}',
    );
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'replace', path: '/data/__proto__/a', from: 1, to: 2 },
      { op: 'replace', path: '/list/0/__proto__', from: 1, to: 2 },
    ]);
    const added = JSON.parse('{"data":{"k":"v","__proto__":"new"}}');
    const removedFrom = JSON.parse('{"data":{"k":"v"}}');
    assert.deepEqual(diffObjects(removedFrom, added), [{ op: 'add', path: '/data/__proto__', to: 'new' }]);
    assert.deepEqual(diffObjects(added, removedFrom), [
      { op: 'remove', path: '/data/__proto__', from: 'new' },
    ]);
  });
});

describe('diffObjects: Kubernetes lists', () => {
  it('reports a container image change at the container index', () => {
    const old = podTemplate([copy(web), copy(sidecar)]);
    const updated = podTemplate([{ ...web, image: 'shop:1.5' }, copy(sidecar)]);
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'shop:1.4', to: 'shop:1.5' },
    ]);
  });

  it('reports a container inserted at index 0 as exactly one add', () => {
    const old = podTemplate([copy(web), copy(sidecar)]);
    const updated = podTemplate([copy(init), copy(web), copy(sidecar)]);
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/spec/template/spec/containers/0', to: init },
    ]);
  });

  it('reports an insert plus a real change inside a shifted container', () => {
    const old = podTemplate([copy(web), copy(sidecar)]);
    const updated = podTemplate([copy(init), copy(web), { ...sidecar, image: 'envoy:1.31' }]);
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/spec/template/spec/containers/0', to: init },
      { op: 'replace', path: '/spec/template/spec/containers/2/image', from: 'envoy:1.30', to: 'envoy:1.31' },
    ]);
  });

  it('removes an env var by name, at its old index', () => {
    const env = [
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
      { name: 'C', value: '3' },
    ];
    const old = podTemplate([{ ...web, env: copy(env) }]);
    const updated = podTemplate([{ ...web, env: [copy(env[0]!), copy(env[2]!)] }]);
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'remove', path: '/spec/template/spec/containers/0/env/1', from: { name: 'B', value: '2' } },
    ]);
  });

  it('reports removes from the highest old index down, then adds by new index', () => {
    const old: JsonObject = { env: ['A', 'B', 'C', 'D'].map((name) => ({ name, value: name })) };
    const updated: JsonObject = { env: ['A', 'X', 'C', 'Y'].map((name) => ({ name, value: name })) };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'remove', path: '/env/3', from: { name: 'D', value: 'D' } },
      { op: 'remove', path: '/env/1', from: { name: 'B', value: 'B' } },
      { op: 'add', path: '/env/1', to: { name: 'X', value: 'X' } },
      { op: 'add', path: '/env/3', to: { name: 'Y', value: 'Y' } },
    ]);
  });

  it('matches ports by containerPort and protocol', () => {
    const old: JsonObject = {
      ports: [
        { containerPort: 8080, protocol: 'TCP' },
        { containerPort: 53, protocol: 'UDP' },
      ],
    };
    const updated: JsonObject = {
      ports: [
        { containerPort: 53, protocol: 'TCP' },
        { containerPort: 8080, protocol: 'TCP', hostPort: 80 },
        { containerPort: 53, protocol: 'UDP' },
      ],
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/ports/0', to: { containerPort: 53, protocol: 'TCP' } },
      { op: 'add', path: '/ports/1/hostPort', to: 80 },
    ]);
  });

  it('matches service ports by port, an absent protocol being TCP', () => {
    const old: JsonObject = { spec: { ports: [{ port: 80, targetPort: 8080 }] } };
    const updated: JsonObject = {
      spec: {
        ports: [
          { port: 443, protocol: 'TCP', targetPort: 8443 },
          { port: 80, protocol: 'TCP', targetPort: 9090 },
        ],
      },
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/spec/ports/0', to: { port: 443, protocol: 'TCP', targetPort: 8443 } },
      { op: 'add', path: '/spec/ports/1/protocol', to: 'TCP' },
      { op: 'replace', path: '/spec/ports/1/targetPort', from: 8080, to: 9090 },
    ]);
  });

  it('matches conditions by type', () => {
    const old: JsonObject = {
      status: {
        conditions: [
          { type: 'Available', status: 'True' },
          { type: 'Progressing', status: 'True' },
        ],
      },
    };
    const updated: JsonObject = {
      status: {
        conditions: [
          { type: 'ReplicaFailure', status: 'True' },
          { type: 'Available', status: 'False' },
          { type: 'Progressing', status: 'True' },
        ],
      },
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/status/conditions/0', to: { type: 'ReplicaFailure', status: 'True' } },
      { op: 'replace', path: '/status/conditions/1/status', from: 'True', to: 'False' },
    ]);
  });

  it('matches volume mounts by name, then mountPath, tolerations by key', () => {
    const old: JsonObject = {
      mounts: [{ mountPath: '/a', readOnly: true }],
      tolerations: [{ key: 'gpu', operator: 'Exists' }],
    };
    const updated: JsonObject = {
      mounts: [{ mountPath: '/b' }, { mountPath: '/a', readOnly: false }],
      tolerations: [
        { key: 'spot', operator: 'Exists' },
        { key: 'gpu', operator: 'Equal', value: 'true' },
      ],
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/mounts/0', to: { mountPath: '/b' } },
      { op: 'replace', path: '/mounts/1/readOnly', from: true, to: false },
      { op: 'add', path: '/tolerations/0', to: { key: 'spot', operator: 'Exists' } },
      { op: 'replace', path: '/tolerations/1/operator', from: 'Exists', to: 'Equal' },
      { op: 'add', path: '/tolerations/1/value', to: 'true' },
    ]);
  });

  it('matches items without a key by position', () => {
    const old: JsonObject = { rules: [{ verbs: ['get'] }, { verbs: ['list'] }] };
    const updated: JsonObject = { rules: [{ verbs: ['get'] }, { verbs: ['watch'] }, { verbs: ['create'] }] };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'remove', path: '/rules/1/verbs/0', from: 'list' },
      { op: 'add', path: '/rules/1/verbs/0', to: 'watch' },
      { op: 'add', path: '/rules/2', to: { verbs: ['create'] } },
    ]);
  });

  it('matches primitive lists by value: an insert is one add', () => {
    const old: JsonObject = { args: ['--port=80', '--verbose'], finalizers: ['a', 'b', 'c'] };
    const updated: JsonObject = {
      args: ['--config=/etc/x', '--port=80', '--verbose'],
      finalizers: ['a', 'c'],
    };
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'add', path: '/args/0', to: '--config=/etc/x' },
      { op: 'remove', path: '/finalizers/1', from: 'b' },
    ]);
  });
});

describe('diffObjects: reordered lists', () => {
  // The rule (see src/diff/delta-changes.ts): item-level changes are reported as usual, then one
  // replace of the whole array when matched items changed their relative order.
  it('reports a pure reorder as one replace of the whole array', () => {
    const old = podTemplate([copy(web), copy(sidecar), copy(init)]);
    const updated = podTemplate([copy(sidecar), copy(web), copy(init)]);
    assert.deepEqual(diffObjects(old, updated), [
      {
        op: 'replace',
        path: '/spec/template/spec/containers',
        from: [web, sidecar, init],
        to: [sidecar, web, init],
      },
    ]);
  });

  it('reports a reorder of primitives as one replace', () => {
    assert.deepEqual(diffObjects({ args: ['a', 'b', 'c'] }, { args: ['c', 'a', 'b'] }), [
      { op: 'replace', path: '/args', from: ['a', 'b', 'c'], to: ['c', 'a', 'b'] },
    ]);
  });

  it('reports a reorder mixed with other changes as those changes, then the one replace', () => {
    const old = podTemplate([copy(web), copy(sidecar), copy(init)]);
    const movedAndChanged = { ...init, image: 'istio:1.3' };
    const added: Container = { name: 'debug', image: 'busybox' };
    const updated = podTemplate([movedAndChanged, copy(web), added]);
    assert.deepEqual(diffObjects(old, updated), [
      { op: 'remove', path: '/spec/template/spec/containers/1', from: sidecar },
      { op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'istio:1.2', to: 'istio:1.3' },
      { op: 'add', path: '/spec/template/spec/containers/2', to: added },
      {
        op: 'replace',
        path: '/spec/template/spec/containers',
        from: [web, sidecar, init],
        to: [movedAndChanged, web, added],
      },
    ]);
  });

  it('does not report a replace when items were only added or removed', () => {
    const changes = diffObjects(podTemplate([copy(web), copy(sidecar)]), podTemplate([copy(sidecar)]));
    assert.deepEqual(changes, [{ op: 'remove', path: '/spec/template/spec/containers/0', from: web }]);
  });
});
