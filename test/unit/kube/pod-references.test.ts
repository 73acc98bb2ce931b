// What a pod spec references, each kind of reference alone (the integration test
// test/integration/used-by.test.ts finds each on real objects): env with its key, envFrom with its
// prefix, configMap and secret volumes with their items, projected sources, subPath mounts, image pull
// secrets, the ServiceAccount, PVCs; in containers, init containers and ephemeral containers; optional.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  objectReferences,
  type PodReference,
  podSpecOf,
  podSpecReferences,
  referencedObjects,
  serviceAccountReferences,
} from '../../../src/kube/pod-references.ts';
import type { JsonObject } from '../../../src/kube/types.ts';

/** The references of a spec, without the ServiceAccount every spec names (asserted on its own). */
function refs(spec: JsonObject): PodReference[] {
  return podSpecReferences(spec).filter((reference) => reference.type !== 'serviceAccount');
}

describe('podSpecReferences', () => {
  it('finds an env valueFrom of a ConfigMap and of a Secret, with key and variable, optional when set', () => {
    const spec: JsonObject = {
      containers: [
        {
          name: 'app',
          env: [
            { name: 'PLAIN', value: 'x' },
            { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
            { name: 'PASS', valueFrom: { secretKeyRef: { name: 'db', key: 'password', optional: true } } },
            { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          ],
        },
      ],
    };
    assert.deepEqual(refs(spec), [
      { kind: 'ConfigMap', name: 'cfg', type: 'env', key: 'mode', env: 'MODE', container: 'app' },
      {
        kind: 'Secret',
        name: 'db',
        type: 'env',
        key: 'password',
        env: 'PASS',
        container: 'app',
        optional: true,
      },
    ]);
  });

  it('finds envFrom of a ConfigMap (with its prefix) and of a Secret', () => {
    const spec: JsonObject = {
      containers: [
        {
          name: 'app',
          envFrom: [
            { configMapRef: { name: 'cfg' }, prefix: 'CFG_' },
            { secretRef: { name: 'db', optional: false } },
          ],
        },
      ],
    };
    assert.deepEqual(refs(spec), [
      { kind: 'ConfigMap', name: 'cfg', type: 'envFrom', prefix: 'CFG_', container: 'app' },
      { kind: 'Secret', name: 'db', type: 'envFrom', container: 'app' },
    ]);
  });

  it('finds configMap and secret volumes per container that mounts them, with items and subPath', () => {
    const spec: JsonObject = {
      containers: [
        {
          name: 'app',
          volumeMounts: [
            { name: 'config', mountPath: '/etc/app' },
            { name: 'certs', mountPath: '/etc/tls/tls.crt', subPath: 'tls.crt' },
          ],
        },
        { name: 'sidecar', volumeMounts: [{ name: 'config', mountPath: '/cfg' }] },
      ],
      volumes: [
        { name: 'config', configMap: { name: 'cfg', items: [{ key: 'app.yaml', path: 'app.yaml' }] } },
        { name: 'certs', secret: { secretName: 'tls', optional: true } },
        { name: 'scratch', emptyDir: {} },
      ],
    };
    assert.deepEqual(refs(spec), [
      {
        kind: 'ConfigMap',
        name: 'cfg',
        type: 'volume',
        volume: 'config',
        items: ['app.yaml'],
        container: 'app',
      },
      {
        kind: 'Secret',
        name: 'tls',
        type: 'volume',
        volume: 'certs',
        optional: true,
        container: 'app',
        subPath: true,
      },
      {
        kind: 'ConfigMap',
        name: 'cfg',
        type: 'volume',
        volume: 'config',
        items: ['app.yaml'],
        container: 'sidecar',
      },
    ]);
  });

  it('finds the ConfigMaps and Secrets of a projected volume, and a volume no container mounts', () => {
    const spec: JsonObject = {
      containers: [{ name: 'app' }],
      volumes: [
        {
          name: 'all',
          projected: {
            sources: [
              { configMap: { name: 'cfg', items: [] } },
              { secret: { name: 'db', items: [{ key: 'user', path: 'u' }], optional: true } },
              { serviceAccountToken: { path: 'token' } },
            ],
          },
        },
      ],
    };
    assert.deepEqual(refs(spec), [
      { kind: 'ConfigMap', name: 'cfg', type: 'projected', volume: 'all' },
      { kind: 'Secret', name: 'db', type: 'projected', volume: 'all', items: ['user'], optional: true },
    ]);
  });

  it('finds references of init and ephemeral containers, naming which', () => {
    const spec: JsonObject = {
      initContainers: [
        {
          name: 'render',
          envFrom: [{ configMapRef: { name: 'cfg' } }],
          volumeMounts: [{ name: 'v', mountPath: '/v' }],
        },
      ],
      containers: [{ name: 'app' }],
      ephemeralContainers: [
        { name: 'debug', env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'db', key: 'k' } } }] },
      ],
      volumes: [{ name: 'v', secret: { secretName: 'tls' } }],
    };
    assert.deepEqual(refs(spec), [
      { kind: 'ConfigMap', name: 'cfg', type: 'envFrom', initContainer: 'render' },
      { kind: 'Secret', name: 'tls', type: 'volume', volume: 'v', initContainer: 'render' },
      { kind: 'Secret', name: 'db', type: 'env', key: 'k', env: 'K', ephemeralContainer: 'debug' },
    ]);
  });

  it('finds image pull secrets, the ServiceAccount (default when none is named), and PVCs', () => {
    const spec: JsonObject = {
      serviceAccountName: 'builder',
      imagePullSecrets: [{ name: 'registry' }, {}],
      containers: [{ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-0' } }],
    };
    assert.deepEqual(podSpecReferences(spec), [
      { kind: 'PersistentVolumeClaim', name: 'data-0', type: 'volume', volume: 'data', container: 'app' },
      { kind: 'Secret', name: 'registry', type: 'imagePullSecrets' },
      { kind: 'ServiceAccount', name: 'builder', type: 'serviceAccount' },
    ]);
    assert.deepEqual(podSpecReferences({ containers: [] }), [
      { kind: 'ServiceAccount', name: 'default', type: 'serviceAccount' },
    ]);
  });

  it('skips what names nothing (empty names, malformed entries) without throwing', () => {
    const spec: JsonObject = {
      containers: [
        { name: 'app', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: '', key: 'k' } } }, 'junk'] },
        { env: [{ name: 'Y', valueFrom: { configMapKeyRef: { name: 'nameless-container', key: 'k' } } }] },
      ],
      volumes: [{ name: 'v', configMap: {} }, null],
    } as unknown as JsonObject;
    assert.deepEqual(refs(spec), []);
  });
});

