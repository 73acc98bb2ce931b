// A webhook's body formats in isolation (end to end: test/integration/sinks-webhook-formats.test.ts):
// CloudEvents attributes for cluster-scoped objects and names that need encoding, a layout that fails or
// runs over its limits (the event dead-lettered, said once, the sink going on), its input and its failure
// messages bounded, a layout that would run for hours (a regular expression that backtracks) stopped in its
// thread while another sink delivers, and layouts refused at config time with their position.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DeadLetterFile } from '../../../../../src/sinks/core/dead-letter.ts';
import { binaryHeaders, eventAttributes } from '../../../../../src/sinks/http/webhook/cloudevents.ts';
import { layoutProblem } from '../../../../../src/sinks/http/webhook/layout.ts';
import { LayoutThread } from '../../../../../src/sinks/http/webhook/layout-thread.ts';
import { WebhookSink } from '../../../../../src/sinks/http/webhook/webhook.ts';
import { sampleEvent } from '../../../../helpers/events.ts';
import { memoryLog, sinkTestKit } from '../../../../helpers/sink-test.ts';

const kit = sinkTestKit<WebhookSink>();

describe('webhook formats', () => {
  it('CloudEvents: a cluster-scoped object’s subject, the source without a cluster, header values encoded', () => {
    const event = sampleEvent({
      cluster: undefined,
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        resource: 'namespaces',
        name: 'shop',
        uid: 'u',
        resourceVersion: '1',
        namespace: undefined,
      },
    });
    const attributes = eventAttributes(event);
    assert.equal(attributes.subject, '/api/v1/namespaces/shop');
    assert.equal(attributes.source, 'kubediff');
    assert.equal(eventAttributes(sampleEvent({ cluster: 'prod eu/1' })).source, 'kubediff/prod%20eu%2F1');
    const headers = binaryHeaders({ ...attributes, subject: '/x/ü\nevil: 1' });
    assert.equal(headers['ce-subject'], '/x/%C3%BC%0Aevil: 1');
    assert.equal(headers['content-type'], 'application/json');
  });

  it('a layout that fails or runs over its time: that event dead-lettered, said once; the next delivered', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-layout-unit-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const receiver = await kit.receiver();
    // Loops for ever on DELETED; an error for a name that is not a number; a body otherwise.
    const layout = new LayoutThread(
      'type = "DELETED" ? ($f := function($x){ $f($x + 1) }; $f(0)) : { "n": $number(object.name) }',
    );
    const sink = kit.track(
      new WebhookSink({
        url: receiver.url('/hook'),
        format: { kind: 'layout', layout },
        deadLetter: file,
        log,
      }),
    );
    sink.deliver(sampleEvent({ id: 'a:1', type: 'DELETED' }));
    sink.deliver(sampleEvent({ id: 'b:1', object: { name: 'not-a-number' } }));
    sink.deliver(sampleEvent({ id: 'c:1', object: { name: '7' } }));
    sink.deliver(sampleEvent({ id: 'd:1', type: 'DELETED' }));
    // The shutdown timeout is only an upper bound: close() returns once the queue is done.
    const { stats } = await sink.close(120_000);
    file.close();
    assert.deepEqual(
      receiver.requests.map((r) => r.body),
      ['{"n":7}'],
    );
    assert.equal(stats.delivered, 1);
    assert.equal(stats.deadLettered, 3);
    const letters = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { reason: string });
    assert.deepEqual(
      letters.map((l) => l.reason),
      [
        'the layout ran over its time limit (500ms) and was stopped',
        letters[1]?.reason,
        'the layout ran over its time limit (500ms) and was stopped',
      ],
    );
    assert.match(letters[1]?.reason ?? '', /^the layout failed: D3030/);
    assert.equal(log.warnings.filter((w) => /time limit/.test(w)).length, 1, 'the same failure said once');
  });

  it('a layout that would run for hours (a backtracking regular expression) is stopped in its thread; another sink delivers meanwhile', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-layout-regex-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const laidOut = await kit.receiver();
    const other = await kit.receiver();
    // On 40 a's and a b, (a+)+$ backtracks through 2^40 ways: hours, all inside one JSONata step.
    const layout = new LayoutThread('{ "name": object.name, "match": $match(object.name, /^(a+)+$/) }');
    const sink = kit.track(
      new WebhookSink({
        url: laidOut.url('/hook'),
        format: { kind: 'layout', layout },
        deadLetter: file,
        log,
      }),
    );
    const plain = kit.track(new WebhookSink({ url: other.url('/hook'), log }));
    sink.deliver(sampleEvent({ id: 'runaway:1', object: { name: `${'a'.repeat(40)}b` } }));
    // Delivered while the layout runs: this thread is never held by it.
    plain.deliver(sampleEvent({ id: 'sentinel:1' }));
    const [sentinel] = await other.waitForRequests(1);
    assert.equal(sentinel?.headers['x-kubediff-event-id'], 'sentinel:1');
    // The next event gets a new thread.
    sink.deliver(sampleEvent({ id: 'next:1', object: { name: 'web' } }));
    const [next] = await laidOut.waitForRequests(1);
    assert.equal(next?.body, '{"name":"web"}');
    const { stats } = await sink.close(120_000);
    file.close();
    assert.deepEqual([stats.delivered, stats.deadLettered], [1, 1]);
    const letters = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { reason: string; event: { id: string } });
    assert.deepEqual(
      letters.map((l) => [l.event.id, l.reason]),
      [['runaway:1', 'the layout ran over its time limit (500ms) and was stopped']],
    );
    assert.match(
      log.warnings.join('\n'),
      /the layout ran over its time limit \(500ms\) and was stopped; not sent/,
    );
  });

  it('a layout’s input over 8 MiB is not evaluated; a failure’s message is cut at 500 characters', async () => {
    const layout = new LayoutThread('$error($pad("", 10000, "x"))');
    try {
      // An event (or a batch) whose JSON is over the bound: refused before the thread parses it.
      const big = JSON.stringify({ data: 'x'.repeat(9 * 2 ** 20) });
      await assert.rejects(layout.render(big), {
        code: 'input',
        message: 'the layout was not evaluated: its input is 9 MiB of JSON, over its limit of 8 MiB',
      });
      // $error says as much as the layout makes it say: the reason logged and dead-lettered is cut.
      await assert.rejects(layout.render('{}'), (error: Error) => {
        const head = 'the layout failed: D3137 ';
        assert.equal(error.message, `${head}${'x'.repeat(500 - head.length)}…`);
        return true;
      });
    } finally {
      await layout.close();
    }
  });

  it('a layout that does not compile is refused with its position', () => {
    assert.match(layoutProblem('{ "a": }') ?? '', /at character \d+/);
    assert.equal(layoutProblem('{ "id": id }'), undefined);
  });
});
