// src/ui/server.ts under concurrent requests, over real HTTP on a real state file (the SQLite reader in its
// worker thread): the bounds on object answers and live streams hold while requests wait for the history,
// and a live stream never sends an event twice. The reader is the real one; the test holds some of its
// calls until it releases them, so that the requests meet exactly where a race would be.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SqliteDatabase } from '../../src/state/sqlite-database.ts';
import { SqliteTimelineThread } from '../../src/state/sqlite-timeline-thread.ts';
import type { EventSummary, TimelineReader } from '../../src/state/timeline-reader.ts';
import { OBJECT_LIMITS } from '../../src/ui/object-view.ts';
import { SERVER_LIMITS, UiServer } from '../../src/ui/server.ts';
import type { Logger } from '../../src/util/log.ts';
import {
  type GeneratedHistory,
  generatedEvent,
  writeGeneratedHistory,
} from '../helpers/generated-history.ts';
import { waitFor } from '../helpers/kube-admin.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-concurrency-'));
const file = join(dir, 'history.db');
const SPEC: GeneratedHistory = {
  events: 200,
  start: Date.parse('2026-11-20T00:00:00Z'),
  stepMs: 1_000,
  namespaces: 3,
  objects: 50,
};
const log: Logger = { info: () => {}, debug: () => {}, warn: () => {} };
let appended = SPEC.events;

/** Records the next generated event in the state file, as the watch would: its seq is the history's newest. */
function appendEvent(): number {
  const writer = SqliteDatabase.open(file);
  const event = generatedEvent(appended++, SPEC);
  writer.write([{ kind: 'event', resource: 'configmaps', event }]);
  writer.close();
  return appended;
}

/** The real reader, whose `method` calls wait, while held, until release(); counted. */
class HeldReader {
  calls = 0;
  private holding = true;
  private waiting: (() => void)[] = [];
  readonly reader: TimelineReader;

