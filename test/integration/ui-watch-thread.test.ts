// `watch --ui` keeps the UI's queries off the watch (docs/ui.md): the SQLite reader runs in a worker
// thread, so a query that takes long (here held in the worker for as long as the test says, by
// test/helpers/worker-hold.ts, as a scan of a large history would be) does not delay an event: the change made
// meanwhile is printed while the query is still unanswered. Its queue is bounded: beyond 32 queries
// waiting, a request is refused with 503, counted and logged once. And the UI's metrics on --listen:
// requests by route and code, their duration, live streams, refusals. The page is asked for by the
// config file's `ui:` block.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { QUERY_QUEUE_LIMIT } from '../../src/state/query-gate.ts';
import { killAll, runKubediff, runKubediffToCompletion, watchArgs } from '../helpers/cli.ts';
import { writeGeneratedHistory } from '../helpers/generated-history.ts';
import { adminClient, waitFor } from '../helpers/kube-admin.ts';
import { SERVING as METRICS_SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { workerHoldEnv } from '../helpers/worker-hold.ts';

const admin = adminClient();
const dir = mkdtempSync(join(tmpdir(), 'kubediff-ui-thread-'));
const SERVING = /serving the change history on (http:\/\/[^/\s]+)\//;

afterEach(async () => {
  await killAll();
});
after(async () => {
  await admin.close();
  rmSync(dir, { recursive: true, force: true });
});

const cmPath = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;

test('a slow UI query does not delay an event; the query queue is bounded (503, counted, logged once); UI metrics', async (t) => {
  const ns = await admin.createNamespace('ui-thread');
  t.after(() => admin.deleteNamespace(ns));
  const state = join(dir, `${ns}.db`);
  const hold = join(dir, 'hold');
  // The page from the config file's `ui:` block, as `--ui` would serve it.
  const config = join(dir, 'ui.yaml');
  writeFileSync(config, 'ui:\n  listen: 127.0.0.1:0\n');
  const kd = runKubediff(
    watchArgs(ns, ['configmaps'], '-c', config, '--state', state, '--listen', '127.0.0.1:0'),
    { checkEvents: true, timeoutMs: 30_000, env: workerHoldEnv('sqlite-timeline-worker', hold) },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  const metrics = (await kd.waitForStderr(METRICS_SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);

  // A query that takes as long as the test holds it.
  writeFileSync(hold, '');
  const answered: number[] = [];
  const request = (path: string) =>
    fetch(`${origin}${path}`).then(async (response) => {
      answered.push(response.status);
      return { status: response.status, body: await response.text() };
    });
  const slow = request(`/api/v1/events?namespace=${ns}`);

  // Meanwhile, a change: the watch reports it while the query is still unanswered.
  await admin.create(cmPath(ns), { metadata: { name: 'during-the-query' }, data: { a: '1' } });
  await kd.waitForEvent((event) => event.object.name === 'during-the-query');
  assert.deepEqual(answered, [], 'the held query is still unanswered');
  // Recorded in the state (the recorder flushes on its interval): only then can the held query find it.
  await waitFor(
    async () =>
      (await runKubediffToCompletion(['history', '--state', state, '-o', 'json'])).stdout.includes(
        '"name":"during-the-query"',
      ) || undefined,
    { timeoutMs: 60_000, intervalMs: 200, what: 'the change recorded in the state' },
  );

  // The queue: QUERY_QUEUE_LIMIT queries wait or run; two more are refused at once.
  const queued = Array.from({ length: QUERY_QUEUE_LIMIT - 1 + 2 }, () => request('/api/v1/facets'));
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (answered.filter((status) => status === 503).length === 2) {
        clearInterval(check);
        resolve();
      }
    }, 10);
  });
  assert.deepEqual(answered, [503, 503]);
  await kd.waitForStderr(
    /history queries are waiting, the most held\. Further requests are refused with 503/,
  );
  assert.equal(kd.stderr.match(/history queries are waiting/g)?.length, 1, 'logged once');
  let scraped = await scrapeMetrics(metrics);
  assert.equal(scraped.get('kubediff_ui_rejected_total{limit="queue"}'), 2);

  // Released: every waiting query is answered, the held one with the event recorded meanwhile.
  rmSync(hold);
  const slowAnswer = await slow;
  assert.equal(slowAnswer.status, 200);
  assert.match(slowAnswer.body, /"name":"during-the-query"/);
  const statuses = (await Promise.all(queued)).map((answer) => answer.status).sort();
  assert.deepEqual(statuses, [...Array(QUERY_QUEUE_LIMIT - 1).fill(200), 503, 503]);

  // A live stream open shows in the gauge.
  const abort = new AbortController();
  const stream = await fetch(`${origin}/api/v1/stream`, { signal: abort.signal });
  assert.equal(stream.status, 200);
  scraped = await scrapeMetrics(metrics);
  assert.equal(scraped.get('kubediff_ui_live_streams'), 1);
  abort.abort();
  assert.equal(scraped.get('kubediff_ui_requests_total{route="events",code="200"}'), 1);
  assert.equal(scraped.get('kubediff_ui_requests_total{route="facets",code="200"}'), QUERY_QUEUE_LIMIT - 1);
  assert.equal(scraped.get('kubediff_ui_requests_total{route="facets",code="503"}'), 2);
  assert.equal(
    scraped.get('kubediff_ui_request_duration_seconds_count{route="facets"}'),
    QUERY_QUEUE_LIMIT + 1,
  );
  assert.ok(!existsSync(hold));
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});

