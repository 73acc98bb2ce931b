// An informer pre-loaded from the state file (--state) treats its first LIST as a relist: it reports
// exactly what changed since the recorded state, offline, and nothing for unchanged objects; without a
// pre-load the first LIST stays a silent baseline, each object handed to onBaseline for recording. With
// a replay point, the changes between it and the LIST report the objects created and deleted meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Informer, type InformerHandler } from '../../../src/informer/informer.ts';
import type { StoredObject } from '../../../src/informer/store.ts';
import type { ListerWatcher } from '../../../src/kube/lister-watcher.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { configmaps } from '../../helpers/resource-types.ts';

function cm(name: string, uid: string, rv: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'ns', uid, resourceVersion: rv },
    data,
  } as unknown as KubeObject;
}

const normalize = (_type: unknown, object: KubeObject) => {
  const { metadata, ...rest } = object as unknown as { metadata: Record<string, unknown> };
  const { resourceVersion: _rv, ...meta } = metadata;
  return { ...rest, metadata: meta } as never;
};

function stored(object: KubeObject): StoredObject {
  const m = object.metadata;
  return {
    key: `ns/${m.name}`,
    namespace: 'ns',
    name: m.name,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    object: normalize(configmaps, object),
  };
}

function recorder(): { handler: InformerHandler; log: string[] } {
  const log: string[] = [];
  return {
    log,
    handler: {
      onAdd: (_t, o, c) =>
        log.push(`ADDED ${o.name} ${o.uid}${c.offline ? ' offline' : ''}${c.replayed ? ' replayed' : ''}`),
      onUpdate: (_t, p, o, c) =>
        log.push(
          `UPDATED ${o.name} ${p.resourceVersion}->${o.resourceVersion}${c.offline ? ' offline' : ''}${c.replayed ? ' replayed' : ''}`,
        ),
      onDelete: (_t, o, c) =>
        log.push(
          `DELETED ${o.name} ${o.uid}${c.offline ? ' offline' : ''}${c.finalStateUnknown ? ' unknown' : ''}${c.replayed ? ' replayed' : ''} @${c.resourceVersion}`,
        ),
      onBaseline: (_t, o) => log.push(`BASELINE ${o.name}`),
    },
  };
}

const client = {} as ListerWatcher;

test('a pre-loaded informer reconciles its first LIST: created, changed, deleted, re-created, unchanged', () => {
  const { handler, log } = recorder();
  const informer = new Informer(
    client,
    {
      type: configmaps,
      normalize,
      initialList: 'silent',
      preload: [
        stored(cm('keep', 'u1', '10', { k: 'v' })),
        stored(cm('change', 'u2', '11', { k: '1' })),
        stored(cm('gone', 'u3', '12', {})),
        stored(cm('again', 'u4', '13', {})),
      ],
    },
    handler,
  );
  informer.listStarted();
  informer.listPage([cm('keep', 'u1', '10', { k: 'v' }), cm('change', 'u2', '20', { k: '2' })]);
  informer.listPage([cm('again', 'u5', '21', {}), cm('new', 'u6', '22', {})]);
  informer.listCompleted('30');
  assert.deepEqual(log, [
    'UPDATED change 11->20 offline',
    'DELETED again u4 offline unknown @21',
    'ADDED again u5 offline',
    'ADDED new u6 offline',
    'DELETED gone u3 offline unknown @30',
  ]);
  assert.equal(informer.hasSynced, true);
  assert.equal(informer.objectCount, 4);
});

test('without a pre-load the first LIST is a silent baseline, recorded through onBaseline', () => {
  const { handler, log } = recorder();
  const informer = new Informer(client, { type: configmaps, normalize, initialList: 'silent' }, handler);
  informer.listStarted();
  informer.listPage([cm('a', 'u1', '1', {}), cm('b', 'u2', '2', {})]);
  informer.listCompleted('3');
  assert.deepEqual(log, ['BASELINE a', 'BASELINE b']);
});

