// The reflector (src/informer/reflector.ts) against a collection answered by the test
// (test/helpers/fake-collection.ts), with node:test's mock timers for every wait: paged LISTs, WATCHes
// that resume from the last resourceVersion (bookmarks count), 410 Gone, backoff with Retry-After, the
// slow retry of a forbidden type, the idle timeout, and flow control; the streaming list (WatchList) and
// its fallback to the paged LIST. The paged LIST itself (page sizes, expired continue tokens, slow-list
// progress) is test/unit/kube/list-pager.test.ts. Milliseconds each; the same behaviours against the
// real API server are in test/integration/watch-*.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Reflector, type ReflectorSink, type ReflectorState } from '../../../src/informer/reflector.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { configMap, FakeCollection, page, settle, wholeList } from '../../helpers/fake-collection.ts';
import { configmaps } from '../../helpers/resource-types.ts';

/** What the reflector told its informer, one line each. */
function recordingSink(): ReflectorSink & { log: string[]; states: ReflectorState[] } {
  const log: string[] = [];
  const states: ReflectorState[] = [];
  return {
    log,
    states,
    listStarted: () => log.push('list'),
    listPage: (items: KubeObject[]) =>
      log.push(
        `page ${items.map((item) => `${item.metadata.name}@${item.metadata.resourceVersion}`).join(' ')}`,
      ),
    listCompleted: (resourceVersion: string) => log.push(`listed @${resourceVersion}`),
    watchEvent: (type, object) =>
      log.push(`${type} ${object.metadata.name}@${object.metadata.resourceVersion}`),
    stateChanged: (state) => {
      states.push(state);
      log.push(
        state.phase === 'failing'
          ? `failing ${state.error.kind} retry ${state.retryInMs}ms`
          : state.phase === 'list-progress'
            ? `${state.progress.reason}: ${state.progress.pages} pages, ${state.progress.objects} objects, ${state.progress.elapsedMs} ms${state.progress.whole ? ', whole' : ''}`
            : state.phase,
      );
    },
  };
}

const TIMING = {
  // The paged LIST; the streaming list has its own tests below.
  initialSync: 'list' as const,
  pageSize: 2,
  minWatchTimeoutSeconds: 300,
  idleTimeoutMs: 90_000,
  slowRetryMs: 300_000,
  backoff: { maxMs: 30_000 },
};

