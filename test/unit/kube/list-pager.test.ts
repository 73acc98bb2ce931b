// The paged LIST (src/kube/list-pager.ts) against a collection answered by the test
// (test/helpers/fake-collection.ts), with node:test's mock timers for the clock: pages with limit and
// continue, page sizes that follow the read limit, one object too large to read named, an expired
// continue token read whole, slow-list progress, and a stop in the middle. How the reflector uses it is
// in test/unit/informer/reflector.test.ts; against the real API server, test/integration/watch-*.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { KubeError } from '../../../src/kube/errors.ts';
import { ListPager, type ListProgress, type PageHandler } from '../../../src/kube/list-pager.ts';
import type { ListPage } from '../../../src/kube/lister-watcher.ts';
import { ResponseTooLarge } from '../../../src/kube/transport.ts';
import type { KubeObject } from '../../../src/kube/types.ts';
import { configMap, FakeCollection, page, settle, wholeList } from '../../helpers/fake-collection.ts';

const OPTIONS = { pageSize: 2, idleTimeoutMs: 90_000, slowListWarnMs: 60_000 };

/** What the pager handed on, one line each. */
function recordingHandler(): PageHandler & { log: string[]; progresses: ListProgress[] } {
  const log: string[] = [];
  const progresses: ListProgress[] = [];
  return {
    log,
    progresses,
    started: () => log.push('started'),
    page: (items: KubeObject[]) => {
      log.push(`page ${items.map((item) => item.metadata.name).join(' ')}`);
      return undefined;
    },
    progress: (progress) => {
      progresses.push(progress);
      log.push(
        `${progress.reason}: ${progress.pages} pages, ${progress.objects} objects, ${progress.elapsedMs} ms${progress.whole ? ', whole' : ''}`,
      );
    },
  };
}

/** A page of `count` ConfigMaps whose answer was `bytes` long. */
function sizedPage(count: number, bytes: number, next?: string): ListPage {
  const items = Array.from({ length: count }, (_, i) => configMap(`cm-${i}`, '5'));
  return { metadata: { resourceVersion: '10', ...(next ? { continue: next } : {}) }, items, bytes };
}