test('an empty pre-load (a type listed empty last time) reports every object as ADDED offline', () => {
  const { handler, log } = recorder();
  const informer = new Informer(
    client,
    { type: configmaps, normalize, initialList: 'silent', preload: [] },
    handler,
  );
  informer.listStarted();
  informer.listPage([cm('a', 'u1', '1', {})]);
  informer.listCompleted('3');
  assert.deepEqual(log, ['ADDED a u1 offline']);
});

test('a partial pre-load (a first LIST not wholly recorded) reconciles what it holds and baselines the rest', () => {
  const { handler, log } = recorder();
  const informer = new Informer(
    client,
    {
      type: configmaps,
      normalize,
      initialList: 'silent',
      preload: [stored(cm('change', 'u1', '10', { k: '1' })), stored(cm('gone', 'u2', '11', {}))],
      preloadPartial: true,
    },
    handler,
  );
  informer.listStarted();
  informer.listPage([cm('change', 'u1', '20', { k: '2' }), cm('other', 'u3', '21', {})]);
  informer.listCompleted('30');
  assert.deepEqual(log, [
    'UPDATED change 10->20 offline',
    'BASELINE other',
    'DELETED gone u2 offline unknown @30',
  ]);
});

test('the replay reports what the LIST cannot show: objects created after the replay point and deleted before the LIST, as they happened; nothing of one created before it', () => {
  const { handler, log } = recorder();
  const informer = new Informer(
    client,
    {
      type: configmaps,
      normalize,
      initialList: 'silent',
      preload: [stored(cm('keep', 'u1', '10', {})), stored(cm('web-0', 'u2', '11', {}))],
      replayFrom: '12',
    },
    handler,
  );
  informer.listStarted();
  // web-0 was deleted and created again under the same name (u4); u3 lived in between.
  informer.listPage([cm('keep', 'u1', '10', {}), cm('web-0', 'u4', '18', {})]);
  informer.listCompleted('20');
  // The changes the LIST has told (of u1, u2, u4) are not reported twice; u3's are, in order.
  informer.replayEvent('DELETED', cm('web-0', 'u2', '13', {}));
  // old existed before the replay point and is neither recorded nor listed: a run before this one
  // recorded it and reported it gone. Nothing of it again.
  informer.replayEvent('MODIFIED', cm('old', 'u9', '13', { k: 'v' }));
  informer.replayEvent('DELETED', cm('old', 'u9', '14', { k: 'v' }));
  informer.replayEvent('ADDED', cm('web-0', 'u3', '14', {}));
  informer.replayEvent('MODIFIED', cm('web-0', 'u3', '15', { k: 'v' }));
  informer.replayEvent('DELETED', cm('web-0', 'u3', '16', { k: 'v' }));
  informer.replayEvent('ADDED', cm('web-0', 'u4', '18', {}));
  informer.replayEnded(true, '20');
  // After the replay the store is the LIST's: u4 is web-0, live changes compare against it.
  informer.watchEvent('MODIFIED', cm('web-0', 'u4', '21', { k: '1' }));
  assert.deepEqual(log, [
    'DELETED web-0 u2 offline unknown @18',
    'ADDED web-0 u4 offline',
    'ADDED web-0 u3 offline replayed',
    'UPDATED web-0 14->15 offline replayed',
    'DELETED web-0 u3 offline replayed @16',
    'UPDATED web-0 18->21',
  ]);
  assert.equal(informer.get('ns/web-0')?.uid, 'u4');
  assert.equal(informer.objectCount, 2);
});

test('a replay ended before the LIST (410 Gone, a relist): what it reported created and did not see deleted is reported DELETED at the LIST', () => {
  const { handler, log } = recorder();
  const informer = new Informer(
    client,
    { type: configmaps, normalize, initialList: 'silent', preload: [], replayFrom: '12' },
    handler,
  );
  informer.listStarted();
  informer.listCompleted('20');
  informer.replayEvent('ADDED', cm('brief', 'u3', '14', {}));
  informer.replayEnded(false, '20');
  assert.deepEqual(log, ['ADDED brief u3 offline replayed', 'DELETED brief u3 offline unknown replayed @20']);
});
