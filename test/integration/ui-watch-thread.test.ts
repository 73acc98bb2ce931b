// `watch --ui` keeps the UI's queries off the watch (docs/ui.md): the SQLite reader runs in a worker
// thread, so a query that takes long (here held in the worker for as long as the test says, through
// KUBEDIFF_UI_TEST_HOLD, as a scan of a large history would be) does not delay an event: the change made
// meanwhile is printed while the query is still unanswered. Its queue is bounded: beyond 32 queries
// waiting, a request is refused with 503, counted and logged once. And the UI's metrics on --listen:
// requests by route and code, their duration, live streams, refusals. The page is asked for by the
// config file's `ui:` block.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { QUERY_QUEUE_LIMIT } from '../../src/state/query-gate.ts';
import { killAll, runKubediff, watchArgs } from '../helpers/cli.ts';
import { adminClient } from '../helpers/kube-admin.ts';
import { SERVING as METRICS_SERVING, scrapeMetrics } from '../helpers/metrics.ts';

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
    { checkEvents: true, timeoutMs: 30_000, env: { KUBEDIFF_UI_TEST_HOLD: hold } },
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
