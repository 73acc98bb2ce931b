// What of a CustomResourceDefinition decides how its objects are served (src/informer/served-schemas.ts):
// a change of it names the type to read again; the first sight, names, status and metadata do not; a CRD
// deleted, or not found again by a relist, is forgotten.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServedSchemas } from '../../../src/informer/served-schemas.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';

function crd(name: string, spec: JsonObject = {}, extra: JsonObject = {}): KubeObject {
  return {
    metadata: { name: `${name}.example.com`, uid: name, resourceVersion: '1' },
    spec: {
      group: 'example.com',
      names: { plural: name, kind: 'Widget' },
      versions: [
        { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
      ],
      ...spec,
    },
    ...extra,
  };
}

const withDefault = {
  versions: [
    {
      name: 'v1',
      served: true,
      storage: true,
      schema: {
        openAPIV3Schema: { type: 'object', properties: { shards: { type: 'integer', default: 1 } } },
      },
    },
  ],
};

test('a schema, version or conversion that changes names the type; the first sight, names and status do not', () => {
  const schemas = new ServedSchemas();
  assert.equal(schemas.observe(crd('widgets')), undefined, 'first seen');
  assert.equal(
    schemas.observe(crd('widgets', { names: { plural: 'widgets', kind: 'Widget', shortNames: ['w'] } })),
    undefined,
  );
  assert.equal(schemas.observe(crd('widgets', {}, { status: { conditions: [] } })), undefined);
  assert.deepEqual(schemas.observe(crd('widgets', withDefault)), {
    group: 'example.com',
    resource: 'widgets',
  });
  assert.equal(schemas.observe(crd('widgets', withDefault)), undefined, 'the same again');
  assert.deepEqual(schemas.observe(crd('widgets', { ...withDefault, conversion: { strategy: 'None' } })), {
    group: 'example.com',
    resource: 'widgets',
  });
});

test('a CRD deleted, or missing from a relist of the CRDs, is forgotten (bounded by the CRDs there are)', () => {
  const schemas = new ServedSchemas();
  schemas.observe(crd('a'));
  schemas.observe(crd('b'));
  schemas.forget(crd('a'));
  assert.equal(schemas.size, 1);
  schemas.listStarted();
  schemas.observe(crd('c'));
  schemas.listCompleted();
  assert.equal(schemas.size, 1);
  // Re-created: first seen again, not a change.
  assert.equal(schemas.observe(crd('b', withDefault)), undefined);
});
