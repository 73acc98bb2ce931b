// The informer (src/informer/informer.ts) over a collection answered by the test: what a relist after
// 410 Gone reports (exactly what changed in the gap, offline), a delete and re-create under the same
// name, the silent baseline and --initial, and settling. Milliseconds; the same against the real API
// server (a real compaction) is in test/integration/watch-faults.test.ts.
import assert from 'node:assert/strict';
import { afterEach, describe, it, mock } from 'node:test';
import {
  Informer,
  type InformerHandler,
  type InitialListMode,
  SCHEMA_SETTLE_MS,
} from '../../../src/informer/informer.ts';
import type { ReflectorTiming } from '../../../src/informer/reflector.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { JsonObject, KubeObject } from '../../../src/kube/types.ts';
import { configMap, FakeCollection, page, settle, wholeList } from '../../helpers/fake-collection.ts';
import { configmaps } from '../../helpers/resource-types.ts';

function recorder(): InformerHandler & { log: string[] } {
  const log: string[] = [];
  const flags = (context: object) =>
    Object.entries(context)
      .filter(([, value]) => value === true)
      .map(([key]) => ` ${key}`)
      .join('');
  return {
    log,
    onAdd: (_type, object, context) =>
      log.push(`ADDED ${object.name}@${object.resourceVersion}${flags(context)}`),
    onUpdate: (_type, previous, current, context) =>
      log.push(
        `UPDATED ${current.name}@${previous.resourceVersion}→${current.resourceVersion}${flags(context)}${
          context.withoutWrite
            ? ` without a write (${context.withoutWrite.cause}) seen @${context.withoutWrite.resourceVersion}`
            : ''
        }`,
      ),
    onDelete: (_type, last, context) =>
      log.push(`DELETED ${last.name}@${context.resourceVersion}${flags(context)}`),
    onBaseline: (_type, object) => log.push(`BASELINE ${object.name}`),
  };
}

const normalize = (_type: unknown, object: KubeObject) => object as unknown as JsonObject;

