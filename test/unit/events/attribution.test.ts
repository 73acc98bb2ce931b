// Who changed it, from managedFields: the FieldsV1 trie read against change paths, the signature kept
// per object, and which managers wrote a version. Entries are shaped as the API server serves them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldOwnership } from '../../../src/diff/field-owners.ts';
import type { Change } from '../../../src/diff/types.ts';
import { attributeUpdate, creatorOf } from '../../../src/events/attribution.ts';
import {
  type ManagedFieldsEntry,
  managedFieldsOf,
  managersSignature,
  parseManagersSignature,
} from '../../../src/kube/managed-fields.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';

const deployment: JsonObject = {
  metadata: { name: 'web', labels: { app: 'web', tier: 'fe' }, finalizers: ['a/b', 'c/d'] },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'web' } },
    template: {
      spec: {
        containers: [
          { name: 'proxy', image: 'envoy:1', ports: [{ containerPort: 80, protocol: 'TCP' }] },
          { name: 'web', image: 'shop:1.5' },
        ],
      },
    },
  },
};

function entry(
  manager: string,
  fieldsV1: JsonObject,
  extra: Partial<ManagedFieldsEntry> = {},
): ManagedFieldsEntry {
  return { manager, operation: 'Update', time: '2026-11-22T10:31:07Z', fieldsV1, ...extra };
}

const creator = entry('kubectl-create', {
  'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  'f:spec': {
    'f:selector': {},
    'f:template': {
      'f:spec': {
        'f:containers': {
          'k:{"name":"web"}': { '.': {}, 'f:name': {} },
          'k:{"name":"proxy"}': {
            '.': {},
            'f:name': {},
            'f:image': {},
            'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
          },
        },
      },
    },
  },
});
const scaler = entry(
  'kubectl',
  { 'f:spec': { 'f:replicas': {} } },
  { subresource: 'scale', time: undefined },
);
const setter = entry('kubectl-set', {
  'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { 'f:image': {} } } } } },
});
const labeller = entry('kubectl-label', {
  'f:metadata': { 'f:labels': { 'f:tier': {} }, 'f:finalizers': { 'v:"c/d"': {} } },
});
const entries = [creator, scaler, setter, labeller];

/** The owners of one path, asked alone. */
function ownersOf(list: ManagedFieldsEntry[], object: JsonObject, path: string): ManagedFieldsEntry[] {
  return new FieldOwnership(list, object).ownersOf(path);
}

const owner = (path: string) => ownersOf(entries, deployment, path).map((found) => found.manager);

describe('field owners (FieldsV1 against JSON Pointer paths)', () => {
  it('maps f: fields, k: list items by their merge keys, v: set items and atomic fields', () => {
    assert.deepEqual(owner('/spec/replicas'), ['kubectl']);
    assert.deepEqual(owner('/spec/template/spec/containers/1/image'), ['kubectl-set']);
    assert.deepEqual(owner('/spec/template/spec/containers/0/image'), ['kubectl-create']);
    assert.deepEqual(owner('/spec/template/spec/containers/0/ports/0/containerPort'), ['kubectl-create']);
    assert.deepEqual(owner('/metadata/labels/tier'), ['kubectl-label']);
    assert.deepEqual(owner('/metadata/finalizers/1'), ['kubectl-label']);
    assert.deepEqual(owner('/metadata/finalizers/0'), []);
    // An atomic field (selector) is owned whole: a change below it is its owner's.
    assert.deepEqual(owner('/spec/selector/matchLabels/app'), ['kubectl-create']);
  });

  it('gives a map partly owned by several to all of them, and a field to its deepest owner', () => {
    assert.deepEqual(owner('/metadata/labels'), ['kubectl-create', 'kubectl-label']);
    // `f:data: {}` left to the creator once others took each key: only the map's existence is its own.
    const data = { data: { a: '1' } };
    const owners = ownersOf(
      [entry('unknown', { 'f:data': {} }), entry('scaler', { 'f:data': { 'f:a': {} } })],
      data,
      '/data/a',
    );
    assert.deepEqual(
      owners.map((found) => found.manager),
      ['scaler'],
    );
  });

  it('answers sibling paths asked one after the other as each alone', () => {
    const ownership = new FieldOwnership(entries, deployment);
    const paths = [
      '/metadata/labels/app',
      '/metadata/labels/tier',
      '/spec/replicas',
      '/metadata/labels/tier',
    ];
    assert.deepEqual(
      paths.map((path) => ownership.ownersOf(path).map((found) => found.manager)),
      [['kubectl-create'], ['kubectl-label'], ['kubectl'], ['kubectl-label']],
    );
  });

  it('reads escaped segments (~1 for "/", ~0 for "~") and refuses what is not a pointer', () => {
    const object = { metadata: { labels: { 'a/b': 'x', 'c~d': 'y' } } };
    const slash = entry('slash', { 'f:metadata': { 'f:labels': { 'f:a/b': {} } } });
    const tilde = entry('tilde', { 'f:metadata': { 'f:labels': { 'f:c~d': {} } } });
    const ownership = new FieldOwnership([slash, tilde], object);
    assert.deepEqual(
      ['/metadata/labels/a~1b', '/metadata/labels/c~0d', '/metadata/labels/a/b'].map((path) =>
        ownership.ownersOf(path).map((found) => found.manager),
      ),
      [['slash'], ['tilde'], []],
    );
    assert.throws(() => ownership.ownersOf('metadata'), /is not a JSON Pointer/);
    assert.throws(() => ownership.ownersOf('/metadata/labels/a~2b'), /is not a JSON Pointer/);
    assert.throws(() => ownership.ownersOf('/meta~data/labels/x'), /is not a JSON Pointer/);
    assert.deepEqual(
      ownership.ownersOf('/metadata/labels/c~0d').map((found) => found.manager),
      ['tilde'],
    );
  });

  it('matches list items by index with i: keys, and nothing past the end of a list', () => {
    const object = { spec: { args: ['a', 'b'] } };
    const byIndex = entry('x', { 'f:spec': { 'f:args': { 'i:1': {} } } });
    assert.equal(ownersOf([byIndex], object, '/spec/args/1').length, 1);
    assert.equal(ownersOf([byIndex], object, '/spec/args/5').length, 0);
  });
});