/**
 * Bytes the kernel can hold for one loopback connection whose reader reads nothing (Linux): the
 * sender's buffer at its largest, the receiver's at its start (it grows only as its owner reads).
 */
function kernelBufferBytes(): number {
  const field = (name: string, index: number) =>
    Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[index]);
  return field('tcp_wmem', 2) + field('tcp_rmem', 1);
}

test('a live stream whose client stops reading is closed, counted and logged once; the watch goes on', async (t) => {
  const ns = await admin.createNamespace('ui-stall');
  t.after(() => admin.deleteNamespace(ns));
  const state = join(dir, `${ns}.db`);
  // A history whose live stream, from its start, is several times what the kernel holds for a client
  // that reads nothing, so that kubediff itself holds what is left unread (a summary is ~250 bytes).
  const events = Math.ceil((3 * kernelBufferBytes()) / 250);
  writeGeneratedHistory(state, {
    events,
    start: Date.now() - events * 10,
    stepMs: 10,
    namespaces: 7,
    objects: 500,
  });
  const kd = runKubediff(
    watchArgs(ns, ['configmaps'], '--state', state, '--ui', '127.0.0.1:0', '--listen', '127.0.0.1:0'),
    {
      checkEvents: true,
      timeoutMs: 60_000,
      env: { KUBEDIFF_UI_HEARTBEAT: '20ms' },
    },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  const metrics = (await kd.waitForStderr(METRICS_SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);

  // A page that reads: it sees every heartbeat.
  const abort = new AbortController();
  t.after(() => abort.abort());
  const reading = await fetch(`${origin}/api/v1/stream`, { signal: abort.signal });
  const pings = (async function* () {
    const decoder = new TextDecoder();
    for await (const chunk of reading.body!) {
      const text = decoder.decode(chunk as Uint8Array);
      for (const _ of text.matchAll(/: ping\n/g)) yield;
    }
  })();

  // A client that asks for the whole history and never reads a byte of it.
  const { host, hostname, port } = new URL(origin);
  const stalled = connect(Number(port), hostname);
  t.after(() => stalled.destroy());
  stalled.on('connect', () => {
    stalled.write(`GET /api/v1/stream?after=0 HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    stalled.pause();
  });
  await kd.waitForStderr(/ui: a live stream's client left more than 1 MiB unread; it is closed/);
  // Two heartbeats after it was closed (the old server wrote its heartbeat to the ended answer, which
  // ended the process): the reading page still gets them.
  for (let i = 0; i < 2; i++) await pings.next();

  await admin.create(cmPath(ns), { metadata: { name: 'after-the-stall' }, data: { a: '1' } });
  await kd.waitForEvent((event) => event.object.name === 'after-the-stall');
  const scraped = await scrapeMetrics(metrics);
  assert.equal(scraped.get('kubediff_ui_rejected_total{limit="stream_buffer"}'), 1);
  assert.equal(kd.stderr.match(/left more than 1 MiB unread/g)?.length, 1, 'logged once');
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});

test("an object's versions are rebuilt off the watch's thread: /healthz and a change are not held by it", async (t) => {
  const ns = await admin.createNamespace('ui-rebuild');
  t.after(() => admin.deleteNamespace(ns));
  const state = join(dir, `${ns}.db`);
  const hold = join(dir, 'hold-rebuild');
  const kd = runKubediff(
    watchArgs(ns, ['configmaps'], '--state', state, '--ui', '127.0.0.1:0', '--listen', '127.0.0.1:0'),
    {
      checkEvents: true,
      timeoutMs: 30_000,
      env: workerHoldEnv('object-view-worker', hold),
    },
  );
  const origin = (await kd.waitForStderr(SERVING))[1]!;
  const health = (await kd.waitForStderr(METRICS_SERVING))[1]!;
  await kd.waitForStderr(/watching \d+ resource types?/);
  // The page's live stream says when the history holds each change, and its seq.
  const abort = new AbortController();
  t.after(() => abort.abort());
  const live = await fetch(`${origin}/api/v1/stream?namespace=${ns}`, { signal: abort.signal });
  const recorded = (async function* () {
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of live.body!) {
      text += decoder.decode(chunk as Uint8Array);
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const data = /^data: (.*)$/m.exec(text.slice(0, end))?.[1];
        text = text.slice(end + 2);
        if (data) yield* JSON.parse(data) as { seq: number; name: string; type: string }[];
      }
    }
  })();
  await admin.create(cmPath(ns), { metadata: { name: 'big' }, data: { a: '1', b: '1' } });
  await admin.patch(cmPath(ns, 'big'), { data: { a: '2' } });
  const seqs: number[] = [];
  for await (const summary of recorded) {
    if (summary.name === 'big') seqs.push(summary.seq);
    if (seqs.length === 2) break;
  }
  const [created, updated] = seqs as [number, number];

  // The object's answer is built in its worker, held there for as long as the test says, as a large
  // history would keep it busy.
  writeFileSync(hold, '');
  let answered = false;
  const object = fetch(
    `${origin}/api/v1/object?kind=configmaps&namespace=${ns}&name=big&a=${created}&b=${updated}`,
  ).then(async (response) => {
    answered = true;
    return {
      status: response.status,
      body: (await response.json()) as { versions: Record<string, { data: unknown }> },
    };
  });
  // Meanwhile the thread that serves and watches answers at once: /healthz on both listeners, a change.
  assert.equal((await fetch(`${origin}/healthz`)).status, 200);
  assert.equal((await fetch(`${health}/healthz`)).status, 200);
  await admin.create(cmPath(ns), { metadata: { name: 'during-the-rebuild' }, data: { a: '1' } });
  await kd.waitForEvent((event) => event.object.name === 'during-the-rebuild');
  assert.equal(answered, false, 'the object is still being built');

  rmSync(hold);
  const { status, body } = await object;
  assert.equal(status, 200);
  assert.deepEqual(body.versions[String(created)]?.data, { a: '1', b: '1' });
  assert.deepEqual(body.versions[String(updated)]?.data, { a: '2', b: '1' });
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});
