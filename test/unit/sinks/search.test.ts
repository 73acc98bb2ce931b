// The OpenSearch / Elasticsearch sink's handling of bulk answers, against a loopback receiver that answers
// as a search cluster does (the sink against a real OpenSearch node is test/integration/sinks-opensearch.test.ts):
// the template is installed first (a refusal of it retried before any document is sent, then gone without
// on the batch's last attempt), items the cluster asks to have again (429) are sent again alone, items it
// refuses for good are dead-lettered and said once, an unreadable answer sends the whole batch again, and
// credentials go in the Authorization header.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DeadLetterFile } from '../../../src/sinks/core/dead-letter.ts';
import { dayOf, SearchSink } from '../../../src/sinks/logs/search/search.ts';
import { indexTemplate } from '../../../src/sinks/logs/search/template.ts';
import { sampleEvent } from '../../helpers/events.ts';
import type { ReceivedRequest, Reply } from '../../helpers/http-receiver.ts';
import { memoryLog, sinkTestKit } from '../../helpers/sink-test.ts';

const kit = sinkTestKit<SearchSink>();
const FAST = { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 5 };

/** The documents' ids of a bulk request, in order. */
function bulkIds(request: ReceivedRequest): string[] {
  return request.body
    .trim()
    .split('\n')
    .filter((_, index) => index % 2 === 0)
    .map(
      (line) =>
        (Object.values(JSON.parse(line) as Record<string, { _id: string }>)[0] as { _id: string })._id,
    );
}

function bulkAnswer(statuses: number[]): Reply {
  return {
    status: 200,
    body: JSON.stringify({
      errors: statuses.some((status) => status >= 300),
      items: statuses.map((status) => ({
        index: {
          status,
          ...(status >= 300
            ? {
                error: {
                  type: status === 429 ? 'es_rejected_execution_exception' : 'mapper_parsing_exception',
                  reason: `failed [${status}]`,
                },
              }
            : {}),
        },
      })),
    }),
  };
}

