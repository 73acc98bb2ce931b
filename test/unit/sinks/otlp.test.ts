// The OTLP sink's answers and records, against a loopback receiver (the sink against a real Collector is
// test/integration/sinks-otlp.test.ts): 503 is retried, 400 is final (dead-lettered), a partial success
// dead-letters its batch with the count of rejected records; headers and the logs URL; the mapping of
// events to records (otlp-records.ts) for the kinds the semantic conventions name, and for custom kinds.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DeadLetterFile } from '../../../src/sinks/core/dead-letter.ts';
import { OtlpSink, otlpLogsUrl } from '../../../src/sinks/logs/otlp/otlp.ts';
import { eventRecord } from '../../../src/sinks/logs/otlp/records.ts';
import { sampleEvent } from '../../helpers/events.ts';
import type { Reply } from '../../helpers/http-receiver.ts';
import { memoryLog, sinkTestKit } from '../../helpers/sink-test.ts';

const kit = sinkTestKit<OtlpSink>();
const FAST = { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 5 };

describe('OTLP sink', () => {
  it('retries 503, gives up on 400 (dead-lettered), and dead-letters a partial success with its count', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-otlp-unit-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const answers: Reply[] = [
      { status: 503, headers: { 'retry-after': '0' } },
      { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' },
      { status: 400, body: 'bad data' },
      {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"partialSuccess":{"rejectedLogRecords":"1","errorMessage":"too old"}}',
      },
    ];
    const receiver = await kit.receiver({ respond: () => answers.shift() });
    const sink = kit.track(
      await OtlpSink.create({
        name: 'otlp collector',
        endpoint: receiver.url('/otlp'),
        protocol: 'http/json',
        headers: { 'x-scope-orgid': 'tenant-1' },
        retry: FAST,
        deadLetter: file,
        log,
      }),
    );
    sink.deliver(sampleEvent({ id: 'a:1' }));
    await receiver.waitForRequests(2);
    sink.deliver(sampleEvent({ id: 'b:1' }));
    await receiver.waitForRequests(3);
    sink.deliver(sampleEvent({ id: 'c:1' }));
    sink.deliver(sampleEvent({ id: 'd:1' }));
    const { stats } = await sink.close(5_000);
    file.close();

    assert.equal(receiver.requests[0]?.path, '/otlp/v1/logs');
    assert.equal(receiver.requests[0]?.headers['content-type'], 'application/json');
    assert.equal(receiver.requests[0]?.headers['x-scope-orgid'], 'tenant-1');
    assert.equal(receiver.requests.length, 4);
    // a: delivered on the retry; b: refused; c and d: one of the two rejected.
    assert.deepEqual(stats, {
      accepted: 4,
      delivered: 2,
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
      .map((line) => JSON.parse(line) as { reason: string; event: { id: string } });
    assert.deepEqual(
      letters.map((letter) => letter.event.id),
      ['b:1', 'c:1', 'd:1'],
    );
    assert.match(
      letters[1]?.reason ?? '',
      /rejected 1 event of these 2 events without saying which: too old/,
    );
    assert.match(log.warnings.join('\n'), /HTTP 400 Bad Request: "bad data"; not retried/);
  });

  it('says each refusal once per status, whatever text the receiver puts in each answer', async () => {
    const log = memoryLog();
    // A request id in every answer, as many receivers put in their error bodies.
    const answers: Reply[] = [
      { status: 400, body: 'invalid record (request r-1)' },
      { status: 400, body: 'invalid record (request r-2)' },
      { status: 403, body: 'forbidden (request r-3)' },
      { status: 503, body: 'overloaded (request r-4)' },
      { status: 503, body: 'overloaded (request r-5)' },
    ];
    const receiver = await kit.receiver({ respond: () => answers.shift() });
    const sink = kit.track(
      await OtlpSink.create({
        name: 'otlp collector',
        endpoint: receiver.url('/'),
        retry: { ...FAST, maxAttempts: 1 },
        log,
      }),
    );
    for (const [n, id] of ['a:1', 'b:1', 'c:1', 'd:1', 'e:1'].entries()) {
      sink.deliver(sampleEvent({ id }));
      await receiver.waitForRequests(n + 1);
    }
    const { stats } = await sink.close(60_000);
    assert.equal(stats.lost, 5);
    assert.deepEqual(
      log.warnings.filter((w) => /not retried|gave up/.test(w)).map((w) => w.replace(/^otlp \S+ /, '')),
      [
        'HTTP 400 Bad Request: "invalid record (request r-1)"; not retried. Event a:1 not delivered.',
        'HTTP 403 Forbidden: "forbidden (request r-3)"; not retried. Event c:1 not delivered.',
        'HTTP 503 Service Unavailable: "overloaded (request r-4)"; gave up after 1 attempt. Event d:1 not delivered.',
      ],
    );
  });

  it('sends a batch answered 413 again in halves', async () => {
    const log = memoryLog();
    const ids = (body: string) =>
      (
        JSON.parse(body) as {
          resourceLogs: {
            scopeLogs: {
              logRecords: {
                body: { kvlistValue: { values: { key: string; value: { stringValue?: string } }[] } };
              }[];
            }[];
          }[];
        }
      ).resourceLogs.flatMap((r) =>
        r.scopeLogs.flatMap((scope) =>
          scope.logRecords.map(
            (record) => record.body.kvlistValue.values.find((v) => v.key === 'id')?.value.stringValue,
          ),
        ),
      );
    // A receiver that takes one record per request.
    const receiver = await kit.receiver({
      respond: (request) => (ids(request.body).length > 1 ? { status: 413 } : { status: 200, body: '{}' }),
    });
    const sink = kit.track(
      await OtlpSink.create({
        name: 'otlp collector',
        endpoint: receiver.url('/'),
        protocol: 'http/json',
        retry: FAST,
        log,
      }),
    );
    for (const id of ['a:1', 'b:1', 'c:1']) sink.deliver(sampleEvent({ id }));
    const { stats } = await sink.close(60_000);
    assert.deepEqual(
      receiver.requests.map((request) => ids(request.body)),
      [['a:1', 'b:1', 'c:1'], ['a:1', 'b:1'], ['a:1'], ['b:1'], ['c:1']],
    );
    assert.equal(stats.delivered, 3);
  });

  it('adds /v1/logs to a base endpoint, and keeps a full logs URL', () => {
    assert.equal(otlpLogsUrl('http://collector:4318').href, 'http://collector:4318/v1/logs');
    assert.equal(otlpLogsUrl('http://loki:3100/otlp/').href, 'http://loki:3100/otlp/v1/logs');
    assert.equal(otlpLogsUrl('https://x/v1/logs').href, 'https://x/v1/logs');
  });

  it('names built-in kinds by the semantic conventions, and custom kinds of the same name not', () => {
    const deployment = eventRecord(
      sampleEvent({
        by: { user: { username: 'alice' }, managers: [{ manager: 'kubectl', operation: 'Update' }] },
      }),
    );
    assert.equal(deployment.attributes['k8s.deployment.name'], 'web');
    assert.equal(deployment.attributes['k8s.deployment.uid'], 'u1');
    assert.equal(deployment.attributes['kubediff.by.user'], 'alice');
    assert.deepEqual(deployment.attributes['kubediff.by.managers'], ['kubectl']);
    assert.deepEqual(deployment.resource, {
      'service.name': 'kubediff',
      'k8s.cluster.name': 'prod',
      'k8s.namespace.name': 'shop',
    });
    const custom = eventRecord(
      sampleEvent({
        object: {
          apiVersion: 'example.com/v1',
          kind: 'Deployment',
          resource: 'deployments',
          name: 'x',
          uid: 'u9',
          resourceVersion: '1',
        },
      }),
    );
    assert.equal(custom.attributes['k8s.deployment.name'], undefined);
    assert.equal(custom.attributes['kubediff.object.resource'], 'deployments.example.com');
    const deleted = eventRecord(sampleEvent({ type: 'DELETED', changes: undefined }));
    assert.deepEqual([deleted.severityNumber, deleted.severityText], [13, 'WARN']);
    assert.equal(deleted.attributes['kubediff.changes.paths'], undefined);
  });
});
