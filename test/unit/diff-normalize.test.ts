import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { presetIgnoredPaths } from '../../src/config/presets.ts';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../src/diff/ignore.ts';
import { normalizeObject } from '../../src/diff/normalize.ts';
import type { JsonObject, KubeObject } from '../../src/kube/types.ts';

function deployment(): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: 'u-1',
      resourceVersion: '48213',
      generation: 7,
      labels: { app: 'web' },
      managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
    },
    spec: {
      replicas: 2,
      template: { spec: { containers: [{ name: 'web', image: 'shop:1.4' }] } },
    },
    status: { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] },
  };
}

describe('normalizeObject', () => {
  it('strips managedFields, resourceVersion, generation and status by default', () => {
    const normalized = normalizeObject(deployment(), new PathMatcher(DEFAULT_IGNORED_PATHS));
    assert.deepEqual(normalized, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', uid: 'u-1', labels: { app: 'web' } },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'web', image: 'shop:1.4' }] } } },
    });
  });

  it('keeps status when status is wanted', () => {
    const matcher = new PathMatcher(presetIgnoredPaths('default', true, []));
    const normalized = normalizeObject(deployment(), matcher);
    assert.deepEqual(normalized.status, { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] });
    assert.deepEqual(Object.keys(normalized.metadata as JsonObject), ['name', 'namespace', 'uid', 'labels']);
  });

  it('strips wildcard paths inside lists', () => {
    const matcher = new PathMatcher(['/spec/template/spec/containers/*/image']);
    const input = deployment();
    const normalized = normalizeObject(input, matcher);
    assert.deepEqual(normalized.spec, { replicas: 2, template: { spec: { containers: [{ name: 'web' }] } } });
    assert.equal(normalized.metadata, input.metadata, 'metadata had nothing to strip: shared, not copied');
  });

  it('never mutates the input', () => {
    const input = deployment();
    const before = structuredClone(input);
    normalizeObject(input, new PathMatcher(DEFAULT_IGNORED_PATHS));
    assert.deepEqual(input, before);
  });

  it('shares subtrees that no pattern reaches', () => {
    const input = deployment();
    const normalized = normalizeObject(input, new PathMatcher(DEFAULT_IGNORED_PATHS));
    assert.equal(normalized.spec, input.spec);
    assert.equal((normalized.metadata as JsonObject).labels, input.metadata.labels);
  });

  it('returns the input itself when nothing is ignored in it', () => {
    const input: JsonObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: { a: 'b' },
    };
    assert.equal(normalizeObject(input, new PathMatcher(DEFAULT_IGNORED_PATHS)), input);
    assert.equal(normalizeObject(input, new PathMatcher([])), input);
  });

  it('redacts Secrets before anything is stored', () => {
    const secret: JsonObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', resourceVersion: '9' },
      data: { password: 'aHVudGVyMg==' },
    };
    const normalized = normalizeObject(secret, new PathMatcher(DEFAULT_IGNORED_PATHS));
    assert.deepEqual(normalized, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { password: '<redacted sha256:b073aefd>' }, // printf 'aHVudGVyMg==' | sha256sum
    });
    assert.equal(JSON.stringify(normalized).includes('aHVudGVyMg=='), false);
  });

  it('keeps keys named __proto__ as keys', () => {
    const input = JSON.parse(
      '{"metadata":{"name":"c","resourceVersion":"1"},"data":{"__proto__":"x","b":"y"}}',
    );
    const normalized = normalizeObject(input, new PathMatcher(['/metadata/resourceVersion', '/data/b']));
    assert.equal(JSON.stringify(normalized), '{"metadata":{"name":"c"},"data":{"__proto__":"x"}}');
  });
});
