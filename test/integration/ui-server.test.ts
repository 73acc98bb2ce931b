// src/ui/server.ts and the history readers: the UI's HTTP API on one generated history, once in a state
// file (the SQLite reader in its worker thread) and once in a real PostgreSQL database (the PostgreSQL
// reader), over real HTTP on loopback: the same answers from both for paging, filters, the timeline's
// marks and density, an object's history and its rebuilt versions, live updates, the token, the limits,
// and the headers every answer carries.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ChangeEvent } from '../../src/events/event.ts';
import type { StoredObject } from '../../src/informer/store.ts';
import { PostgresHistory } from '../../src/state/postgres-history.ts';
import { PostgresTimelineReader } from '../../src/state/postgres-timeline-reader.ts';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import { SqliteTimelineThread } from '../../src/state/sqlite-timeline-thread.ts';
import type { EventSummary, TimelineReader } from '../../src/state/timeline-reader.ts';
import type { ObjectLimits } from '../../src/ui/object-view.ts';
import { LIMITS } from '../../src/ui/query.ts';
import { SERVER_LIMITS, UiServer } from '../../src/ui/server.ts';
import type { Logger } from '../../src/util/log.ts';
import {
  type GeneratedHistory,
  generatedEvent,
  insertPostgresEvents,
  insertPostgresObject,
  replacedConfigMap,
  writeGeneratedHistory,
  writeGeneratedPostgresHistory,
} from '../helpers/generated-history.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres-env.ts';
import { holdWorkersHere } from '../helpers/worker-hold.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const SPEC: GeneratedHistory = {
  events: 3_000,
  start: Date.parse('2026-11-20T00:00:00Z'),
  stepMs: 1_000,
  namespaces: 7,
  objects: 500,
};
const ALL = Array.from({ length: SPEC.events }, (_, n) => generatedEvent(n, SPEC));

/** A store holding the generated history: readers of it, and a way to record two more events. */
interface Store {
  name: string;
  setUp(): Promise<void>;
  open(): Promise<TimelineReader>;
  /** Records events SPEC.events and SPEC.events + 1, in `namespaces[0]` and `namespaces[1]`. */
  appendTwo(namespaces: [string, string]): Promise<void>;
  /** Records a ConfigMap's events and its last state (cluster prod-eu). */
  appendObject(events: readonly ChangeEvent[], object: StoredObject): Promise<void>;
  tearDown(): Promise<void>;
}

function sqliteStore(): Store {
  const file = join(dir, 'history.db');
  return {
    name: 'SQLite state file (worker thread)',
    setUp: async () => writeGeneratedHistory(file, SPEC),
    open: () => SqliteTimelineThread.open(file),
    appendTwo: async (namespaces) => {
      const writer = SqliteDatabase.open(file);
      writer.write(
        namespaces.map((namespace, index) => {
          const event = generatedEvent(SPEC.events + index, SPEC);
          event.object.namespace = namespace;
          return { kind: 'event' as const, resource: 'configmaps', event };
        }),
      );
      writer.close();
    },
    appendObject: async (events, object) => {
      const writer = SqliteDatabase.open(file);
      writer.write([
        ...events.map((event) => ({ kind: 'event' as const, resource: 'configmaps', event })),
        { kind: 'object', resource: 'configmaps', object },
      ]);
      writer.close();
    },
    tearDown: async () => {},
  };
}

function postgresStore(): Store {
  let database: TestDatabase;
  const passwordFile = join(dir, 'pg-password');
  const withoutPassword = () => {
    const url = new URL(database.url);
    url.password = '';
    return url.href;
  };
  return {
    name: 'PostgreSQL history',
    setUp: async () => {
      database = await createTestDatabase('ui server');
      writeFileSync(passwordFile, database.info.password, { mode: 0o600 });
      await writeGeneratedPostgresHistory(database.url, SPEC);
    },
    open: async () =>
      new PostgresTimelineReader(await PostgresHistory.open({ url: withoutPassword(), passwordFile })),
    appendTwo: async (namespaces) => {
      for (const [index, namespace] of namespaces.entries()) {
        await insertPostgresEvents(
          database.url,
          SPEC,
          SPEC.events + index,
          SPEC.events + index + 1,
          (event) => {
            event.object.namespace = namespace;
            event.object.resource = 'configmaps';
            event.object.apiVersion = 'v1';
          },
        );
      }
    },
    appendObject: (events, object) => insertPostgresObject(database.url, events, object),
    tearDown: () => database.drop(),
  };
}

