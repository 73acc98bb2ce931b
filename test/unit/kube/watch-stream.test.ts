// src/kube/watch-stream.ts and the body readers of src/kube/transport.ts: how a watch body becomes
// lines within the size and silence bounds, and how a whole answer is read within the size bound.
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeError } from '../../../src/kube/errors.ts';
import { ResponseTooLarge, readBody, readChunks } from '../../../src/kube/transport.ts';
import { objectNameIn, watchLines } from '../../../src/kube/watch-stream.ts';

const limits = { idleMs: 5_000, maxLineLength: 1_000, server: 'https://api', path: '/api/v1/configmaps' };

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const result: string[] = [];
  for await (const line of lines) result.push(line);
  return result;
}

test('lines split anywhere across chunks come out whole; blank lines are skipped', async () => {
  const body = Readable.from(['{"a":', '1}\n\n{"b"', ':2}\n{"c":3}\n{"d"', ':4}']);
  assert.deepEqual(await collect(watchLines(body, limits)), ['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}']);
});

test('a line longer than the limit fails with a too-large error naming the object, even before its end arrives', async () => {
  const body = new PassThrough();
  body.write(
    '{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"big","namespace":"shop","uid":"1"},"data":{"v":"',
  );
  body.write('x'.repeat(2_000));
  await assert.rejects(collect(watchLines(body, limits)), (error: unknown) => {
    assert.ok(error instanceof KubeError);
    assert.equal(error.kind, 'too-large');
    assert.equal(error.message, 'the object shop/big is larger than 1000 B, the most kubediff reads at once');
    return true;
  });
});

test('object names are read from the start of metadata only', () => {
  assert.equal(objectNameIn('{"kind":"Namespace","metadata":{"name":"shop","uid":"9"}}'), 'shop');
  assert.equal(objectNameIn('{"metadata":{"name":"a\\"b","namespace":"ns"'), 'ns/a\\"b');
  // A label called namespace, after the uid, is not the object's namespace.
  assert.equal(objectNameIn('{"metadata":{"name":"n","uid":"1","labels":{"namespace":"x"}}}'), 'n');
  assert.equal(objectNameIn('{"type":"ADDED","object":{"spec":{"name":"n"}}}'), undefined);
});

test('a body that sends nothing for idleMs fails as silent; a reader that holds a line that long does not', async () => {
  const quiet = new PassThrough();
  quiet.write('{"a":1}\n');
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const line of watchLines(quiet, { ...limits, idleMs: 50 })) seen.push(line);
    })(),
    (error: unknown) => error instanceof KubeError && /went silent/.test(error.message),
  );
  assert.deepEqual(seen, ['{"a":1}']);

  // The reader pauses four times the silence bound on each line; the body is never waited for that long.
  const busy = Readable.from(['{"a":1}\n', '{"b":2}\n', '{"c":3}\n']);
  const read: string[] = [];
  for await (const line of watchLines(busy, { ...limits, idleMs: 50 })) {
    read.push(line);
    await delay(200);
  }
  assert.deepEqual(read, ['{"a":1}', '{"b":2}', '{"c":3}']);
});

test('readBody refuses an answer over maxBytes and destroys it', async () => {
  const body = new PassThrough();
  body.write(Buffer.alloc(600));
  body.write(Buffer.alloc(600));
  await assert.rejects(
    readBody(body, { maxBytes: 1_000, idleMs: 5_000 }, { server: 'https://api', path: '/api/v1/secrets' }),
    (error: unknown) =>
      error instanceof ResponseTooLarge && error.kind === 'too-large' && error.limitBytes === 1_000,
  );
  assert.ok(body.destroyed);
  const whole = await readBody(
    Readable.from([Buffer.from('{"a"'), Buffer.from(':1}')]),
    { maxBytes: 1_000, idleMs: 5_000 },
    {
      server: 'https://api',
      path: '/api',
    },
  );
  assert.equal(whole.toString(), '{"a":1}');
});

test('readChunks fails when the stream closes before its end, and ends when it ends', async () => {
  const cut = new PassThrough();
  cut.write('part');
  const chunks = readChunks(cut);
  assert.equal(String((await chunks.next()).value), 'part');
  cut.destroy();
  await assert.rejects(chunks.next(), { code: 'ERR_STREAM_PREMATURE_CLOSE' });

  const whole: string[] = [];
  for await (const chunk of readChunks(Readable.from(['a', 'b']))) whole.push(String(chunk));
  assert.deepEqual(whole, ['a', 'b']);

  // Closed, or failed, before anyone read it: a failure at once, not a reader waiting forever.
  const gone = new PassThrough();
  gone.destroy();
  await assert.rejects(readChunks(gone).next(), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
  const failed = new PassThrough();
  failed.on('error', () => {});
  failed.destroy(new Error('reset'));
  await assert.rejects(readChunks(failed).next(), { message: 'reset' });
});