describe('podSpecOf, objectReferences, referencedObjects', () => {
  const podSpec: JsonObject = { containers: [{ name: 'app', envFrom: [{ configMapRef: { name: 'cfg' } }] }] };

  it('reads the pod spec of a Pod and of every workload template, by group and kind', () => {
    assert.equal(podSpecOf('', 'Pod', { spec: podSpec }), podSpec);
    for (const [group, kind] of [
      ['apps', 'Deployment'],
      ['apps', 'ReplicaSet'],
      ['apps', 'StatefulSet'],
      ['apps', 'DaemonSet'],
      ['batch', 'Job'],
      ['', 'ReplicationController'],
    ] as const) {
      assert.equal(podSpecOf(group, kind, { spec: { template: { spec: podSpec } } }), podSpec, kind);
    }
    assert.equal(
      podSpecOf('batch', 'CronJob', { spec: { jobTemplate: { spec: { template: { spec: podSpec } } } } }),
      podSpec,
    );
    assert.equal(
      podSpecOf('example.com', 'Deployment', { spec: { template: { spec: podSpec } } }),
      undefined,
    );
    assert.equal(podSpecOf('apps', 'Deployment', { spec: {} }), undefined);
  });

  it('lists what a Pod, a workload and a ServiceAccount reference, and each object once', () => {
    const pod: JsonObject = { spec: { ...podSpec, imagePullSecrets: [{ name: 'registry' }] } };
    assert.deepEqual(referencedObjects(objectReferences('', 'Pod', pod)), [
      { kind: 'ConfigMap', name: 'cfg' },
      { kind: 'Secret', name: 'registry' },
      { kind: 'ServiceAccount', name: 'default' },
    ]);
    assert.deepEqual(serviceAccountReferences({ imagePullSecrets: [{ name: 'registry' }] }), [
      { kind: 'Secret', name: 'registry', type: 'imagePullSecrets' },
    ]);
    assert.deepEqual(objectReferences('', 'ServiceAccount', { imagePullSecrets: [{ name: 'r' }] }), [
      { kind: 'Secret', name: 'r', type: 'imagePullSecrets' },
    ]);
    assert.deepEqual(objectReferences('', 'ConfigMap', { data: {} }), []);
  });
});