describe('managers signature', () => {
  it('round-trips names with dots and subresources, and changes with the time; counts the fields', () => {
    const signature = managersSignature([entry('argocd.argoproj.io', { 'f:a': {} }), scaler]);
    const parsed = parseManagersSignature(signature);
    assert.deepEqual(
      parsed.map(({ manager, operation, subresource }) => ({ manager, operation, subresource })),
      [
        { manager: 'argocd.argoproj.io', operation: 'Update', subresource: undefined },
        { manager: 'kubectl', operation: 'Update', subresource: 'scale' },
      ],
    );
    assert.equal(parsed[0]?.count, 1);
    const later = managersSignature([
      entry('argocd.argoproj.io', { 'f:a': {} }, { time: '2026-11-22T10:31:08Z' }),
    ]);
    assert.notEqual(parseManagersSignature(later)[0]?.whoAndWhen, parsed[0]?.whoAndWhen);
    const more = managersSignature([entry('argocd.argoproj.io', { 'f:a': {}, 'f:b': {} })]);
    assert.equal(parseManagersSignature(more)[0]?.whoAndWhen, parsed[0]?.whoAndWhen);
    assert.equal(parseManagersSignature(more)[0]?.count, 2);
  });

  it('reads only well-formed entries, and nothing from an object without managedFields', () => {
    const object = (managedFields: unknown) =>
      ({ metadata: { name: 'a', uid: 'u', resourceVersion: '1', managedFields } }) as unknown as KubeObject;
    assert.equal(managedFieldsOf(object(undefined)), undefined);
    assert.equal(managedFieldsOf(object([])), undefined);
    assert.equal(managedFieldsOf(object([{}])), undefined);
    assert.deepEqual(managedFieldsOf(object([{ manager: 'm', operation: 'Apply', subresource: '' }, 'x'])), [
      { manager: 'm', operation: 'Apply' },
    ]);
  });
});

function attribute(before: ManagedFieldsEntry[] | undefined, after: ManagedFieldsEntry[], changes: Change[]) {
  return attributeUpdate({
    previousSignature: before ? managersSignature(before) : undefined,
    currentSignature: managersSignature(after),
    entries: after,
    current: deployment,
    changes,
  });
}

const T1 = '2026-11-22T10:31:07Z';
const T2 = '2026-11-22T10:31:08Z';

