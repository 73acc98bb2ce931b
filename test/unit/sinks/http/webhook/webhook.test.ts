// The webhook sink against real HTTP servers on loopback (test/helpers/http-receiver.ts).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { ChangeEvent } from '../../../../../src/events/event.ts';
import { DeadLetterFile, type DeadLetterRecord } from '../../../../../src/sinks/core/dead-letter.ts';
import type { DigestPayload } from '../../../../../src/sinks/core/digest.ts';
import { verifySignature } from '../../../../../src/sinks/http/webhook/signature.ts';
import { WebhookSink, type WebhookSinkOptions } from '../../../../../src/sinks/http/webhook/webhook.ts';
import type { Logger } from '../../../../../src/util/log.ts';
import { memoryLog, sinkTestKit } from '../../../../helpers/sink-test.ts';

const kit = sinkTestKit<WebhookSink>();
const receiver = kit.receiver;

const FAST_RETRY = { initialDelayMs: 40, maxDelayMs: 150 };

function sink(options: Partial<WebhookSinkOptions> & { url: string; log?: Logger }): WebhookSink {
  const created = new WebhookSink({ log: memoryLog(), retry: FAST_RETRY, ...options });
  return kit.track(created);
}

let sequence = 0;
function event(name = 'settings', type: ChangeEvent['type'] = 'UPDATED'): ChangeEvent {
  sequence++;
  return {
    id: `uid-${name}:${sequence}`,
    type,
    time: new Date().toISOString(),
    cluster: 'test',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name,
      uid: `uid-${name}`,
      resourceVersion: String(sequence),
    },
    ...(type === 'UPDATED'
      ? { changes: [{ op: 'replace' as const, path: '/data/n', from: sequence - 1, to: sequence }] }
      : {}),
  };
}

async function tempFile(name: string): Promise<string> {
  return path.join(await mkdtemp(path.join(tmpdir(), 'kubediff-sink-')), name);
}

async function deadLetters(file: string): Promise<DeadLetterRecord[]> {
  const text = await readFile(file, 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DeadLetterRecord);
}