describe('search sink', () => {
  it('installs the template first, retries only the items answered 429, dead-letters the ones refused, said once', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-search-unit-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const answers = [bulkAnswer([201, 429, 400, 201, 400]), bulkAnswer([201])];
    const receiver = await kit.receiver({
      respond: (request) =>
        request.path.startsWith('/_bulk') ? answers.shift() : { status: 200, body: '{"acknowledged":true}' },
    });
    const sink = kit.track(
      new SearchSink({
        name: 'elasticsearch es',
        flavor: 'elasticsearch',
        url: receiver.url(''),
        index: 'changes',
        auth: { apiKey: 'a2V5' },
        retry: FAST,
        deadLetter: file,
        log,
      }),
    );
    const events = [1, 2, 3, 4, 5].map((n) =>
      sampleEvent({ id: `u${n}:1`, time: '2026-03-04T05:06:07.000Z' }),
    );
    // Delivered together: the sink is idle until the first batch starts.
    for (const event of events) sink.deliver(event);
    const { stats } = await sink.close(5_000);
    file.close();

    const [template, first, second] = receiver.requests;
    assert.equal(template?.method, 'PUT');
    assert.equal(template?.path, '/_index_template/changes-kubediff');
    assert.deepEqual(JSON.parse(template?.body ?? ''), indexTemplate('changes', 'daily'));
    assert.match(first?.path ?? '', /^\/_bulk\?filter_path=/);
    assert.equal(first?.headers['content-type'], 'application/x-ndjson');
    assert.equal(first?.headers.authorization, 'ApiKey a2V5');
    assert.deepEqual(bulkIds(first as ReceivedRequest), ['u1:1', 'u2:1', 'u3:1', 'u4:1', 'u5:1']);
    assert.match(first?.body ?? '', /"_index":"changes-2026\.03\.04"/);
    assert.deepEqual(bulkIds(second as ReceivedRequest), ['u2:1'], 'only the item answered 429, again');
    assert.equal(receiver.requests.length, 3);
    assert.deepEqual(stats, {
      accepted: 5,
      delivered: 3,
      summarized: 0,
      deadLettered: 2,
      lost: 0,
      pending: 0,
      digests: 0,
      overflows: 0,
    });
    const letters = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      letters.map((letter: { event: { id: string } }) => letter.event.id),
      ['u3:1', 'u5:1'],
    );
    assert.equal(
      log.warnings.filter((w) => /HTTP 400 mapper_parsing_exception.*not retried/.test(w)).length,
      1,
      'said once',
    );
  });

  it('sends the whole batch again when the answer cannot be read, and counts a data stream’s 409 as delivered', async () => {
    const log = memoryLog();
    const answers: Reply[] = [{ status: 200, body: '{"errors":tru' }, bulkAnswer([201, 409])];
    const receiver = await kit.receiver({
      respond: (request) => (request.path.startsWith('/_bulk') ? answers.shift() : undefined),
    });
    const sink = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: receiver.url('/'),
        index: 'events',
        mode: 'data-stream',
        installTemplate: false,
        auth: { username: 'kd', password: 'pw' },
        retry: FAST,
        log,
      }),
    );
    sink.deliver(sampleEvent({ id: 'a:1' }));
    sink.deliver(sampleEvent({ id: 'b:1' }));
    const { stats } = await sink.close(5_000);
    assert.equal(receiver.requests.length, 2, 'no template request, then the batch twice');
    assert.deepEqual(bulkIds(receiver.requests[1] as ReceivedRequest), ['a:1', 'b:1']);
    assert.match(receiver.requests[1]?.body ?? '', /\{"create":\{"_index":"events","_id":"a:1"\}\}/);
    assert.equal(
      receiver.requests[0]?.headers.authorization,
      `Basic ${Buffer.from('kd:pw').toString('base64')}`,
    );
    assert.equal(stats.delivered, 2);
    assert.match(log.warnings.join('\n'), /an unreadable bulk answer/);
  });

  it('splits a batch refused as too large (413) in halves until it passes; only the event too large alone is dead-lettered', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-search-413-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    // A node whose http.max_content_length is 3,000 bytes.
    const LIMIT = 3_000;
    const receiver = await kit.receiver({
      respond: (request) =>
        Buffer.byteLength(request.body) > LIMIT
          ? { status: 413, body: `{"error":"request of ${request.body.length} bytes is too large"}` }
          : bulkAnswer(bulkIds(request as ReceivedRequest).map(() => 201)),
    });
    const sink = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: receiver.url(''),
        installTemplate: false,
        retry: FAST,
        deadLetter: file,
        log,
      }),
    );
    const events = Array.from({ length: 12 }, (_, n) =>
      n === 6
        ? sampleEvent({ id: 'huge:1', changes: [{ op: 'add', path: '/data/x', to: 'x'.repeat(4_000) }] })
        : sampleEvent({ id: `e${n}:1` }),
    );
    // Delivered together: the sink is idle until the first batch starts, which takes all twelve.
    for (const event of events) sink.deliver(event);
    const { stats } = await sink.close(60_000);
    file.close();

    assert.equal(bulkIds(receiver.requests[0] as ReceivedRequest).length, 12, 'one batch at first');
    const indexed = receiver.requests
      .filter((request) => 'status' in request.reply && request.reply.status === 200)
      .flatMap((request) => bulkIds(request));
    assert.deepEqual(
      indexed,
      events.filter((event) => event.id !== 'huge:1').map((event) => event.id),
      'every other event once, in order',
    );
    assert.deepEqual([stats.delivered, stats.deadLettered, stats.lost], [11, 1, 0]);
    const letters = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string; event: { id: string } });
    assert.deepEqual(
      letters.map((letter) => letter.event.id),
      ['huge:1'],
    );
    assert.match(letters[0]?.reason ?? '', /^HTTP 413 Payload Too Large: .* \(not retried\)$/);
    assert.equal(log.warnings.filter((w) => /sending it in halves/.test(w)).length, 1, 'the split said once');
    assert.equal(log.warnings.filter((w) => /HTTP 413.*not retried/.test(w)).length, 1);
  });

  it('a 401 installing the template is a credentials failure (the batch dead-lettered, said once); a 403 a missing privilege', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-search-401-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    // A cluster that knows no such user: every request is 401.
    const unauthorized = await kit.receiver({
      defaultReply: { status: 401, body: '{"error":"unauthorized (request r-1)"}' },
    });
    const wrong = kit.track(
      new SearchSink({
        name: 'elasticsearch es',
        flavor: 'elasticsearch',
        url: unauthorized.url(''),
        auth: { username: 'kd', password: 'wrong' },
        retry: FAST,
        deadLetter: file,
        log,
      }),
    );
    wrong.deliver(sampleEvent({ id: 'a:1' }));
    await unauthorized.waitForRequests(1);
    wrong.deliver(sampleEvent({ id: 'b:1' }));
    await unauthorized.waitForRequests(2);
    const { stats } = await wrong.close(60_000);
    file.close();
    assert.deepEqual(
      unauthorized.requests.map((request) => `${request.method} ${request.path}`),
      ['PUT /_index_template/kubediff-kubediff', 'PUT /_index_template/kubediff-kubediff'],
      'no bulk request without the credentials; the template tried again with the next batch',
    );
    assert.equal(stats.deadLettered, 2);
    const warnings = log.warnings.filter((w) => /credentials|privilege/.test(w));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(
      warnings[0] ?? '',
      /HTTP 401 Unauthorized: .*: the cluster does not accept kubediff's credentials \(installing the index template\); check username and password, or the API key; not retried\. Event a:1 written to the dead-letter file/,
    );

    // A user without the privilege to manage templates: said so, and the documents indexed anyway.
    const forbidden = await kit.receiver({
      respond: (request) =>
        request.method === 'PUT' ? { status: 403, body: '{"error":"no permission"}' } : bulkAnswer([201]),
    });
    const limitedLog = memoryLog();
    const limited = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: forbidden.url(''),
        retry: FAST,
        log: limitedLog,
      }),
    );
    limited.deliver(sampleEvent({ id: 'c:1' }));
    const report = await limited.close(60_000);
    assert.equal(report.stats.delivered, 1);
    assert.match(
      limitedLog.warnings.join('\n'),
      /could not install the index template kubediff-kubediff \(HTTP 403 Forbidden: .*\); indexing without it: install it yourself \(docs\/sinks\.md\) or give kubediff the manage_index_templates privilege\./,
    );
  });

  it('holds the documents back while the template is refused (a node just started), and sends them once it is in', async () => {
    const log = memoryLog();
    let retries = 0;
    let refusals = 3;
    const receiver = await kit.receiver({
      respond: (request) => {
        if (request.method !== 'PUT') return bulkAnswer(bulkIds(request as ReceivedRequest).map(() => 201));
        if (refusals-- > 0) return { status: 400, body: '{"error":"template after composition is invalid"}' };
        return { status: 200, body: '{"acknowledged":true}' };
      },
    });
    const sink = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: receiver.url(''),
        retry: FAST,
        deliveries: { request: () => {}, retry: () => retries++ },
        log,
      }),
    );
    sink.deliver(sampleEvent({ id: 'a:1' }));
    sink.deliver(sampleEvent({ id: 'b:1' }));
    const { stats } = await sink.close(60_000);
    assert.deepEqual(
      receiver.requests.map((request) => `${request.method} ${request.path.replace(/\?.*/, '')}`),
      [...Array(4).fill('PUT /_index_template/kubediff-kubediff'), 'POST /_bulk'],
      'the template refused three times, installed at the fourth, before the first _bulk',
    );
    assert.deepEqual(bulkIds(receiver.requests[4] as ReceivedRequest), ['a:1', 'b:1']);
    assert.deepEqual([stats.delivered, stats.deadLettered, stats.lost], [2, 0, 0]);
    assert.equal(retries, 3, 'each refusal a retry (kubediff_sink_retries_total)');
    assert.match(
      log.warnings.join('\n'),
      /^opensearch node: HTTP 400 Bad Request: .*template after composition is invalid.* \(installing the index template kubediff-kubediff\); retrying in .* \(attempt 2\); events wait in the queue meanwhile\.$/m,
    );
    assert.doesNotMatch(log.warnings.join('\n'), /indexing without it/);
  });

  it('a template refused on every attempt: the batch goes without it on its last attempt, said once, and later ones without asking', async () => {
    const log = memoryLog();
    const receiver = await kit.receiver({
      respond: (request) =>
        request.method === 'PUT'
          ? {
              status: 400,
              body: '{"error":"index template [kubediff-kubediff] has index patterns matching patterns from existing templates with the same priority"}',
            }
          : bulkAnswer(bulkIds(request as ReceivedRequest).map(() => 201)),
    });
    const sink = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: receiver.url(''),
        retry: FAST,
        log,
      }),
    );
    const bulks = () => receiver.requests.filter((request) => request.method === 'POST');
    sink.deliver(sampleEvent({ id: 'a:1' }));
    await receiver.waitUntil(() => (bulks().length === 1 ? true : undefined));
    sink.deliver(sampleEvent({ id: 'b:1' }));
    await receiver.waitUntil(() => (bulks().length === 2 ? true : undefined));
    const { stats } = await sink.close(60_000);
    assert.deepEqual(
      receiver.requests.map((request) => request.method),
      ['PUT', 'PUT', 'PUT', 'PUT', 'PUT', 'POST', 'POST'],
      'as many attempts as the batch has (5), then no more',
    );
    assert.deepEqual(bulks().map(bulkIds), [['a:1'], ['b:1']]);
    assert.deepEqual([stats.delivered, stats.deadLettered, stats.lost], [2, 0, 0]);
    const warnings = log.warnings.filter((w) => /indexing without it/.test(w));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(
      warnings[0] ?? '',
      /^opensearch node: could not install the index template kubediff-kubediff \(HTTP 400 Bad Request: .*same priority.*, after 5 attempts\); indexing without it: install it yourself \(docs\/sinks\.md\)\.$/,
    );
  });

  it('an outage (503 to everything) is not a refusal: the template is tried again before the documents once the cluster answers', async () => {
    const log = memoryLog();
    const DOWN_FOR = 6; // the five attempts of the first batch: five PUTs, the last one followed by its _bulk
    const receiver = await kit.receiver({
      respond: (request) => {
        if (request.index < DOWN_FOR) return { status: 503, body: '{"error":"cluster_block_exception"}' };
        if (request.method === 'PUT') return { status: 200, body: '{"acknowledged":true}' };
        return bulkAnswer(bulkIds(request as ReceivedRequest).map(() => 201));
      },
    });
    const sink = kit.track(
      new SearchSink({
        name: 'opensearch node',
        flavor: 'opensearch',
        url: receiver.url(''),
        retry: FAST,
        log,
      }),
    );
    sink.deliver(sampleEvent({ id: 'a:1' }));
    await log.waitForLine(/gave up after 5 attempts/);
    sink.deliver(sampleEvent({ id: 'b:1' }));
    await receiver.waitForRequests(DOWN_FOR + 2);
    const { stats } = await sink.close(60_000);
    assert.deepEqual(
      receiver.requests.map((request) => request.method),
      ['PUT', 'PUT', 'PUT', 'PUT', 'PUT', 'POST', 'PUT', 'POST'],
      'the first batch given up as in any outage; the next one installs the template first',
    );
    assert.deepEqual(bulkIds(receiver.requests[7] as ReceivedRequest), ['b:1']);
    assert.deepEqual([stats.delivered, stats.lost], [1, 1]);
    assert.doesNotMatch(log.warnings.join('\n'), /indexing without it/);
  });

  it('names daily indices by the event’s UTC day', () => {
    assert.equal(dayOf('2026-12-31T23:59:59.999Z'), '2026.12.31');
  });
});