describe('Informer', () => {
  let informer: Informer | undefined;
  afterEach(() => informer?.stop());

  function start(
    collection: FakeCollection,
    initialList: InitialListMode = 'silent',
    timing: Partial<ReflectorTiming> = {},
  ) {
    const handler = recorder();
    // The paged LIST: the reflector's tests cover the streaming list, which feeds the informer alike.
    informer = new Informer(
      collection,
      { type: configmaps, normalize, initialList, timing: { initialSync: 'list', ...timing } },
      handler,
    );
    informer.start();
    return handler;
  }

  it('a silent baseline, then live changes; settled once the first LIST is complete', async () => {
    const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
    const handler = start(collection);
    await informer?.waitUntilSettled();
    assert.equal(informer?.hasSynced, true);
    await settle();
    collection.watches[0]?.send('MODIFIED', configMap('a', '11', { k: 'v' }));
    collection.watches[0]?.send('ADDED', configMap('b', '12'));
    collection.watches[0]?.send('DELETED', configMap('b', '13'));
    await settle();
    assert.deepEqual(handler.log, ['BASELINE a', 'UPDATED a@5→11', 'ADDED b@12', 'DELETED b@13']);
  });

  it('--initial reports the first LIST as ADDED inventory', async () => {
    const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
    const handler = start(collection, 'added');
    await informer?.waitUntilSettled();
    assert.deepEqual(handler.log, ['ADDED a@5 initial']);
  });

  it('after 410 Gone, the relist reports exactly what changed in the gap, offline', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [
        configMap('same', '1'),
        configMap('changed', '2'),
        configMap('gone', '3'),
        configMap('again', '4'),
      ]),
      page('50', [
        configMap('same', '1'),
        configMap('changed', '20', { k: 'new' }),
        {
          ...configMap('again', '30'),
          metadata: { ...configMap('again', '30').metadata, uid: 'uid-again-2' },
        },
        configMap('new', '40'),
      ]),
    );
    const handler = start(collection);
    await informer?.waitUntilSettled();
    await settle();
    collection.watches[0]?.sendError(410);
    await settle();
    assert.deepEqual(handler.log.slice(4), [
      'UPDATED changed@2→20 offline',
      // Deleted and re-created under the same name in the gap: DELETED, then ADDED.
      'DELETED again@30 offline finalStateUnknown',
      'ADDED again@30 offline',
      'ADDED new@40 offline',
      'DELETED gone@50 offline finalStateUnknown',
    ]);
    assert.equal(informer?.objectCount, 4);
    assert.equal(collection.watches[1]?.options.resourceVersion, '50');
  });

  it('a relist that finds an object changed at the same resourceVersion (nobody wrote it) reports it when the LIST completes, at the LIST resourceVersion', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('defaulted', '1'), configMap('same', '2')]),
      page('50', [configMap('defaulted', '1', { shards: '1' }), configMap('same', '2')]),
    );
    const handler = start(collection);
    await informer?.waitUntilSettled();
    await settle();
    collection.watches[0]?.sendError(410);
    await settle();
    assert.deepEqual(handler.log.slice(2), [
      'UPDATED defaulted@1→1 offline without a write (relist) seen @50',
    ]);
    // The store holds the new form: the next write is reported from it.
    assert.deepEqual(informer?.get('shop/defaulted')?.object.data, { shards: '1' });
    collection.watches[1]?.send('MODIFIED', configMap('defaulted', '51', { shards: '2' }));
    await settle();
    assert.equal(handler.log.at(-1), 'UPDATED defaulted@1→51');
  });

  it('a LIST that starts over before it completes reports an object changed without a write once, from the state before', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '1')]),
      page('50', [configMap('a', '1', { shards: '1' })], 'page-2'),
      new KubeError('gone', '410 Expired', { status: 410, path: '/api/v1/configmaps' }),
    );
    const handler = start(collection);
    await informer?.waitUntilSettled();
    await settle();
    collection.watches[0]?.sendError(410);
    await settle();
    assert.deepEqual(handler.log, ['BASELINE a'], 'nothing before the LIST completes');
    assert.deepEqual(informer?.get('shop/a')?.object.data, {}, 'the store keeps the state reported last');
    wholeList(collection.wholeLists[0]!, '60', [configMap('a', '1', { shards: '1' })]);
    await settle();
    assert.deepEqual(handler.log, ['BASELINE a', 'UPDATED a@1→1 offline without a write (relist) seen @60']);
  });

  it('servedSchemaChanged (its CRD changed): the watch ends, the type is listed again, and what changed without a write has cause schema; a relist long after has cause relist', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 });
    t.after(() => mock.timers.reset());
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '1'), configMap('b', '2')]),
      page('20', [configMap('a', '1', { shards: '1' }), configMap('b', '2')]),
      page('40', [configMap('a', '1', { shards: '1' }), configMap('b', '2', { shards: '1' })]),
    );
    // A watch that outlives the settling time without being taken as dead.
    const handler = start(collection, 'silent', { idleTimeoutMs: 2 * SCHEMA_SETTLE_MS });
    await informer?.waitUntilSettled();
    await settle();
    informer?.servedSchemaChanged();
    await settle();
    assert.equal(collection.watches[0]?.body.destroyed, true, 'the watch was ended');
    assert.deepEqual(handler.log.slice(2), ['UPDATED a@1→1 offline without a write (schema) seen @20']);
    mock.timers.tick(SCHEMA_SETTLE_MS);
    collection.watches[1]?.sendError(410);
    await settle();
    assert.deepEqual(handler.log.slice(3), ['UPDATED b@2→2 offline without a write (relist) seen @40']);
  });

  it('--initial, a first LIST that starts over (its continue token expired: read whole): each object reported once, what changed or went meanwhile too', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'page-2'),
      new KubeError('gone', '410 Expired', { status: 410, path: '/api/v1/configmaps' }),
    );
    const handler = start(collection, 'added');
    await settle();
    // Meanwhile a changed, b deleted, c created.
    wholeList(collection.wholeLists[0]!, '20', [configMap('a', '11', { k: 'v' }), configMap('c', '12')]);
    await informer?.waitUntilSettled();
    assert.deepEqual(handler.log, [
      'ADDED a@5 initial',
      'ADDED b@6 initial',
      'UPDATED a@5→11 offline',
      'ADDED c@12 initial',
      'DELETED b@20 offline finalStateUnknown',
    ]);
    assert.equal(informer?.objectCount, 2);
  });

  it('a silent baseline that starts over: nothing reported twice; an object gone meanwhile is DELETED', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'page-2'),
      new KubeError('gone', '410 Expired', { status: 410, path: '/api/v1/configmaps' }),
    );
    const handler = start(collection);
    await settle();
    wholeList(collection.wholeLists[0]!, '20', [configMap('a', '5'), configMap('c', '12')]);
    await informer?.waitUntilSettled();
    assert.deepEqual(handler.log, [
      'BASELINE a',
      'BASELINE b',
      'BASELINE c',
      'DELETED b@20 offline finalStateUnknown',
    ]);
  });

  it('a first attempt that fails settles the informer too (the sync does not wait for a forbidden type)', async () => {
    const collection = new FakeCollection().answerList(
      new (await import('../../../src/kube/errors.ts')).KubeError('forbidden', '403', {
        status: 403,
        path: '/x',
      }),
    );
    start(collection);
    await informer?.waitUntilSettled();
    assert.equal(informer?.hasSynced, false);
    assert.equal(informer?.failure?.kind, 'forbidden');
  });
});