describe('who wrote a version', () => {
  it('names the manager whose entry was restamped, and each change by its owner', () => {
    const before = [creator, entry('kubectl-set', setter.fieldsV1!, { time: T1 })];
    const after = [creator, entry('kubectl-set', setter.fieldsV1!, { time: T2 })];
    const result = attribute(before, after, [
      { op: 'replace', path: '/spec/template/spec/containers/1/image', from: 'shop:1.4', to: 'shop:1.5' },
    ]);
    assert.deepEqual(result.managers, [{ manager: 'kubectl-set', operation: 'Update', time: T2 }]);
    assert.equal(result.changes[0]?.manager, 'kubectl-set');
  });

  it('within one second: a grown entry wrote; an unchanged one is named by the fields it owns', () => {
    const grown = attribute(
      [entry('bot', { 'f:spec': { 'f:replicas': {} } })],
      [entry('bot', { 'f:spec': { 'f:replicas': {}, 'f:paused': {} } })],
      [{ op: 'add', path: '/spec/paused', to: true }],
    );
    assert.deepEqual(
      grown.managers?.map((ref) => ref.manager),
      ['bot'],
    );
    // The same manager wrote the same field again in the same second: its entry did not change.
    const same = attribute(
      [creator, scaler],
      [creator, scaler],
      [{ op: 'replace', path: '/spec/replicas', from: 3, to: 4 }],
    );
    assert.deepEqual(same.managers, [{ manager: 'kubectl', operation: 'Update', subresource: 'scale' }]);
    assert.equal(same.changes[0]?.manager, 'kubectl');
  });

  it('within one second: an entry that swapped one field for another wrote, the removed path included', () => {
    const swapped = attribute(
      [creator, entry('editor', { 'f:data': { 'f:color': {}, 'f:mode': {} } })],
      [creator, entry('editor', { 'f:data': { 'f:color': {}, 'f:size': {} } })],
      [
        { op: 'add', path: '/data/size', to: 'L' },
        { op: 'remove', path: '/data/mode', from: 'fast' },
      ],
    );
    assert.deepEqual(
      swapped.managers?.map((ref) => ref.manager),
      ['editor'],
    );
    assert.deepEqual(
      swapped.changes.map((change) => change.manager),
      ['editor', 'editor'],
    );
  });

  it('a manager whose entry only lost fields did not write; one whose entry vanished removed its fields', () => {
    const shrunk = attribute(
      [entry('a', { 'f:metadata': { 'f:labels': { 'f:x': {}, 'f:y': {} } } })],
      [entry('a', { 'f:metadata': { 'f:labels': { 'f:x': {} } } })],
      [{ op: 'remove', path: '/metadata/labels/y', from: '1' }],
    );
    assert.equal(shrunk.managers, undefined);
    assert.equal(shrunk.changes[0]?.manager, undefined);
    const vanished = attribute(
      [creator, labeller],
      [creator],
      [{ op: 'remove', path: '/metadata/labels/tier', from: 'fe' }],
    );
    assert.deepEqual(vanished.managers, [{ manager: 'kubectl-label', operation: 'Update' }]);
    assert.equal(vanished.changes[0]?.manager, 'kubectl-label');
  });

  it('without a previous signature (loaded from --state), names the owners of the changes only', () => {
    const result = attribute(undefined, entries, [
      { op: 'replace', path: '/spec/replicas', from: 2, to: 3 },
      { op: 'remove', path: '/metadata/annotations/x', from: 'y' },
    ]);
    assert.deepEqual(
      result.managers?.map((ref) => ref.manager),
      ['kubectl'],
    );
    assert.deepEqual(
      result.changes.map((change) => change.manager),
      ['kubectl', undefined],
    );
  });

  it('a field several appliers share goes to the one that wrote; a writer with no reported change is left out', () => {
    const shared = { 'f:spec': { 'f:replicas': {} } };
    const result = attribute(
      [
        entry('ci', shared, { operation: 'Apply', time: T1 }),
        entry('gitops', shared, { operation: 'Apply', time: T1 }),
        entry('status-writer', { 'f:status': {} }, { time: T1 }),
      ],
      [
        entry('ci', shared, { operation: 'Apply', time: T1 }),
        entry('gitops', shared, { operation: 'Apply', time: T2 }),
        entry('status-writer', { 'f:status': {} }, { time: T2 }),
      ],
      [{ op: 'replace', path: '/spec/replicas', from: 2, to: 3 }],
    );
    assert.deepEqual(
      result.managers?.map((ref) => ref.manager),
      ['gitops'],
    );
    assert.equal(result.changes[0]?.manager, 'gitops');
  });

  it('names the creator of an ADDED: the only main entry, or the one stamped at creation', () => {
    assert.equal(creatorOf([creator, scaler], deployment)?.manager, 'kubectl-create');
    const created = { metadata: { creationTimestamp: T1 } };
    const later = [entry('helm', {}, { time: T1 }), entry('kubectl-edit', {}, { time: T2 })];
    assert.equal(creatorOf(later, created)?.manager, 'helm');
    assert.equal(creatorOf([entry('a', {}, { time: T2 }), entry('b', {}, { time: T2 })], created), undefined);
  });
});