  constructor(inner: TimelineReader, method: 'latestSeq' | 'objectRecords') {
    this.reader = new Proxy(inner, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        const bound = (value as (...args: unknown[]) => unknown).bind(target);
        if (property !== method) return bound;
        return async (...args: unknown[]) => {
          if (this.holding) {
            this.calls++;
            await new Promise<void>((resolve) => this.waiting.push(resolve));
          }
          return bound(...args);
        };
      },
    });
  }

  release(): void {
    this.holding = false;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/** Fires `count` GETs at once; each one's status, as it arrives. */
function fire(origin: string, path: string, count: number, signal: AbortSignal) {
  const statuses: number[] = [];
  const answers = Array.from({ length: count }, () =>
    fetch(`${origin}${path}`, { signal }).then((response) => {
      statuses.push(response.status);
      if (response.status !== 200) void response.body?.cancel();
      return response;
    }),
  );
  return { statuses, answers };
}

describe('the UI under concurrent requests', () => {
  const readers: TimelineReader[] = [];
  const servers: UiServer[] = [];
  before(() => writeGeneratedHistory(file, SPEC));
  after(async () => {
    for (const server of servers) await server.close();
    for (const reader of readers) await reader.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const serve = async (wrap: (reader: TimelineReader) => TimelineReader, pollIntervalMs?: number) => {
    const reader = await SqliteTimelineThread.open(file);
    readers.push(reader);
    const server = await UiServer.start('127.0.0.1:0', {
      reader: wrap(reader),
      log,
      ...(pollIntervalMs ? { pollIntervalMs } : {}),
    });
    servers.push(server);
    return { server, origin: `http://${server.address}` };
  };

  test('object answers beyond the queue are refused before their history is read', async () => {
    let held: HeldReader | undefined;
    const { origin } = await serve((reader) => {
      held = new HeldReader(reader, 'objectRecords');
      return held.reader;
    });
    const extra = 3;
    const abort = new AbortController();
    const { statuses, answers } = fire(
      origin,
      '/api/v1/object?kind=configmaps&namespace=ns-0&name=obj-0',
      OBJECT_LIMITS.queue + extra,
      abort.signal,
    );
    await waitFor(() => held!.calls + statuses.length === OBJECT_LIMITS.queue + extra, {
      intervalMs: 5,
      what: 'every request read or refused',
    });
    held!.release();
    const all = await Promise.all(answers);
    for (const response of all) await response.arrayBuffer().catch(() => undefined);
    assert.equal(statuses.filter((status) => status === 503).length, extra);
    assert.equal(statuses.filter((status) => status === 200).length, OBJECT_LIMITS.queue);
    assert.equal(held!.calls, OBJECT_LIMITS.queue, 'the refused requests read nothing');
  });

  test('live streams: exactly the limit is served while they wait for where they start', async () => {
    let held: HeldReader | undefined;
    const { server, origin } = await serve((reader) => {
      held = new HeldReader(reader, 'latestSeq');
      return held.reader;
    });
    const extra = 4;
    const abort = new AbortController();
    try {
      const { statuses, answers } = fire(
        origin,
        '/api/v1/stream',
        SERVER_LIMITS.streams + extra,
        abort.signal,
      );
      await waitFor(() => held!.calls + statuses.length === SERVER_LIMITS.streams + extra, {
        intervalMs: 5,
        what: 'every stream admitted or refused',
      });
      held!.release();
      await Promise.all(answers);
      assert.equal(statuses.filter((status) => status === 503).length, extra);
      assert.equal(statuses.filter((status) => status === 200).length, SERVER_LIMITS.streams);
      assert.equal(server.liveStreams, SERVER_LIMITS.streams);
    } finally {
      abort.abort();
    }
  });

  test('a page that leaves while its stream looks up where it starts leaves no stream behind', async () => {
    let held: HeldReader | undefined;
    const { server, origin } = await serve((reader) => {
      held = new HeldReader(reader, 'latestSeq');
      return held.reader;
    });
    const abort = new AbortController();
    const request = fetch(`${origin}/api/v1/stream`, { signal: abort.signal }).catch(() => undefined);
    await waitFor(() => held!.calls === 1, { intervalMs: 5, what: 'the stream looking up the latest seq' });
    abort.abort();
    await request;
    await waitFor(() => server.listener.connections === 0, { intervalMs: 5, what: 'the connection closed' });
    held!.release();
    // The stream's request goes on as soon as the lookup answers: any later round trip comes after it.
    const facets = await fetch(`${origin}/api/v1/facets`);
    await facets.arrayBuffer();
    assert.equal(server.liveStreams, 0);
  });

  test('a live stream sends each event once, ids increasing, while events are committed during its query', async () => {
    let commitDuringQuery = true;
    const { origin } = await serve(
      (reader) =>
        new Proxy(reader, {
          get: (target, property) => {
            const value = Reflect.get(target, property, target) as unknown;
            if (typeof value !== 'function') return value;
            const bound = (value as (...args: unknown[]) => unknown).bind(target);
            if (property !== 'after') return bound;
            // The first query of the stream: an event is committed after the poll read the latest seq.
            return async (...args: unknown[]) => {
              if (commitDuringQuery) {
                commitDuringQuery = false;
                appendEvent();
              }
              return bound(...args);
            };
          },
        }),
      20,
    );
    const abort = new AbortController();
    const start = appended - 1;
    const response = await fetch(`${origin}/api/v1/stream?after=${start}`, { signal: abort.signal });
    assert.equal(response.status, 200);
    const decoder = new TextDecoder();
    const messages: { id: number; seqs: number[] }[] = [];
    let text = '';
    let last: number | undefined;
    try {
      for await (const chunk of response.body!) {
        text += decoder.decode(chunk as Uint8Array);
        for (;;) {
          const end = text.indexOf('\n\n');
          if (end < 0) break;
          const message = text.slice(0, end);
          text = text.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(message);
          const data = /^data: (.*)$/m.exec(message);
          if (!id || !data) continue;
          messages.push({
            id: Number(id[1]),
            seqs: (JSON.parse(data[1]!) as EventSummary[]).map((event) => event.seq),
          });
          // After the first message, one more event: the stream is read until it arrives.
          if (messages.length === 1) last = appendEvent();
        }
        if (last !== undefined && messages.some((message) => message.seqs.includes(last!))) break;
      }
    } finally {
      abort.abort();
    }
    const seqs = messages.flatMap((message) => message.seqs);
    assert.deepEqual(
      seqs,
      Array.from({ length: last! - start }, (_, index) => start + 1 + index),
      'each event once, in order',
    );
    const ids = messages.map((message) => message.id);
    for (let index = 1; index < ids.length; index++) assert.ok(ids[index]! > ids[index - 1]!, `ids ${ids}`);
  });
});
