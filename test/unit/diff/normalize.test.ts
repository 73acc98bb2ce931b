import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { presetIgnoredPaths } from '../../../src/config/presets.ts';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../../src/diff/ignore.ts';
import { type NormalizeRules, Normalizer, normalizeObject } from '../../../src/diff/normalize.ts';
import { Redactor } from '../../../src/diff/redact.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';
import { configmaps, secrets } from '../../helpers/resource-types.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The rules of a type that is not a Secret, with these ignored paths and no `redact:` rule. */
function ignoring(paths: readonly string[]): NormalizeRules {
  return {
    ignore: new PathMatcher(paths),
    redact: new PathMatcher([]),
    secret: false,
    redactor: new Redactor(),
  };
}

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
    const normalized = normalizeObject(deployment(), ignoring(DEFAULT_IGNORED_PATHS));
    assert.deepEqual(normalized, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', uid: 'u-1', labels: { app: 'web' } },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'web', image: 'shop:1.4' }] } } },
    });
  });

  it('keeps status when status is wanted', () => {
    const matcher = presetIgnoredPaths('default', true, []);
    const normalized = normalizeObject(deployment(), ignoring(matcher));
    assert.deepEqual(normalized.status, { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] });
    assert.deepEqual(Object.keys(normalized.metadata as JsonObject), ['name', 'namespace', 'uid', 'labels']);
  });

  it('strips wildcard paths inside lists', () => {
    const matcher = ['/spec/template/spec/containers/*/image'];
    const input = deployment();
    const normalized = normalizeObject(input, ignoring(matcher));
    assert.deepEqual(normalized.spec, { replicas: 2, template: { spec: { containers: [{ name: 'web' }] } } });
    assert.equal(normalized.metadata, input.metadata, 'metadata had nothing to strip: shared, not copied');
  });

  it('never mutates the input', () => {
    const input = deployment();
    const before = structuredClone(input);
    normalizeObject(input, ignoring(DEFAULT_IGNORED_PATHS));
    assert.deepEqual(input, before);
  });

  it('shares subtrees that no pattern reaches', () => {
    const input = deployment();
    const normalized = normalizeObject(input, ignoring(DEFAULT_IGNORED_PATHS));
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
    assert.equal(normalizeObject(input, ignoring(DEFAULT_IGNORED_PATHS)), input);
    assert.equal(normalizeObject(input, ignoring([])), input);
  });

  it('redacts Secrets before anything is stored', () => {
    const secret: JsonObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', resourceVersion: '9' },
      data: { password: 'aHVudGVyMg==' },
    };
    const normalizer = new Normalizer({
      ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
      redactor: new Redactor(),
    });
    const normalized = normalizer.normalize(secrets, secret);
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
    const normalized = normalizeObject(input, ignoring(['/metadata/resourceVersion', '/data/b']));
    assert.equal(JSON.stringify(normalized), '{"metadata":{"name":"c"},"data":{"__proto__":"x"}}');
  });

  it('redacts by resource type: a Secret without apiVersion and kind, and one of a future version', () => {
    const normalizer = new Normalizer({ ignore: new PathMatcher([]), redactor: new Redactor() });
    // A LIST item carries no apiVersion/kind of its own.
    const item: JsonObject = { metadata: { name: 's' }, data: { password: 'aHVudGVyMg==' } };
    assert.deepEqual(normalizer.normalize(secrets, item).data, { password: '<redacted sha256:b073aefd>' });
    const future: JsonObject = {
      apiVersion: 'v2',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { k: 'dg==' },
    };
    const v2 = { ...secrets, version: 'v2' };
    assert.equal(JSON.stringify(normalizer.normalize(v2, future)).includes('dg=='), false);
    // What an object says it is does not matter: a ConfigMap is not redacted, whatever its kind says.
    const lookalike: JsonObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'c' },
      data: { a: 'b' },
    };
    assert.equal(normalizer.normalize(configmaps, lookalike), lookalike);
    // Nor is a custom resource that calls itself Secret in a group of its own.
    const custom = { ...secrets, group: 'example.com' };
    assert.equal(normalizer.normalize(custom, lookalike), lookalike);
  });

  it('hashes the `redact:` paths of the types they name, with wildcards, keys with / and ~, list items', () => {
    const redactor = new Redactor();
    const normalizer = new Normalizer({
      ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
      redactor,
      redactPaths: (type) =>
        type.resource === 'configmaps'
          ? ['/data/password', '/data/a~1b~0c', '/spec/containers/*/env/*/value', '/binaryData']
          : [],
    });
    const input = JSON.parse(
      JSON.stringify({
        metadata: { name: 'c', resourceVersion: '3' },
        data: { password: 'pw-1', 'a/b~c': 'slashed', plain: 'visible' },
        binaryData: { blob: 'YmxvYg==', other: 'b3RoZXI=' },
        spec: { containers: [{ name: 'web', env: [{ name: 'TOKEN', value: 'tok-1' }] }] },
      }),
    ) as JsonObject;
    const normalized = normalizer.normalize(configmaps, input);
    assert.deepEqual(normalized, {
      metadata: { name: 'c' },
      data: { password: redactor.marker('pw-1'), 'a/b~c': redactor.marker('slashed'), plain: 'visible' },
      binaryData: redactor.marker({ blob: 'YmxvYg==', other: 'b3RoZXI=' }),
      spec: { containers: [{ name: 'web', env: [{ name: 'TOKEN', value: redactor.marker('tok-1') }] }] },
    });
    // Another type is not touched.
    const deploymentType = { ...configmaps, group: 'apps', resource: 'deployments', kind: 'Deployment' };
    const other: JsonObject = { metadata: { name: 'd' }, data: { password: 'x' } };
    assert.equal(normalizer.normalize(deploymentType, other).data, other.data);
  });

  it('holds the `redact:` paths inside the copies of the object that annotations keep', () => {
    const redactor = new Redactor();
    const normalizer = new Normalizer({
      ignore: new PathMatcher(DEFAULT_IGNORED_PATHS),
      redactor,
      redactPaths: (type) => (type.resource === 'configmaps' ? ['/data/password', '/spec/*/token'] : []),
    });
    const copyOf = (password: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'db', namespace: 'shop' },
      data: { password, color: 'blue' },
    });
    const nested = {
      ...copyOf('hunter4'),
      metadata: { name: 'db', annotations: { [LAST_APPLIED]: JSON.stringify(copyOf('hunter5')) } },
      spec: { a: { token: 'tok-1', other: 'shown' } },
    };
    const annotations = {
      // kubectl apply's copy, with its trailing newline.
      [LAST_APPLIED]: `${JSON.stringify(copyOf('hunter2'))}\n`,
      'kapp.k14s.io/original': JSON.stringify(copyOf('hunter3')),
      // A backup tool's copy under a name of its own, holding a copy in its own annotations.
      'backup.example.com/copy': ` ${JSON.stringify(nested)}`,
      // Copies that cannot be read: the known ones are hashed whole, another annotation is left alone.
      'kapp.k14s.io/original-broken': '{"data":{"password":"hunter6"',
      team: 'data',
      'config.example.com/json': '{"data":{"color":"red"}}',
    };
    const input = { metadata: { name: 'db', annotations }, data: { password: 'hunter1' } };
    const normalized = normalizer.normalize(configmaps, input);
    const shown = (normalized.metadata as { annotations: Record<string, string> }).annotations;
    assert.equal(
      shown[LAST_APPLIED],
      `${JSON.stringify({ ...copyOf(''), data: { password: redactor.marker('hunter2'), color: 'blue' } })}\n`,
    );
    assert.deepEqual(JSON.parse(shown['kapp.k14s.io/original']!), {
      ...copyOf(''),
      data: { password: redactor.marker('hunter3'), color: 'blue' },
    });
    const backup = JSON.parse(shown['backup.example.com/copy']!) as JsonObject;
    assert.deepEqual(backup.data, { password: redactor.marker('hunter4'), color: 'blue' });
    assert.deepEqual(backup.spec, { a: { token: redactor.marker('tok-1'), other: 'shown' } });
    const inner = (backup.metadata as { annotations: Record<string, string> }).annotations[LAST_APPLIED]!;
    assert.deepEqual((JSON.parse(inner) as JsonObject).data, {
      password: redactor.marker('hunter5'),
      color: 'blue',
    });
    assert.equal(shown['kapp.k14s.io/original-broken'], '{"data":{"password":"hunter6"');
    // Untouched: not a copy, or a copy in which nothing is redacted (kept byte for byte).
    assert.equal(shown.team, 'data');
    assert.equal(shown['config.example.com/json'], annotations['config.example.com/json']);
    assert.deepEqual(normalized.data, { password: redactor.marker('hunter1') });
    assert.doesNotMatch(JSON.stringify(normalized), /hunter[1-5]/);
  });

  it('hashes whole a known copy annotation it cannot read, whatever its form', () => {
    const redactor = new Redactor();
    const normalizer = new Normalizer({
      ignore: new PathMatcher([]),
      redactor,
      redactPaths: () => ['/data/password'],
    });
    for (const unreadable of [
      'data:\n  password: hunter2\n',
      '{"data":{"password":"hunter2"}',
      '["x"]',
      '',
    ]) {
      const normalized = normalizer.normalize(configmaps, {
        metadata: { name: 'db', annotations: { [LAST_APPLIED]: unreadable } },
      });
      assert.deepEqual(normalized.metadata, {
        name: 'db',
        annotations: { [LAST_APPLIED]: redactor.marker(unreadable) },
      });
    }
    // Without a rule for the type, nothing is parsed or hashed.
    const plain = new Normalizer({ ignore: new PathMatcher([]), redactor });
    const object: JsonObject = { metadata: { name: 'db', annotations: { [LAST_APPLIED]: 'not json' } } };
    assert.equal(plain.normalize(configmaps, object), object);
  });

  it('decides the rules of a type once, so every version of an object is normalized alike', () => {
    let asked = 0;
    const normalizer = new Normalizer({
      ignore: new PathMatcher([]),
      redactor: new Redactor(),
      redactPaths: () => {
        asked++;
        return ['/data/a'];
      },
    });
    for (let n = 0; n < 3; n++)
      normalizer.normalize(configmaps, { metadata: { name: 'c' }, data: { a: String(n) } });
    assert.equal(asked, 1);
  });
});
