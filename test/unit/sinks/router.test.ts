// The router (filters, isolation between sinks, closing) and the stdout sink's backpressure.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, describe, it, mock } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { compileFilter } from '../../../src/events/filter.ts';
import { logShutdownReport, Router } from '../../../src/sinks/core/router.ts';
import { emptyStats, type Sink, type SinkReport, type SinkStats } from '../../../src/sinks/core/sink.ts';
import { renderJsonLine, StreamOutput } from '../../../src/sinks/core/stream-output.ts';
import { WebhookSink } from '../../../src/sinks/http/webhook/webhook.ts';
import { HttpReceiver } from '../../helpers/http-receiver.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

const cleanup: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** A sink that remembers what it got. */
class Collector implements Sink {
  readonly name: string;
  readonly events: ChangeEvent[] = [];
  private readonly counters = emptyStats();
  constructor(name: string) {
    this.name = name;
  }
  deliver(event: ChangeEvent): void {
    this.counters.accepted++;
    this.counters.delivered++;
    this.events.push(event);
  }
  close(): Promise<SinkReport> {
    return Promise.resolve({ name: this.name, stats: this.stats() });
  }
  stats(): SinkStats {
    return { ...this.counters };
  }
}

let sequence = 0;
function event(namespace: string, type: ChangeEvent['type'] = 'ADDED'): ChangeEvent {
  sequence++;
  return {
    id: `u${sequence}:${sequence}`,
    type,
    time: new Date().toISOString(),
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace,
      name: `cm-${sequence}`,
      uid: `u${sequence}`,
      resourceVersion: String(sequence),
    },
  };
}

describe('router', () => {
  it('gives each sink the events its filter accepts, counts the rest, and explains why', async () => {
    const all = new Collector('all');
    const shop = new Collector('shop only');
    const router = new Router(
      [{ sink: all }, { sink: shop, filter: compileFilter({ namespaces: ['shop'], types: ['ADDED'] }) }],
      memoryLog(),
    );
    const events = [event('shop'), event('web'), event('shop', 'DELETED'), event('shop')];
    for (const e of events) router.deliver(e);
    assert.deepEqual(all.events, events);
    assert.deepEqual(shop.events, [events[0], events[3]]);
    assert.deepEqual(router.explain(events[1]!), [
      { sink: 'all', verdict: { deliver: true, reason: 'the sink has no filter' } },
      {
        sink: 'shop only',
        verdict: { deliver: false, rule: 'namespaces', reason: 'namespace web is not in [shop]' },
      },
    ]);
    const reports = await router.close(100);
    assert.deepEqual(
      reports.map((r) => [r.name, r.filtered]),
      [
        ['all', 0],
        ['shop only', 2],
      ],
    );
  });

  it('keeps a throwing sink from affecting the others, and says so once', () => {
    const broken: Sink = {
      name: 'broken',
      deliver: () => {
        throw new Error('boom');
      },
      close: async () => ({ name: 'broken', stats: emptyStats() }),
      stats: emptyStats,
    };
    const good = new Collector('good');
    const log = memoryLog();
    const router = new Router([{ sink: broken }, { sink: good }], log);
    for (let i = 0; i < 3; i++) router.deliver(event('shop'));
    assert.equal(good.events.length, 3);
    // Reported once, with the object's identity; the others only counted (and shown with --debug).
    const warnings = log.lines.filter((line) => line.startsWith('warn: '));
    assert.equal(warnings.length, 1, log.lines.join('\n'));
    assert.match(
      warnings[0] ?? '',
      /^warn: broken accepting the event failed for configmaps shop\/cm-\d+ \(uid u\d+, resourceVersion \d+\): Error: boom; that sink does not get it; the other sinks do\./,
    );
  });

  it('never waits for a slow sink: a hanging webhook delays neither the caller nor stdout', async () => {
    const receiver = await HttpReceiver.start({ defaultReply: { hang: true } });
    cleanup.push(() => receiver.close());
    const webhook = new WebhookSink({ url: receiver.url('/hook'), log: memoryLog(), timeoutMs: 60_000 });
    const out = new PassThrough();
    let written = '';
    out.on('data', (chunk: Buffer) => {
      written += chunk.toString();
    });
    const stdout = new StreamOutput({ name: 'stdout', stream: out, render: renderJsonLine });
    const router = new Router([{ sink: webhook }, { sink: stdout }], memoryLog());
    for (let i = 0; i < 2000; i++) router.deliver(event('shop'));
    // Every event is queued by both sinks before the webhook's receiver has even seen a request.
    assert.equal(webhook.stats().accepted, 2000);
    assert.equal(stdout.stats().accepted, 2000);
    await receiver.waitForRequests(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(written.trim().split('\n').length, 2000);
    const reports = await router.close(200);
    const hook = reports.find((r) => r.name.startsWith('webhook'))!;
    assert.equal(hook.stats.accepted, 2000);
    assert.equal(hook.stats.lost, 2000, 'no dead-letter file: counted as lost');
    const log = memoryLog();
    logShutdownReport(reports, log);
    assert.deepEqual(log.lines, [
      `warn: webhook http://127.0.0.1:${receiver.port}/…: 2,000 events not delivered (2,000 events lost); 0 events delivered.`,
      'debug: stdout: 2,000 events delivered.',
    ]);
  });

  it('serializes an event once for every sink that sends it as JSON (stdout, webhook)', async () => {
    const receiver = await HttpReceiver.start();
    cleanup.push(() => receiver.close());
    const stdout = new PassThrough();
    let written = '';
    stdout.on('data', (chunk: Buffer) => {
      written += chunk.toString();
    });
    const router = new Router(
      [
        { sink: new StreamOutput({ name: 'stdout', stream: stdout, render: renderJsonLine }) },
        { sink: new WebhookSink({ url: receiver.url('/hook'), log: memoryLog() }) },
      ],
      memoryLog(),
    );
    const events = [event('shop'), event('web')];
    let serialized = 0;
    for (const sent of events) {
      const plain = { ...sent };
      Object.defineProperty(sent, 'toJSON', {
        value: () => {
          serialized++;
          return plain;
        },
      });
      router.deliver(sent);
    }
    await router.close(5_000);
    assert.equal(serialized, events.length);
    const expected = events.map((sent) => JSON.stringify(sent));
    assert.deepEqual(written.trimEnd().split('\n'), expected);
    assert.deepEqual(
      receiver.requests.map((request) => request.body),
      expected,
    );
  });

  it('closes within the timeout (plus a short grace) even when a sink never finishes closing', async () => {
    const stuck: Sink = {
      name: 'stuck',
      deliver: () => {},
      close: () => new Promise(() => {}),
      stats: () => ({ ...emptyStats(), accepted: 1, pending: 1 }),
    };
    const router = new Router([{ sink: stuck }, { sink: new Collector('fine') }], memoryLog(), {
      closeGraceMs: 200,
    });
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const closing = router.close(100);
      // At the timeout plus the grace, the stuck sink is reported as it stands.
      mock.timers.tick(300);
      const reports = await closing;
      assert.equal(reports[0]!.stats.pending, 1);
    } finally {
      mock.timers.reset();
    }
  });

  it('reports dead letters with the file, and digests, in the shutdown summary', () => {
    const log = memoryLog();
    logShutdownReport(
      [
        {
          name: 'slack https://hooks.slack.com/…',
          filtered: 0,
          deadLetterFile: '/var/dead.jsonl',
          stats: {
            ...emptyStats(),
            accepted: 60,
            delivered: 10,
            summarized: 47,
            digests: 2,
            deadLettered: 3,
          },
        },
      ],
      log,
    );
    assert.deepEqual(log.lines, [
      'warn: slack https://hooks.slack.com/…: 3 events not delivered (3 events written to the dead-letter file /var/dead.jsonl); 10 events delivered, 47 more in 2 digests.',
    ]);
  });
});