describe('ListPager', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  it('hands the list on page by page, with limit and continue, and resolves with its resourceVersion', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'next-page'),
      page('10', [configMap('c', '7')]),
    );
    const handler = recordingHandler();
    const resourceVersion = await new ListPager(collection, OPTIONS).list(
      handler,
      new AbortController().signal,
    );
    assert.equal(resourceVersion, '10');
    assert.deepEqual(
      collection.lists.map((options) => [options.limit, options.continue]),
      [
        [2, undefined],
        [2, 'next-page'],
      ],
    );
    assert.deepEqual(handler.log, ['started', 'page a b', 'page c']);
  });

  it('keeps pages near a quarter of the read limit: a large page makes the next smaller, small ones let them grow back', async () => {
    // A read limit of 4000 B: pages of about 1000 B.
    const collection = new FakeCollection({ maxReadBytes: 4_000 }).answerList(
      sizedPage(8, 4_000, 'p2'),
      sizedPage(2, 100, 'p3'),
      sizedPage(4, 100, 'p4'),
      sizedPage(8, 100),
    );
    const pager = new ListPager(collection, { ...OPTIONS, pageSize: 8 });
    assert.equal(await pager.list(recordingHandler(), new AbortController().signal), '10');
    // 8 objects in 4000 B: 2 fit in 1000 B; then doubling back up to pageSize.
    assert.deepEqual(
      collection.lists.map((options) => options.limit),
      [8, 2, 4, 8],
    );
  });

  it('asks a page over the read limit again, from the same place, with fewer objects; one object alone over it fails, named', async () => {
    const tooLarge = () => new ResponseTooLarge('/api/v1/configmaps', 300);
    const collection = new FakeCollection({ maxReadBytes: 300 }).answerList(
      page('10', [configMap('a', '5')], 'p2'),
      tooLarge(),
      tooLarge(),
      tooLarge(),
      // The metadata-only LIST of the one object: its name.
      page('10', [{ metadata: { name: 'big', namespace: 'shop' } } as KubeObject]),
    );
    const handler = recordingHandler();
    const pager = new ListPager(collection, { ...OPTIONS, pageSize: 16 });
    await assert.rejects(pager.list(handler, new AbortController().signal), (error: unknown) => {
      assert.ok(error instanceof KubeError);
      assert.equal(error.kind, 'too-large');
      assert.match(
        error.message,
        /^the object shop\/big is larger than 300 B, the most kubediff reads at once$/,
      );
      return true;
    });
    assert.deepEqual(
      collection.lists.map((options) => [options.limit, options.continue, options.metadataOnly ?? false]),
      [
        [16, undefined, false],
        [16, 'p2', false],
        [2, 'p2', false],
        [1, 'p2', false],
        [1, 'p2', true],
      ],
    );
    assert.deepEqual(handler.log, ['started', 'page a']);
  });

  it("reads the list whole after its continue token expired (410 on a later page), as client-go's pager does", async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'page-2'),
      new KubeError('gone', '410 Expired: The provided continue parameter is too old', {
        status: 410,
        path: '/api/v1/configmaps',
      }),
    );
    const handler = recordingHandler();
    const listed = new ListPager(collection, OPTIONS).list(handler, new AbortController().signal);
    await settle();
    assert.equal(collection.wholeLists.length, 1, 'one request for the whole list');
    wholeList(collection.wholeLists[0]!, '20', [
      configMap('a', '5'),
      configMap('b', '11'),
      configMap('c', '12'),
      configMap('d', '13'),
      configMap('e', '14'),
    ]);
    assert.equal(await listed, '20');
    assert.deepEqual(handler.log, [
      'started',
      'page a b',
      'expired: 1 pages, 2 objects, 0 ms',
      // Anew: the pages are superseded by the whole list, handed on pageSize (2) at a time.
      'started',
      'page a b',
      'page c d',
      'page e',
    ]);
    assert.deepEqual(
      collection.lists.map((options) => options.continue),
      [undefined, 'page-2'],
      'the first page is not asked again',
    );
  });

  it('fails a whole list with an item larger than the read limit, naming it, or whose connection breaks', async () => {
    const expired = () => new KubeError('gone', '410 Expired', { status: 410, path: '/api/v1/configmaps' });
    const collection = new FakeCollection({ maxReadBytes: 300 }).answerList(
      page('10', [configMap('a', '5')], 'page-2'),
      expired(),
      page('10', [configMap('a', '5')], 'page-2'),
      expired(),
    );
    const pager = new ListPager(collection, OPTIONS);
    const first = pager.list(recordingHandler(), new AbortController().signal);
    await settle();
    wholeList(collection.wholeLists[0]!, '20', [configMap('big', '7', { blob: 'x'.repeat(1_000) })]);
    await assert.rejects(first, (error: unknown) => {
      assert.ok(error instanceof KubeError);
      assert.equal(error.kind, 'too-large');
      assert.match(error.message, /the object shop\/big is larger than 300 B/);
      return true;
    });

    const second = pager.list(recordingHandler(), new AbortController().signal);
    await settle();
    collection.wholeLists[1]!.destroy(new Error('socket hang up'));
    await assert.rejects(second, (error: unknown) => {
      assert.ok(error instanceof KubeError);
      assert.equal(error.kind, 'network');
      assert.equal(error.message, 'the watch connection broke (https://api.test.invalid/api/v1/configmaps)');
      return true;
    });
  });

  it('reports a LIST slower than slowListWarnMs once, with its progress', async () => {
    // Each page takes 600 ms (by the mock clock).
    const slowPage = (items: KubeObject[], next?: string) => () => {
      mock.timers.tick(600);
      return page('10', items, next);
    };
    const collection = new FakeCollection().answerList(
      slowPage([configMap('a', '5'), configMap('b', '6')], 'p2'),
      slowPage([configMap('c', '7'), configMap('d', '8')], 'p3'),
      slowPage([configMap('e', '9')]),
    );
    const handler = recordingHandler();
    const pager = new ListPager(collection, { ...OPTIONS, slowListWarnMs: 1_000 });
    assert.equal(await pager.list(handler, new AbortController().signal), '10');
    assert.deepEqual(handler.progresses, [
      { reason: 'slow', pages: 2, objects: 4, elapsedMs: 1200, whole: false },
    ]);
  });

  it('reads nothing more while a page is held, and nothing after an abort: resolves undefined', async () => {
    const collection = new FakeCollection().answerList(
      page('10', [configMap('a', '5'), configMap('b', '6')], 'p2'),
      page('10', [configMap('c', '7')]),
    );
    let release: () => void = () => {};
    const pages: string[] = [];
    const abort = new AbortController();
    const listed = new ListPager(collection, OPTIONS).list(
      {
        started: () => {},
        page: (items) => {
          pages.push(items.map((item) => item.metadata.name).join(' '));
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
        progress: () => {},
      },
      abort.signal,
    );
    await settle();
    assert.equal(collection.lists.length, 1, 'the next page waits for the handler');
    abort.abort();
    release();
    assert.equal(await listed, undefined);
    assert.deepEqual(pages, ['a b']);
    assert.equal(collection.lists.length, 1, 'no page asked after the abort');
  });
});