describe('webhook sink', () => {
  it('POSTs each event once, in order, as the event JSON of the contract, with its headers', async () => {
    const server = await receiver();
    const hook = sink({ url: server.url('/hook?token=s3cret'), headers: { 'x-team': 'sre' } });
    const events = Array.from({ length: 20 }, (_, i) => event(`cm-${i % 3}`));
    for (const e of events) hook.deliver(e);
    await server.waitForRequests(20);
    const report = await hook.close(1000);
    assert.deepEqual(server.jsonBodies(), events);
    const first = server.requests[0]!;
    assert.equal(first.method, 'POST');
    assert.equal(first.path, '/hook?token=s3cret');
    assert.equal(first.headers['content-type'], 'application/json');
    assert.equal(first.headers['x-kubediff-event-id'], events[0]!.id);
    assert.equal(first.headers['x-kubediff-kind'], 'event');
    assert.equal(first.headers['x-team'], 'sre');
    assert.equal(first.headers['user-agent'], 'kubediff');
    assert.equal(server.requests.length, 20);
    assert.deepEqual(report.stats, {
      accepted: 20,
      delivered: 20,
      summarized: 0,
      deadLettered: 0,
      lost: 0,
      pending: 0,
      digests: 0,
      overflows: 0,
    });
    assert.equal(report.name, `webhook http://127.0.0.1:${server.port}/…`);
  });

  it('signs the body so that a receiver can verify it; every retry is signed anew', async () => {
    const server = await receiver();
    server.script({ status: 503 });
    const hook = sink({ url: server.url('/hook'), secret: 'topsecret' });
    const e = event();
    hook.deliver(e);
    const [failed, delivered] = await server.waitForRequests(2);
    for (const request of [failed!, delivered!]) {
      const header = request.headers['x-kubediff-signature'] as string;
      assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
      assert.equal(verifySignature('topsecret', header, request.body), true);
      assert.equal(verifySignature('wrong', header, request.body), false);
      assert.equal(verifySignature('topsecret', header, request.body.replace('settings', 'settingz')), false);
    }
    assert.equal(delivered!.body, failed!.body, 'a retry sends the same body (same event id)');
    assert.equal(delivered!.headers['x-kubediff-attempt'], '2');
    // A replayed request is refused once its timestamp is old.
    const header = delivered!.headers['x-kubediff-signature'] as string;
    const t = Number(/t=(\d+)/.exec(header)?.[1]);
    assert.equal(verifySignature('topsecret', header, delivered!.body, { nowSeconds: t + 301 }), false);
  });

  it('honours Retry-After on 429, retries a 500, then delivers exactly once', async () => {
    const server = await receiver();
    server.script({ status: 429, headers: { 'retry-after': '1' } }, { status: 500, body: 'oops' });
    const log = memoryLog();
    const hook = sink({ url: server.url('/hook'), log, secret: 's' });
    hook.deliver(event());
    const requests = await server.waitForRequests(3);
    const [first, second, third] = requests;
    assert.ok(second!.at - first!.at >= 950, `waited ${second!.at - first!.at} ms after Retry-After: 1`);
    assert.equal(third!.reply && 'status' in third!.reply && third!.reply.status, 200);
    // A later event is the sentinel: the next request is its own, nothing more came after the success.
    const sentinel = event('sentinel');
    hook.deliver(sentinel);
    const fourth = (await server.waitForRequests(4))[3];
    assert.equal(fourth!.headers['x-kubediff-event-id'], sentinel.id);
    const report = await hook.close(1000);
    assert.equal(server.requests.length, 4);
    assert.equal(report.stats.delivered, 2);
    assert.ok(
      log.warnings.some((w) => /HTTP 429 Too Many Requests.*Retry-After 1s.*retrying/.test(w)),
      log.lines.join('\n'),
    );
    assert.ok(log.lines.some((l) => /delivering again/.test(l)));
  });

  it('keeps the order of each object through retries: later events wait behind the one being retried', async () => {
    const server = await receiver();
    server.script({ status: 503 }, { close: true });
    const hook = sink({ url: server.url('/hook') });
    const events = [event('a'), event('b'), event('a'), event('b'), event('a')];
    for (const e of events) hook.deliver(e);
    await server.waitForRequests(7);
    await hook.close(1000);
    const accepted = server.requests
      .filter((r) => 'status' in r.reply && r.reply.status === 200)
      .map((r) => (JSON.parse(r.body) as ChangeEvent).id);
    assert.deepEqual(
      accepted,
      events.map((e) => e.id),
    );
  });

  it('retries 408, 502, a dropped connection and a receiver that hangs past the timeout', async () => {
    const server = await receiver();
    server.script({ status: 408 }, { status: 502 }, { close: true }, { hang: true });
    const hook = sink({ url: server.url('/hook'), timeoutMs: 300 });
    const e = event();
    hook.deliver(e);
    const requests = await server.waitForRequests(5, 10_000);
    assert.ok(requests.every((request) => request.body === JSON.stringify(e)));
    const report = await hook.close(1000);
    assert.equal(report.stats.delivered, 1);
    assert.equal(server.requests.length, 5);
  });

  it('does not retry other 4xx: reports the status and a body excerpt once, dead-letters the events', async () => {
    const server = await receiver({
      defaultReply: {
        status: 400,
        body: `{"error":"schema mismatch: field x is required"}${' pad'.repeat(200)}`,
      },
    });
    const file = await tempFile('dead.jsonl');
    const log = memoryLog();
    const deadLetter = DeadLetterFile.open(file, log);
    const hook = sink({ url: server.url('/secret/path/abc'), log, deadLetter });
    const events = [event('a'), event('b'), event('c')];
    for (const e of events) hook.deliver(e);
    await server.waitForRequests(3);
    const report = await hook.close(1000);
    deadLetter.close();
    assert.equal(server.requests.length, 3, 'each event tried once');
    const refusals = log.warnings.filter((w) => w.includes('HTTP 400'));
    assert.equal(refusals.length, 1, log.lines.join('\n'));
    assert.match(
      refusals[0]!,
      /HTTP 400 Bad Request: "\{\\"error\\":\\"schema mismatch: field x is required\\"\}/,
    );
    assert.match(refusals[0]!, /…"; not retried\. Event uid-a:\d+ written to the dead-letter file/);
    assert.ok(!log.lines.join('\n').includes('/secret/path'), 'the URL path never appears in logs');
    assert.equal(report.stats.deadLettered, 3);
    const records = await deadLetters(file);
    assert.deepEqual(
      records.map((r) => r.event?.id),
      events.map((e) => e.id),
    );
    assert.match(records[0]!.reason, /HTTP 400 Bad Request.*\(not retried\)/);
    assert.equal(records[0]!.sink, `webhook http://127.0.0.1:${server.port}/…`);
  });

  it('dead-letters an event that exhausts its retries, then goes on with the next', async () => {
    const server = await receiver();
    server.script({ status: 500 }, { status: 500 }, { status: 500 });
    const file = await tempFile('dead.jsonl');
    const log = memoryLog();
    const deadLetter = DeadLetterFile.open(file, log);
    const hook = sink({
      url: server.url('/hook'),
      log,
      deadLetter,
      retry: { ...FAST_RETRY, maxAttempts: 3 },
    });
    const lost = event('lost');
    const next = event('next');
    hook.deliver(lost);
    hook.deliver(next);
    await server.waitForRequests(4);
    const report = await hook.close(1000);
    deadLetter.close();
    assert.deepEqual(
      server.requests.map((r) => (JSON.parse(r.body) as ChangeEvent).id),
      [lost.id, lost.id, lost.id, next.id],
    );
    const records = await deadLetters(file);
    assert.equal(records.length, 1);
    assert.equal(records[0]!.event?.id, lost.id);
    assert.match(records[0]!.reason, /HTTP 500 Internal Server Error.*gave up after 3 attempts/);
    assert.equal(report.stats.deadLettered, 1);
    assert.equal(report.stats.delivered, 1);
    assert.ok(log.warnings.some((w) => /gave up after 3 attempts.*written to the dead-letter file/.test(w)));
  });

  it('sends JSON arrays when batching, in order, a partial batch after maxWaitMs', async () => {
    const server = await receiver();
    const hook = sink({ url: server.url('/logs'), batch: { maxEvents: 10, maxWaitMs: 150 } });
    const events = Array.from({ length: 25 }, (_, i) => event(`cm-${i}`));
    const lastDelivered = Date.now();
    for (const e of events) hook.deliver(e);
    const requests = await server.waitForRequests(3);
    const bodies = requests.map((r) => JSON.parse(r.body) as ChangeEvent[]);
    assert.deepEqual(
      bodies.map((b) => b.length),
      [10, 10, 5],
    );
    assert.deepEqual(bodies.flat(), events);
    assert.equal(requests[0]!.headers['x-kubediff-kind'], 'batch');
    assert.equal(requests[0]!.headers['x-kubediff-batch-size'], '10');
    // A lower bound only (a timer never fires early): the partial batch left no sooner than maxWaitMs after the
    // last event came; how soon the full batches left depends on the machine.
    assert.ok(requests[2]!.at - lastDelivered >= 150, 'the partial batch waited for more');
    const report = await hook.close(1000);
    assert.equal(report.stats.delivered, 25);
  });

  it('keeps a batch within maxBytes, sends one refused as too large (413) again in halves, and dead-letters only an event too large alone', async () => {
    // The receiver takes bodies of at most 3,000 bytes, as a proxy in front of a collector would.
    const server = await receiver({
      respond: ({ body }) => (Buffer.byteLength(body) > 3000 ? { status: 413 } : undefined),
    });
    const file = await tempFile('dead.jsonl');
    const log = memoryLog();
    const deadLetter = DeadLetterFile.open(file, log);
    const events = Array.from({ length: 12 }, (_, i) => event(`cm-${i}`));
    // One event far over what the receiver takes: alone in its request after the splits, and refused.
    const big = events[5] as ChangeEvent & { changes: { to: unknown }[] };
    (big.changes[0] as { to: unknown }).to = 'x'.repeat(5000);
    const hook = sink({
      url: server.url('/logs'),
      log,
      deadLetter,
      // 8 KB: the first batch holds the big event and more, over the receiver's 3,000 bytes.
      batch: { maxEvents: 100, maxBytes: 8000, maxWaitMs: 50 },
    });
    for (const e of events) hook.deliver(e);
    const report = await hook.close(5000);
    const taken = server.requests
      .filter((r) => r.reply && 'status' in r.reply && r.reply.status === 200)
      .flatMap((r) => (JSON.parse(r.body) as ChangeEvent[]).map((e) => e.id));
    assert.deepEqual(
      taken,
      events.filter((e) => e !== big).map((e) => e.id),
      'every other event delivered, in order',
    );
    assert.ok(
      server.requests.every((r) => Buffer.byteLength(r.body) <= 8000 + 2 + 12),
      'no request over maxBytes (with the array around the events)',
    );
    assert.equal(report.stats.delivered, 11);
    assert.equal(report.stats.deadLettered, 1);
    const [record] = await deadLetters(file);
    assert.equal(record?.event?.id, big.id);
    assert.match(record?.reason ?? '', /HTTP 413/);
    assert.equal(
      log.warnings.filter((w) => w.includes('sending it in halves')).length,
      1,
      'the split is said once',
    );
  });

  it('folds what a full queue cannot hold into a digest: every event delivered or summarized, none lost', async () => {
    const server = await receiver({ defaultReply: { status: 200, delayMs: 100 } });
    const file = await tempFile('dead.jsonl');
    const log = memoryLog();
    const deadLetter = DeadLetterFile.open(file, log);
    const hook = sink({
      url: server.url('/hook'),
      log,
      deadLetter,
      queue: { capacity: 5, digestRetain: 3 },
    });
    const events = Array.from({ length: 50 }, (_, i) => event(`cm-${i}`, 'ADDED'));
    for (const e of events) hook.deliver(e);
    const report = await hook.close(5000);
    deadLetter.close();
    const bodies = server.jsonBodies() as (ChangeEvent | DigestPayload)[];
    const individual = bodies.filter((b): b is ChangeEvent => !('kind' in b));
    const digests = bodies.filter((b): b is DigestPayload => 'kind' in b && b.kind === 'digest');
    assert.ok(digests.length >= 1, 'a digest was sent');
    const accounted = individual.length + digests.reduce((sum, d) => sum + d.count, 0);
    assert.equal(accounted, 50, 'every event delivered individually or counted in a digest');
    assert.equal(new Set(individual.map((e) => e.id)).size, individual.length, 'no duplicates');
    assert.match(digests[0]!.summary, /^\d+ changes in shop: \d+ configmaps added$/);
    assert.equal(digests[0]!.events.length, 3, 'the most recent events in full');
    assert.equal(report.stats.delivered + report.stats.summarized, 50);
    assert.equal(report.stats.lost + report.stats.pending, 0);
    // The events a digest could not keep in full are in the dead-letter file, so none is lost.
    const inFull = new Set([
      ...individual.map((e) => e.id),
      ...digests.flatMap((d) => d.events.map((e) => e.id)),
    ]);
    const records = await deadLetters(file);
    for (const record of records) inFull.add(record.event?.id ?? '');
    for (const e of events) assert.ok(inFull.has(e.id), `${e.id} delivered, in a digest, or dead-lettered`);
    assert.ok(
      log.warnings.some((w) =>
        /5 events \(\d+(\.\d)? KiB\) waiting.*summarized in a digest.*written in full to/.test(w),
      ),
    );
  });

  it('on close, delivers what is queued within the timeout', async () => {
    const server = await receiver({ defaultReply: { status: 200, delayMs: 20 } });
    const hook = sink({ url: server.url('/hook') });
    const events = Array.from({ length: 10 }, (_, i) => event(`cm-${i}`));
    for (const e of events) hook.deliver(e);
    const report = await hook.close(5000);
    assert.equal(report.stats.delivered, 10);
    assert.deepEqual(server.jsonBodies(), events);
  });

  it('on close, gives up at the deadline on a receiver that hangs, and accounts for every event', async () => {
    const server = await receiver({ defaultReply: { hang: true } });
    const file = await tempFile('dead.jsonl');
    const deadLetter = DeadLetterFile.open(file, memoryLog());
    const hook = sink({ url: server.url('/hook'), deadLetter, timeoutMs: 30_000 });
    for (let i = 0; i < 4; i++) hook.deliver(event(`cm-${i}`));
    await server.waitForRequests(1);
    const started = Date.now();
    const report = await hook.close(400);
    deadLetter.close();
    // Not before the deadline; and at it, not at the 30 s request timeout: the reasons below say so.
    assert.ok(Date.now() - started >= 350, 'gave up before the deadline');
    assert.equal(report.stats.deadLettered, 4);
    assert.equal(report.stats.pending, 0);
    const records = await deadLetters(file);
    assert.match(records[0]!.reason, /in flight when the shutdown timeout ran out/);
    assert.match(records[1]!.reason, /not delivered within the shutdown timeout/);
  });

  it('on close, does not wait for a retry that would come after the deadline', async () => {
    const server = await receiver({ defaultReply: { status: 503, headers: { 'retry-after': '30' } } });
    const file = await tempFile('dead.jsonl');
    const deadLetter = DeadLetterFile.open(file, memoryLog());
    const hook = sink({ url: server.url('/hook'), deadLetter });
    hook.deliver(event());
    await server.waitForRequests(1);
    const report = await hook.close(3000);
    deadLetter.close();
    assert.equal(report.stats.deadLettered, 1);
    // Given up at once, not at the deadline (that would be "not delivered within the shutdown timeout").
    const [record] = await deadLetters(file);
    assert.match(record!.reason, /the next retry was due after the shutdown timeout/);
    assert.equal(server.requests.length, 1, 'no retry');
  });

  it('goes through the proxy in HTTP_PROXY, except to hosts in NO_PROXY', async () => {
    const forwarded: string[] = [];
    const proxy = createServer((req, res) => {
      forwarded.push(`${req.method} ${req.url}`);
      const target = new URL(req.url ?? '');
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    const server = await receiver();
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY };
    try {
      process.env.HTTP_PROXY = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      delete process.env.NO_PROXY;
      const proxied = sink({ url: server.url('/via-proxy') });
      proxied.deliver(event());
      await server.waitForRequests(1);
      process.env.NO_PROXY = '127.0.0.1';
      const direct = sink({ url: server.url('/direct') });
      direct.deliver(event());
      await server.waitForRequests(2);
      assert.deepEqual(forwarded, [`POST ${server.url('/via-proxy')}`]);
      assert.equal((await proxied.close(1000)).stats.delivered, 1);
      assert.equal((await direct.close(1000)).stats.delivered, 1);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('retries while the receiver refuses connections, and delivers once it is back', async () => {
    const gone = await receiver();
    const port = gone.port;
    await gone.close();
    const log = memoryLog();
    const hook = sink({ url: `http://127.0.0.1:${port}/hook`, log });
    const e = event();
    hook.deliver(e);
    await log.waitForLine(/^warn: .*connection refused; retrying/);
    const back = await receiver({ port });
    await back.waitForRequests(1, 5000);
    assert.deepEqual(back.jsonBodies(), [e]);
    const report = await hook.close(1000);
    assert.equal(report.stats.delivered, 1);
  });
});