for (const store of [sqliteStore(), postgresStore()]) describe(store.name, () => apiTests(store));

function apiTests(store: Store): void {
  const warnings: string[] = [];
  const log: Logger = { info: () => {}, debug: () => {}, warn: (message) => warnings.push(message) };

  let server: UiServer;
  let tokenServer: UiServer;
  let origin: string;
  const readers: TimelineReader[] = [];
  const open = async () => {
    const reader = await store.open();
    readers.push(reader);
    return reader;
  };
  before(async () => {
    await store.setUp();
    server = await UiServer.start('127.0.0.1:0', { reader: await open(), log, pollIntervalMs: 20 });
    tokenServer = await UiServer.start('127.0.0.1:0', { reader: await open(), log, token: 's3cret-token' });
    origin = `http://${server.address}`;
  });
  after(async () => {
    await server.close();
    await tokenServer.close();
    for (const reader of readers) await reader.close();
    await store.tearDown();
  });

  async function get<T>(
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; body: T; headers: Headers }> {
    const response = await fetch(`${origin}${path}`, init);
    return { status: response.status, body: (await response.json()) as T, headers: response.headers };
  }

  describe('events', () => {
    test('pages cover the filtered history newest first, each event once, pages bounded', async () => {
      const seen: EventSummary[] = [];
      let before: number | undefined;
      for (;;) {
        const { body } = await get<{ events: EventSummary[]; next?: number }>(
          `/api/v1/events?namespace=ns-3&limit=${LIMITS.pageMax}${before ? `&before=${before}` : ''}`,
        );
        assert.ok(body.events.length <= LIMITS.pageMax);
        seen.push(...body.events);
        if (body.next === undefined) break;
        before = body.next;
      }
      const expected = ALL.filter((event) => event.object.namespace === 'ns-3')
        .map((event) => event.id)
        .reverse();
      assert.deepEqual(
        seen.map((event) => event.id),
        expected,
      );
    });

    test('filters: type, kind, name, cluster, manager, user, path; combined', async () => {
      const ids = async (query: string) =>
        (await get<{ events: EventSummary[] }>(`/api/v1/events?limit=500&${query}`)).body.events.map(
          (e) => e.id,
        );
      const expect = (keep: (event: (typeof ALL)[number]) => boolean) =>
        ALL.filter(keep)
          .map((event) => event.id)
          .reverse()
          .slice(0, 500);
      assert.deepEqual(
        await ids('type=deleted'),
        expect((event) => event.type === 'DELETED'),
      );
      assert.deepEqual(
        await ids('kind=deployments.apps&cluster=prod-eu'),
        expect((event) => event.object.resource === 'deployments' && event.cluster === 'prod-eu'),
      );
      assert.deepEqual(
        await ids('name=obj-42'),
        expect((event) => event.object.name.includes('obj-42')),
      );
      assert.deepEqual(
        await ids('manager=helm&user=alice@example.com'),
        expect(
          (event) =>
            event.by?.managers?.[0]?.manager === 'helm' && event.by.user?.username === 'alice@example.com',
        ),
      );
      assert.deepEqual(
        await ids('path=metadata.labels&namespace=ns-1,ns-2'),
        expect(
          (event) =>
            (event.changes ?? []).some((change) => change.path.startsWith('/metadata/labels')) &&
            ['ns-1', 'ns-2'].includes(event.object.namespace ?? ''),
        ),
      );
      assert.equal((await ids('user=nobody')).length, 0);
    });

    test('search (q): a name, a user, a path as people type it, anything the event holds', async () => {
      const ids = async (query: string) =>
        (await get<{ events: EventSummary[] }>(`/api/v1/events?limit=500&${query}`)).body.events.map(
          (e) => e.id,
        );
      const holding = (...texts: string[]) =>
        ALL.filter((event) => texts.some((text) => JSON.stringify(event).includes(text)))
          .map((event) => event.id)
          .reverse()
          .slice(0, 500);
      for (const [typed, texts] of [
        ['obj-42', ['obj-42']],
        ['alice@example.com', ['alice@example.com']],
        ['spec.replicas', ['spec.replicas', '/spec/replicas']],
      ] as const) {
        const found = await ids(`q=${encodeURIComponent(typed)}`);
        assert.ok(found.length > 0, typed);
        assert.deepEqual(found, holding(...texts), typed);
      }
      assert.equal((await ids('q=nothing-holds-this')).length, 0);
      // A uid (and an event id, which holds it) is not what people type: a part of one matches no event,
      // where it used to match every event of those objects.
      assert.ok(ALL.some((event) => JSON.stringify(event).includes('uid-4')));
      assert.equal((await ids('q=uid-4')).length, 0);
    });

    test('bad parameters are a 400 with one sentence naming the parameter', async () => {
      for (const [query, words] of [
        ['limit=501', /limit "501" must be a whole number from 1 to 500/],
        ['type=CHANGED', /type "CHANGED" is not an event type/],
        ['from=yesterday', /from "yesterday" is not a time/],
        [
          `namespace=${Array.from({ length: 51 }, (_, i) => `n${i}`).join(',')}`,
          /namespace has 51 values; at most 50/,
        ],
        [`name=${'x'.repeat(300)}`, /name is 300 characters long; at most 256/],
      ] as const) {
        const { status, body } = await get<{ error: string }>(`/api/v1/events?${query}`);
        assert.equal(status, 400, query);
        assert.match(body.error, words);
      }
      const long = await fetch(`${origin}/api/v1/events?name=${'y'.repeat(LIMITS.url)}`);
      assert.equal(long.status, 414);
    });
  });

  describe('timeline', () => {
    test('a window with few events: every mark, rows by namespace with their counts', async () => {
      const from = new Date(SPEC.start + 100_000).toISOString();
      const to = new Date(SPEC.start + 160_000).toISOString();
      const { body } = await get<{
        total: number;
        marks: EventSummary[];
        rows: { key: string; count: number }[];
        density?: unknown;
      }>(`/api/v1/timeline?from=${from}&to=${to}&rows=namespace`);
      const inWindow = ALL.filter((event) => event.time >= from && event.time < to);
      assert.equal(body.total, inWindow.length);
      assert.deepEqual(
        body.marks.map((mark) => mark.id),
        inWindow.map((event) => event.id),
      );
      assert.equal(body.density, undefined);
      assert.equal(
        body.rows.reduce((sum, row) => sum + row.count, 0),
        inWindow.length,
      );
    });

    test('a window with more events than marks: density per row and bucket, summing to the total', async () => {
      const from = new Date(SPEC.start).toISOString();
      const to = new Date(SPEC.start + SPEC.events * SPEC.stepMs).toISOString();
      const { body } = await get<{
        total: number;
        marks?: unknown;
        rows: { key: string; label: string }[];
        density: { bucketMs: number; cells: { added: number; updated: number; deleted: number }[] };
      }>(`/api/v1/timeline?from=${from}&to=${to}&rows=kind&buckets=30`);
      assert.equal(body.total, SPEC.events);
      assert.ok(SPEC.events > LIMITS.marks);
      assert.equal(body.marks, undefined);
      assert.equal(body.density.bucketMs, 100_000);
      const sum = body.density.cells.reduce(
        (total, cell) => total + cell.added + cell.updated + cell.deleted,
        0,
      );
      assert.equal(sum, SPEC.events);
      assert.deepEqual(body.rows.map((row) => row.label).sort(), [
        'ConfigMap (configmaps)',
        'Deployment (deployments.apps)',
        'Service (services)',
      ]);
    });

    test('from and to are required, from before to', async () => {
      const { status, body } = await get<{ error: string }>('/api/v1/timeline?from=2026-11-20T00:00:00Z');
      assert.equal(status, 400);
      assert.match(body.error, /needs from and to/);
    });
  });

  test("object: one object's events oldest first, whole, the newest `limit` with truncated", async () => {
    type Answer = {
      events: (EventSummary & { changes?: unknown[] })[];
      truncated: boolean;
      rebuildable: number[];
    };
    const mine = ALL.filter((event) => event.object.name === 'obj-25');
    const whole = await get<Answer>('/api/v1/object?kind=deployments.apps&namespace=ns-4&name=obj-25');
    assert.deepEqual(
      whole.body.events.map((event) => [event.id, event.changes]),
      mine.map((event) => [event.id, event.changes]),
    );
    assert.equal(whole.body.truncated, false);
    const newest = await get<Answer>(
      '/api/v1/object?kind=deployments.apps&namespace=ns-4&name=obj-25&limit=2',
    );
    assert.deepEqual(
      newest.body.events.map((event) => event.id),
      mine.slice(-2).map((event) => event.id),
    );
    assert.equal(newest.body.truncated, true);
  });

  test('facets: namespaces, kinds, clusters and the span', async () => {
    const { body } = await get<{ namespaces: string[]; clusters: string[]; count: number; first: string }>(
      '/api/v1/facets',
    );
    assert.equal(body.count, SPEC.events);
    assert.deepEqual(body.namespaces, ['ns-0', 'ns-1', 'ns-2', 'ns-3', 'ns-4', 'ns-5', 'ns-6']);
    assert.deepEqual(body.clusters, ['prod-eu', 'prod-us']);
    assert.equal(body.first, new Date(SPEC.start).toISOString());
  });

  test('live: an event recorded after the stream opened arrives on it, filtered', async () => {
    const latest = SPEC.events;
    const abort = new AbortController();
    const response = await fetch(`${origin}/api/v1/stream?after=${latest}&namespace=ns-live`, {
      signal: abort.signal,
    });
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    await store.appendTwo(['ns-other', 'ns-live']);
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk as Uint8Array);
      if (text.includes('event: events')) break;
    }
    abort.abort();
    const data = JSON.parse(/data: (.*)\n/.exec(text)![1]!) as EventSummary[];
    assert.deepEqual(
      data.map((event) => [event.seq, event.namespace]),
      [[SPEC.events + 2, 'ns-live']],
    );
  });

  test('live streams are bounded: one beyond the limit is refused with 503, logged once', async () => {
    const aborts: AbortController[] = [];
    try {
      for (let i = 0; i < SERVER_LIMITS.streams; i++) {
        const abort = new AbortController();
        aborts.push(abort);
        const response = await fetch(`${origin}/api/v1/stream`, { signal: abort.signal });
        assert.equal(response.status, 200);
      }
      for (let i = 0; i < 2; i++) {
        const refused = await fetch(`${origin}/api/v1/stream`);
        assert.equal(refused.status, 503);
        assert.equal(refused.headers.get('retry-after'), '10');
        await refused.body?.cancel();
      }
      assert.equal(warnings.filter((warning) => /live streams are open/.test(warning)).length, 1);
    } finally {
      for (const abort of aborts) abort.abort();
    }
  });

  describe('safety', () => {
    test('every answer carries the security headers; the page loads nothing from elsewhere', async () => {
      for (const path of ['/', '/assets/app.ts', '/api/v1/facets', '/nope']) {
        const response = await fetch(`${origin}${path}`);
        await response.arrayBuffer();
        const csp = response.headers.get('content-security-policy') ?? '';
        assert.match(csp, /default-src 'none'/, path);
        assert.match(csp, /script-src 'self'/, path);
        assert.match(csp, /frame-ancestors 'none'/, path);
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
      }
      const page = await (await fetch(`${origin}/`)).text();
      assert.doesNotMatch(page, /https?:\/\//, 'no absolute URL in the page');
      const script = await fetch(`${origin}/assets/app.ts`);
      assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
      assert.doesNotMatch(await script.text(), /: (string|number|View)\b(?!['"])/, 'types are stripped');
    });

    test('read-only: anything but GET and HEAD is 405', async () => {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const response = await fetch(`${origin}/api/v1/events`, { method });
        assert.equal(response.status, 405, method);
        assert.equal(response.headers.get('allow'), 'GET, HEAD');
        await response.arrayBuffer();
      }
    });

    test('on loopback, a request for another host name (DNS rebinding) is refused', async () => {
      const { request } = await import('node:http');
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const [host, port] = server.address.split(':');
        request(
          { host, port: Number(port), path: '/api/v1/facets', headers: { host: 'attacker.example:80' } },
          (res) => {
            res.resume();
            resolve(res.statusCode);
          },
        )
          .on('error', reject)
          .end();
      });
      assert.equal(status, 421);
    });

    test('with a token: the API needs it as a bearer token; the page itself does not', async () => {
      const base = `http://${tokenServer.address}`;
      const page = await fetch(`${base}/`);
      assert.equal(page.status, 200);
      await page.arrayBuffer();
      const none = await fetch(`${base}/api/v1/facets`);
      assert.equal(none.status, 401);
      assert.match(((await none.json()) as { error: string }).error, /#token=<token>/);
      const wrong = await fetch(`${base}/api/v1/facets`, { headers: { authorization: 'Bearer nope' } });
      assert.equal(wrong.status, 401);
      await wrong.arrayBuffer();
      const right = await fetch(`${base}/api/v1/facets`, {
        headers: { authorization: 'Bearer s3cret-token' },
      });
      assert.equal(right.status, 200);
      await right.arrayBuffer();
    });
  });

  // Last: it records events of its own, after which the seqs the tests above count on have moved.
  test('object: versions rebuilt exactly; a history over the size bound keeps its newest events and says so; past the time bound, a 503 sentence', async (t) => {
    type Answer = {
      events: { seq: number; id: string }[];
      truncated: boolean;
      rebuildable: number[];
      versions: Record<string, { data: Record<string, string> }>;
      notice?: string;
      error?: string;
    };
    // 200 keys replaced 6 times: about 20 KB of JSON per update.
    const big = replacedConfigMap('ns-big', 'big', 200, 6);
    await store.appendObject(big.events, big.object);
    const path = '/api/v1/object?kind=configmaps&namespace=ns-big&name=big';
    const whole = await get<Answer>(path);
    const seqs = whole.body.events.map((event) => event.seq);
    assert.deepEqual(
      whole.body.events.map((event) => event.id),
      big.events.map((event) => event.id),
    );
    assert.deepEqual(whole.body.rebuildable, seqs);
    const versions = await get<Answer>(`${path}&a=${seqs[0]}&b=${seqs[3]}`);
    assert.deepEqual(versions.body.versions[String(seqs[0])]?.data, big.data(0));
    assert.deepEqual(versions.body.versions[String(seqs[3])]?.data, big.data(3));
    assert.equal(versions.body.notice, undefined);

    const bounded = async (objectLimits: Partial<ObjectLimits>) => {
      const bounded = await UiServer.start('127.0.0.1:0', { reader: await open(), log, objectLimits });
      t.after(() => bounded.close());
      return async (query: string) => {
        const response = await fetch(`http://${bounded.address}${path}${query}`);
        return { status: response.status, body: (await response.json()) as Answer };
      };
    };
    // Room for the ADDED and two updates' JSON, not for the object (about 7 KB) and all seven events.
    const eventBytes = JSON.stringify(big.events[1]).length;
    const small = await bounded({ maxBytes: Math.floor(2.5 * eventBytes) });
    const newest = await small(`&b=${seqs[6]}`);
    assert.equal(newest.status, 200);
    assert.deepEqual(
      newest.body.events.map((event) => event.seq),
      seqs.slice(-2),
    );
    assert.equal(newest.body.truncated, true);
    assert.match(
      newest.body.notice ?? '',
      /^Older events are not shown: this object's history is larger than [\d.]+ KiB, the most one answer holds \(its newest 2 events are\)\./,
    );
    assert.deepEqual(newest.body.versions[String(seqs[6])]?.data, big.data(6));
    const tiny = await bounded({ maxBytes: 1024 });
    const noVersions = await tiny(`&b=${seqs[6]}`);
    assert.deepEqual(noVersions.body.events, []);
    assert.deepEqual(noVersions.body.rebuildable, []);
    assert.match(noVersions.body.notice ?? '', /Versions are not rebuilt: this object is larger than 1 KiB/);

    // The time bound: an answer held in its worker past it is a 503 with one sentence; the next,
    // in a new worker, is answered.
    const hold = join(dir, 'hold-rebuild');
    writeFileSync(hold, '');
    const slow = await bounded({ timeMs: 1_000 });
    const release = holdWorkersHere('object-view-worker', hold);
    t.after(release);
    const refused = await slow('');
    assert.equal(refused.status, 503);
    assert.match(
      refused.body.error ?? '',
      /^building this object's answer took longer than 1s, the most one answer may take; ask for fewer of its events \(limit\)\.$/,
    );
    rmSync(hold);
    assert.equal((await slow('')).status, 200);
    assert.equal(warnings.filter((line) => /took longer than 1s/.test(line)).length, 1);
  });

  // After the object test, whose seqs it would move: records an event of its own.
  test("search (q): a change's value under a key named like an identity field (a ConfigMap key `id`) is found", async () => {
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'ns-orders',
      name: 'orders',
      uid: 'uid-orders',
      resourceVersion: '2',
    };
    const event: ChangeEvent = {
      id: 'uid-orders:2',
      type: 'UPDATED',
      time: '2026-11-21T01:00:00.000Z',
      cluster: 'prod-eu',
      object,
      changes: [{ op: 'add', path: '/data', to: { id: 'shop-42' } }],
    };
    await store.appendObject([event], {
      key: 'ns-orders/orders',
      namespace: 'ns-orders',
      name: 'orders',
      uid: object.uid,
      resourceVersion: object.resourceVersion,
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'orders', namespace: 'ns-orders' },
        data: { id: 'shop-42' },
      },
    });
    const { body } = await get<{ events: EventSummary[] }>('/api/v1/events?q=shop-42');
    assert.deepEqual(
      body.events.map((found) => found.id),
      [event.id],
    );
  });
}