describe('stdout sink', () => {
  it('asks the watch to pause while the reader lags, and resumes it once the output drains', async () => {
    const out = new PassThrough({ highWaterMark: 256 });
    const log = memoryLog();
    const stdout = new StreamOutput({
      name: 'stdout',
      stream: out,
      render: renderJsonLine,
      pauseAtBytes: 2_000,
      log,
    });
    assert.equal(stdout.flowControl(), undefined, 'no pause while there is room');
    for (let i = 0; i < 50; i++) stdout.deliver(event('shop'));
    const pause = stdout.flowControl();
    assert.ok(pause instanceof Promise, 'a pause once 2,000 bytes wait');
    assert.equal(stdout.flowControl(), pause, 'every informer waits for the same drain');
    let resumed = false;
    void pause.then(() => {
      resumed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(resumed, false, 'still paused while nobody reads');
    let lines = 0;
    out.on('data', (chunk: Buffer) => {
      lines += chunk.toString().split('\n').length - 1;
    });
    await pause;
    assert.equal(stdout.flowControl(), undefined);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(lines, 50);
    const report = await stdout.close(100);
    assert.equal(report.stats.delivered, 50);
    assert.ok(log.lines.some((line) => /stdout is not keeping up .* pausing the watch/.test(line)));
  });

  it('ends a pause when the stream goes away, and counts what could not be written', async () => {
    const out = new PassThrough({ highWaterMark: 16 });
    let closedWith: string | undefined;
    const stdout = new StreamOutput({
      name: 'stdout',
      stream: out,
      render: renderJsonLine,
      pauseAtBytes: 100,
      onClosed: (error) => {
        closedWith = error.code;
      },
    });
    for (let i = 0; i < 10; i++) stdout.deliver(event('shop'));
    const pause = stdout.flowControl();
    assert.ok(pause);
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    out.destroy(epipe);
    await pause;
    assert.equal(closedWith, 'EPIPE');
    stdout.deliver(event('shop'));
    const report = await stdout.close(100);
    assert.equal(report.stats.accepted, 11);
    assert.equal(report.stats.lost + report.stats.pending + report.stats.delivered, 11);
    assert.ok(report.stats.lost >= 1);
  });
});
