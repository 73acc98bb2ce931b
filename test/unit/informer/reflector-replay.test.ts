// The reflector's replay (ReflectorOptions.replayFrom, src/informer/reflector.ts): after the first LIST,
// the first watch resumes from a previous run's recorded point, hands on the events up to the LIST apart
// (replayEvent) and the rest as usual; 410 Gone on it goes on from the LIST without another LIST. Against
// the collection answered by the test, with mock timers; the same against the real API server after a
// kill -9 is in test/integration/state-catchup.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Reflector, type ReflectorSink } from '../../../src/informer/reflector.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { configMap, FakeCollection, page, settle } from '../../helpers/fake-collection.ts';
import { configmaps } from '../../helpers/resource-types.ts';

/** What the reflector told its informer, one line each. */
function recordingSink(): ReflectorSink & { log: string[] } {
  const log: string[] = [];
  const named = (object: KubeObject) => `${object.metadata.name}@${object.metadata.resourceVersion}`;
  return {
    log,
    listStarted: () => log.push('list'),
    listPage: (items) => log.push(`page ${items.map(named).join(' ')}`),
    listCompleted: (resourceVersion) => log.push(`listed @${resourceVersion}`),
    watchEvent: (type, object) => log.push(`${type} ${named(object)}`),
    replayEvent: (type, object) => log.push(`replayed ${type} ${named(object)}`),
    replayEnded: (complete, listedAt) =>
      log.push(`replay ${complete ? 'complete' : 'incomplete'}, state @${listedAt}`),
    stateChanged: (state) =>
      log.push(
        state.phase === 'replayed'
          ? `replayed${state.goneFrom ? `, gone from ${state.goneFrom}` : ''}`
          : state.phase === 'failing'
            ? `failing ${state.error.kind}`
            : state.phase,
      ),
  };
}

describe('Reflector replay', () => {
  let reflector: Reflector | undefined;
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 }));
  afterEach(async () => {
    await reflector?.stop();
    reflector = undefined;
    mock.timers.reset();
  });

  function start(collection: FakeCollection, replayFrom: string, initialSync: 'list' | 'stream' = 'list') {
    const sink = recordingSink();
    reflector = new Reflector(
      collection,
      {
        type: configmaps,
        timing: { initialSync, pageSize: 10, minWatchTimeoutSeconds: 300, backoff: { maxMs: 30_000 } },
        random: () => 0.5,
        replayFrom,
      },
      sink,
    );
    reflector.start();
    return sink;
  }

  const resumedFrom = (collection: FakeCollection) =>
    collection.watches.map((watch) => watch.options.resourceVersion);

  it('after a paged LIST: watches from the replay point; events up to the LIST are replayed, the rest are live', async () => {
    const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
    const sink = start(collection, '4');
    await settle();
    const watch = collection.watches[0];
    watch?.send('ADDED', configMap('gone', '6'));
    watch?.send('DELETED', configMap('gone', '8'));
    await settle();
    // As far as the replay has read: no further.
    assert.equal(reflector?.resourceVersion, '8');
    watch?.send('MODIFIED', configMap('a', '10'));
    watch?.send('MODIFIED', configMap('a', '11'));
    watch?.send('ADDED', configMap('b', '12'));
    await settle();
    assert.deepEqual(resumedFrom(collection), ['4']);
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page a@5',
      'listed @10',
      'watching',
      'replayed ADDED gone@6',
      'replayed DELETED gone@8',
      'replayed MODIFIED a@10',
      'replay complete, state @10',
      'replayed',
      'MODIFIED a@11',
      'ADDED b@12',
    ]);
    assert.equal(reflector?.resourceVersion, '12');
  });

  it('after a streaming list: its stream ends at the initial events; a watch of its own replays; a bookmark past the LIST ends the replay', async () => {
    const collection = new FakeCollection();
    const sink = start(collection, '4', 'stream');
    await settle();
    collection.watches[0]?.send('ADDED', configMap('a', '5'));
    collection.watches[0]?.endInitialEvents('10');
    // Nothing the first stream sends after its initial events is read: the replay reads it again.
    collection.watches[0]?.send('MODIFIED', configMap('a', '11'));
    await settle();
    const replay = collection.watches[1];
    replay?.send('DELETED', configMap('gone', '7'));
    replay?.send('BOOKMARK', { metadata: { resourceVersion: '10' } } as KubeObject);
    replay?.send('MODIFIED', configMap('a', '11'));
    await settle();
    assert.deepEqual(
      collection.watches.map((watch) => [
        watch.options.sendInitialEvents === true,
        watch.options.resourceVersion,
      ]),
      [
        [true, ''],
        [false, '4'],
      ],
    );
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page a@5',
      'listed @10',
      // At the initial events' end (the LIST is handed on); the replay's watch does not say it again.
      'watching',
      'replayed DELETED gone@7',
      'replay complete, state @10',
      'replayed',
      'MODIFIED a@11',
    ]);
  });

  it('410 Gone on the replay: said once, and the watch goes on from the LIST, without another LIST', async () => {
    const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
    const sink = start(collection, '4');
    await settle();
    collection.watches[0]?.sendError(410, 'too old resource version: 4 (9)');
    await settle();
    collection.watches[1]?.send('MODIFIED', configMap('a', '11'));
    await settle();
    assert.deepEqual(resumedFrom(collection), ['4', '10']);
    assert.equal(collection.lists.length, 1);
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page a@5',
      'listed @10',
      'watching',
      'replay incomplete, state @10',
      'replayed, gone from 4',
      'watching',
      'MODIFIED a@11',
    ]);
  });

  it('a replay point not older than the LIST, or not a number, is no replay; a relist never replays', async () => {
    for (const replayFrom of ['10', '12', 'abc']) {
      const collection = new FakeCollection().answerList(page('10', []), page('40', []));
      const sink = start(collection, replayFrom);
      await settle();
      collection.watches[0]?.sendError(410, 'too old resource version');
      await settle();
      assert.deepEqual(resumedFrom(collection), ['10', '40'], replayFrom);
      assert.ok(!sink.log.some((line) => line.startsWith('replay')), replayFrom);
      await reflector?.stop();
    }
  });

  it('a relist during the replay ends it; the new LIST tells the rest', async () => {
    const collection = new FakeCollection().answerList(page('10', []), page('30', [configMap('b', '25')]));
    const sink = start(collection, '4');
    await settle();
    collection.watches[0]?.send('ADDED', configMap('gone', '6'));
    await settle();
    reflector?.relist();
    await settle();
    assert.deepEqual(resumedFrom(collection), ['4', '30']);
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page ',
      'listed @10',
      'watching',
      'replayed ADDED gone@6',
      'replay incomplete, state @10',
      'replayed',
      'listing',
      'list',
      'page b@25',
      'listed @30',
      'watching',
    ]);
  });
});