describe('Reflector', () => {
  let reflector: Reflector | undefined;
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 }));
  afterEach(async () => {
    await reflector?.stop();
    reflector = undefined;
    mock.timers.reset();
  });

  /** Starts a reflector over `collection`; random 0.5 makes the jitter and the watch timeout exact. */
  function start(
    collection: FakeCollection,
    options: { flowControl?: () => Promise<void> | undefined; initialSync?: 'stream' | 'list' } = {},
  ) {
    const sink = recordingSink();
    const { initialSync = 'list', ...rest } = options;
    reflector = new Reflector(
      collection,
      { type: configmaps, timing: { ...TIMING, initialSync }, random: () => 0.5, ...rest },
      sink,
    );
    reflector.start();
    return sink;
  }

  it('lists page by page, then watches from the LIST resourceVersion; a bookmark moves the resume point', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'next-page'),
      page('10', [configMap('c', '7')]),
    );
    const sink = start(collection);
    await settle();
    assert.deepEqual(
      collection.lists.map((options) => [options.limit, options.continue]),
      [
        [2, undefined],
        [2, 'next-page'],
      ],
    );
    const [first] = collection.watches;
    assert.equal(first?.options.resourceVersion, '10');
    // A random timeout in [min, 2×min]: 300 + 0.5 × 300.
    assert.equal(first?.options.timeoutSeconds, 450);
    first?.send('ADDED', configMap('d', '11'));
    first?.send('BOOKMARK', { metadata: { resourceVersion: '15' } } as KubeObject);
    first?.end();
    await settle();
    // The server ended the watch: it resumes at once from the bookmark, without a LIST.
    assert.equal(collection.watches[1]?.options.resourceVersion, '15');
    assert.equal(reflector?.resourceVersion, '15');
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page a@5 b@6',
      'page c@7',
      'listed @10',
      'watching',
      'ADDED d@11',
      'watching',
    ]);
    // LIST items get the type's apiVersion and kind, as watch events carry them.
    assert.equal(collection.lists.length, 2);
  });

  it('410 Gone on the watch relists at once and watches from the new LIST', async () => {
    const collection = new FakeCollection().answerList(page('10', []), page('40', [configMap('a', '39')]));
    const sink = start(collection);
    await settle();
    collection.watches[0]?.sendError(410, 'too old resource version: 10 (30)');
    await settle();
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page ',
      'listed @10',
      'watching',
      'listing',
      'list',
      'page a@39',
      'listed @40',
      'watching',
    ]);
    assert.equal(collection.watches[1]?.options.resourceVersion, '40');
  });

  it("an expired continue token (410 on a later page) reads the list whole, item by item, as client-go's pager does", async () => {
    const expired = new KubeError('gone', '410 Expired: The provided continue parameter is too old', {
      status: 410,
      path: '/api/v1/configmaps',
    });
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'page-2'),
      expired,
    );
    const sink = start(collection);
    await settle();
    assert.equal(collection.wholeLists.length, 1, 'one request for the whole list');
    // Cut in chunks of 7 characters, with what a scanner could trip on in its values.
    const tricky = configMap('c', '12', { json: '{"items":[1,2]}', quote: 'a "quoted" }] \\ value' });
    wholeList(collection.wholeLists[0]!, '20', [
      configMap('a', '5'),
      configMap('b', '11'),
      tricky,
      configMap('d', '13'),
      configMap('e', '14'),
    ]);
    await settle();
    assert.deepEqual(sink.log, [
      'listing',
      'list',
      'page a@5 b@6',
      'expired: 1 pages, 2 objects, 0 ms',
      // Starts over: the pages are superseded by the whole list, handed on pageSize (2) at a time.
      'list',
      'page a@5 b@11',
      'page c@12 d@13',
      'page e@14',
      'listed @20',
      'watching',
    ]);
    assert.equal(collection.watches[0]?.options.resourceVersion, '20');
    const listed = sink.states.find((state) => state.phase === 'list-progress');
    assert.ok(listed);
    assert.deepEqual(
      collection.lists.map((options) => options.continue),
      [undefined, 'page-2'],
      'the first page is not asked again',
    );
  });

  it('backs off exponentially; a Retry-After is a minimum, capped at the maximum backoff', async () => {
    const throttled = (seconds: number) =>
      new KubeError('throttled', '429 TooManyRequests', {
        status: 429,
        retryAfterSeconds: seconds,
        path: '/x',
      });
    const collection = new FakeCollection()
      .answerList(page('10', []))
      .failWatch(new KubeError('network', 'connection refused', { path: '/x' }))
      .failWatch(throttled(5))
      .failWatch(throttled(86_400));
    const sink = start(collection);
    await settle();
    assert.equal(sink.log.at(-1), 'failing network retry 800ms');
    mock.timers.tick(799);
    await settle();
    assert.equal(sink.log.at(-1), 'failing network retry 800ms', 'no retry before the delay');
    mock.timers.tick(1);
    await settle();
    // Backoff 1.6s, but the server asked for 5s.
    assert.equal(sink.log.at(-1), 'failing throttled retry 5000ms');
    mock.timers.tick(5_000);
    await settle();
    // A day asked for: the maximum backoff instead.
    assert.equal(sink.log.at(-1), 'failing throttled retry 30000ms');
    mock.timers.tick(30_000);
    await settle();
    assert.equal(sink.log.at(-1), 'watching');
    assert.equal(collection.lists.length, 1, 'transient failures resume the watch, no relist');
    assert.equal(collection.watches[0]?.options.resourceVersion, '10');
  });

  it('a forbidden type is retried slowly, with a fresh LIST', async () => {
    const forbidden = new KubeError('forbidden', '403 Forbidden: configmaps is forbidden', {
      status: 403,
      path: '/x',
    });
    const collection = new FakeCollection().answerList(forbidden, page('20', [configMap('a', '19')]));
    const sink = start(collection);
    await settle();
    assert.deepEqual(sink.log, ['listing', 'list', 'failing forbidden retry 300000ms']);
    const last = sink.states.at(-1);
    assert.ok(last?.phase === 'failing' && last.slow, 'a slow retry');
    mock.timers.tick(299_999);
    await settle();
    assert.equal(collection.lists.length, 1);
    mock.timers.tick(1);
    await settle();
    assert.deepEqual(sink.log.slice(3), ['listing', 'list', 'page a@19', 'listed @20', 'watching']);
  });

  it('a watch silent for the idle timeout is taken as dead and resumed after the backoff', async () => {
    const collection = new FakeCollection().answerList(page('10', []));
    const sink = start(collection);
    await settle();
    collection.watches[0]?.send('MODIFIED', configMap('a', '11'));
    await settle();
    mock.timers.tick(90_000);
    await settle();
    assert.equal(sink.log.at(-1), 'failing network retry 800ms');
    assert.match(
      (sink.states.at(-1) as { error: KubeError }).error.message,
      /the watch connection went silent \(https:\/\/api\.test\.invalid\/api\/v1\/configmaps\)/,
    );
    mock.timers.tick(800);
    await settle();
    assert.equal(collection.watches[1]?.options.resourceVersion, '11');
    assert.equal(sink.log.at(-1), 'watching');
  });

  it('a broken connection resumes from the last event, not from the LIST', async () => {
    const collection = new FakeCollection().answerList(page('10', []));
    const sink = start(collection);
    await settle();
    collection.watches[0]?.send('ADDED', configMap('a', '12'));
    await settle();
    collection.watches[0]?.break();
    await settle();
    assert.equal(sink.log.at(-1), 'failing network retry 800ms');
    mock.timers.tick(800);
    await settle();
    assert.equal(collection.watches[1]?.options.resourceVersion, '12');
    assert.equal(collection.lists.length, 1);
  });

  it('while the consumer asks for a pause, nothing more is read; stop() ends the pause', async () => {
    let pause: Promise<void> | undefined;
    let resume: () => void = () => {};
    const collection = new FakeCollection().answerList(page('10', []));
    const sink = start(collection, { flowControl: () => pause });
    await settle();
    pause = new Promise((resolve) => {
      resume = resolve;
    });
    const watch = collection.watches[0];
    watch?.send('ADDED', configMap('a', '11'));
    watch?.send('ADDED', configMap('b', '12'));
    await settle();
    // The first line is handed over, then the reflector waits: the second stays unread.
    assert.deepEqual(sink.log.slice(-1), ['ADDED a@11']);
    pause = undefined;
    resume();
    await settle();
    assert.deepEqual(sink.log.slice(-2), ['ADDED a@11', 'ADDED b@12']);
  });

  it('a consumer may pause a watch before its first line: after a LIST, and after a streaming list ends', async () => {
    for (const initialSync of ['list', 'stream'] as const) {
      // As the state recorder does: a pause from the moment the first LIST has ended, until resumed.
      let phase: 'listing' | 'paused' | 'resumed' = 'listing';
      let resume: () => void = () => {};
      let pause: Promise<void> | undefined;
      let sink: ReturnType<typeof recordingSink> | undefined;
      const flowControl = () => {
        if (phase === 'listing' && sink?.log.includes('watching')) {
          phase = 'paused';
          pause = new Promise((resolve) => {
            resume = resolve;
          });
        }
        return phase === 'paused' ? pause : undefined;
      };
      const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
      sink = start(collection, { initialSync, flowControl });
      await settle();
      const watch = collection.watches[0];
      if (initialSync === 'stream') {
        watch?.send('ADDED', configMap('a', '5'));
        watch?.endInitialEvents('10');
      }
      watch?.send('MODIFIED', configMap('a', '11'));
      await settle();
      assert.equal(sink.log.at(-1), 'watching', `${initialSync}: nothing read past the LIST while paused`);
      phase = 'resumed';
      resume();
      await settle();
      assert.equal(sink.log.at(-1), 'MODIFIED a@11', initialSync);
      await reflector?.stop();
    }
  });

  it('stop() ends a backoff wait at once and leaves no timer; the last state is stopped', async () => {
    const collection = new FakeCollection()
      .answerList(page('10', []))
      .failWatch(new KubeError('server', '500 InternalError', { status: 500, path: '/x' }));
    const sink = start(collection);
    await settle();
    assert.equal(sink.log.at(-1), 'failing server retry 800ms');
    await reflector?.stop();
    assert.equal(sink.log.at(-1), 'stopped');
    assert.equal(collection.watches.length, 0);
  });

  describe('relist on request (a CRD changed how its objects are served)', () => {
    it('ends the watch at once, hands on none of its later events, and lists; it then watches from the new LIST', async () => {
      const collection = new FakeCollection().answerList(
        page('10', [configMap('a', '5')]),
        page('30', [configMap('a', '5')]),
      );
      const sink = start(collection);
      await settle();
      const first = collection.watches[0];
      first?.send('MODIFIED', configMap('a', '11'));
      await settle();
      reflector?.relist();
      // Written by the server after the request: not handed on (the LIST reads the state instead).
      first?.send('MODIFIED', configMap('a', '12'));
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'watching',
        'MODIFIED a@11',
        'listing',
        'list',
        'page a@5',
        'listed @30',
        'watching',
      ]);
      assert.equal(first?.body.destroyed, true);
      assert.equal(collection.watches[1]?.options.resourceVersion, '30');
      // Not a failure: no backoff, no warning.
      assert.equal(
        sink.states.some((state) => state.phase === 'failing'),
        false,
      );
    });

    it('asked for while a LIST is read: that LIST is followed by another before the watch', async () => {
      let answerFirstPage: ((value: ReturnType<typeof page>) => void) | undefined;
      const collection = new FakeCollection().answerList(page('30', [configMap('a', '6')]));
      const held = new Promise<ReturnType<typeof page>>((resolve) => {
        answerFirstPage = resolve;
      });
      const originalList = collection.list.bind(collection);
      let calls = 0;
      collection.list = async (options) => {
        calls++;
        if (calls === 1) {
          collection.lists.push(options);
          return held;
        }
        return originalList(options);
      };
      const sink = start(collection);
      await settle();
      reflector?.relist();
      answerFirstPage?.(page('10', [configMap('a', '5')]));
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'listing',
        'list',
        'page a@6',
        'listed @30',
        'watching',
      ]);
      assert.deepEqual(
        collection.watches.map((watch) => watch.options.resourceVersion),
        ['30'],
      );
    });

    it('for holdMs after, a watch that ends is followed by a LIST, not resumed; after that it resumes again', async () => {
      const collection = new FakeCollection().answerList(page('10', []), page('20', []), page('30', []));
      start(collection);
      await settle();
      reflector?.relist(5_000);
      await settle();
      assert.equal(collection.lists.length, 2);
      // The API server retires the old storage a second later: the watch ends.
      mock.timers.tick(1_000);
      collection.watches[1]?.end();
      await settle();
      assert.equal(collection.lists.length, 3, 'relisted rather than resumed');
      assert.equal(collection.watches[2]?.options.resourceVersion, '30');
      mock.timers.tick(5_000);
      collection.watches[2]?.send('BOOKMARK', { metadata: { resourceVersion: '35' } } as KubeObject);
      collection.watches[2]?.end();
      await settle();
      assert.equal(collection.lists.length, 3, 'resumed once the hold is over');
      assert.equal(collection.watches[3]?.options.resourceVersion, '35');
    });

    it('a streaming list in progress starts over', async () => {
      const collection = new FakeCollection();
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      collection.watches[0]?.send('ADDED', configMap('a', '5'));
      await settle();
      reflector?.relist();
      await settle();
      collection.watches[1]?.send('ADDED', configMap('a', '5'));
      collection.watches[1]?.endInitialEvents('20');
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'listing',
        'list',
        'page a@5',
        'listed @20',
        'watching',
      ]);
      assert.deepEqual(
        collection.watches.map((watch) => [watch.options.sendInitialEvents === true, watch.body.destroyed]),
        [
          [true, true],
          [true, false],
        ],
      );
    });
  });

  describe('streaming list', () => {
    const streamed = (collection: FakeCollection) =>
      collection.watches.map((watch) => [
        watch.options.sendInitialEvents === true,
        watch.options.resourceVersion,
      ]);

    it('one WATCH with sendInitialEvents: initial events as pages, the end bookmark, then the same stream watches', async () => {
      const collection = new FakeCollection();
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      const watch = collection.watches[0];
      watch?.send('ADDED', configMap('a', '5'));
      watch?.send('ADDED', configMap('b', '6'));
      watch?.send('ADDED', configMap('c', '7'));
      watch?.endInitialEvents('10');
      watch?.send('MODIFIED', configMap('a', '11'));
      watch?.end();
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'page a@5 b@6',
        'page c@7',
        'listed @10',
        'watching',
        'MODIFIED a@11',
        'watching',
      ]);
      // The current state (resourceVersion ''), then a plain watch resuming from the last event; no LIST.
      assert.deepEqual(streamed(collection), [
        [true, ''],
        [false, '11'],
      ]);
      assert.equal(collection.lists.length, 0);
    });

    it('a server that refuses it (422: WatchList off) gets a paged LIST at once, and for every later relist', async () => {
      const refused = new KubeError('request', '422 Invalid: sendInitialEvents is forbidden for watch', {
        status: 422,
        path: '/x',
      });
      const collection = new FakeCollection()
        .failWatch(refused)
        .answerList(page('10', [configMap('a', '5')]), page('40', [configMap('a', '39')]));
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      collection.watches[0]?.sendError(410, 'too old resource version');
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'watching',
        'listing',
        'list',
        'page a@39',
        'listed @40',
        'watching',
      ]);
      assert.deepEqual(streamed(collection), [
        [false, '10'],
        [false, '40'],
      ]);
    });

    it('a watch cache still filling (429 storage is (re)initializing): a paged LIST this time, streaming later', async () => {
      const initializing = new KubeError('throttled', '429 TooManyRequests: storage is (re)initializing', {
        status: 429,
        retryAfterSeconds: 1,
        path: '/x',
      });
      const collection = new FakeCollection()
        .failWatch(initializing)
        .answerList(page('10', [configMap('a', '5')]));
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      collection.watches[0]?.sendError(410, 'too old resource version');
      await settle();
      collection.watches[1]?.endInitialEvents('40');
      await settle();
      // No failing state, no wait: the LIST at once; the relist after 410 streams again.
      assert.deepEqual(sink.log, [
        'listing',
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'watching',
        'listing',
        'list',
        'listed @40',
        'watching',
      ]);
      assert.deepEqual(streamed(collection), [
        [false, '10'],
        [true, ''],
      ]);
    });

    it('a server that ignores it (a plain bookmark before the end) gets a paged LIST, started over', async () => {
      const collection = new FakeCollection().answerList(page('10', [configMap('a', '5')]));
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      collection.watches[0]?.send('ADDED', configMap('a', '5'));
      collection.watches[0]?.send('BOOKMARK', { metadata: { resourceVersion: '9' } } as KubeObject);
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'watching',
      ]);
      assert.deepEqual(streamed(collection), [
        [true, ''],
        [false, '10'],
      ]);
    });

    it('a stream that breaks before its initial events end starts over after the backoff; 410 later streams again', async () => {
      const collection = new FakeCollection();
      const sink = start(collection, { initialSync: 'stream' });
      await settle();
      collection.watches[0]?.send('ADDED', configMap('a', '5'));
      collection.watches[0]?.send('ADDED', configMap('b', '6'));
      collection.watches[0]?.break();
      await settle();
      assert.equal(sink.log.at(-1), 'failing network retry 800ms');
      mock.timers.tick(800);
      await settle();
      collection.watches[1]?.send('ADDED', configMap('a', '5'));
      collection.watches[1]?.endInitialEvents('10');
      await settle();
      collection.watches[1]?.sendError(410, 'too old resource version');
      await settle();
      collection.watches[2]?.endInitialEvents('50');
      await settle();
      assert.deepEqual(sink.log, [
        'listing',
        'list',
        'page a@5 b@6',
        'failing network retry 800ms',
        'listing',
        'list',
        'page a@5',
        'listed @10',
        'watching',
        'listing',
        'list',
        'listed @50',
        'watching',
      ]);
      assert.deepEqual(streamed(collection), [
        [true, ''],
        [true, ''],
        [true, ''],
      ]);
      assert.equal(reflector?.resourceVersion, '50');
    });
  });
});
