// The batch sinks' delivery core (batch-sink.ts, delivery.ts) where no receiver can show it: a bug that
// makes every request throw (a broken encoder, say) is said once, not once per batch, and each batch is
// dead-lettered with the reason while the loop goes on. The sinks against receivers: otlp.test.ts,
// search.test.ts, and the integration tests.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BatchSink, type BatchWork, type Transmission } from '../../../src/sinks/core/batch-sink.ts';
import { DeadLetterFile } from '../../../src/sinks/core/dead-letter.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

/** A batch sink whose every request fails with a bug of its own (a TypeError). */
class BrokenSink extends BatchSink {
  transmitted = 0;

  protected async transmit(_work: BatchWork): Promise<Transmission> {
    this.transmitted++;
    throw new TypeError(`encoder is not a function (batch ${this.transmitted})`);
  }

  protected release(): Promise<void> {
    return Promise.resolve();
  }
}

describe('batch sink core', () => {
  it('a failure that repeats on every batch is said once; each batch dead-lettered, the loop going on', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-batch-core-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const sink = new BrokenSink(
      { name: 'broken', log, deadLetter: file, batchMaxEvents: 2 },
      { timeoutMs: 1_000, batchMaxBytes: 1024 * 1024 },
    );
    for (let n = 1; n <= 6; n++) sink.deliver(sampleEvent({ id: `e${n}:1` }));
    const { stats } = await sink.close(60_000);
    file.close();

    assert.equal(sink.transmitted, 3, 'three batches of two, each tried');
    assert.deepEqual([stats.deadLettered, stats.lost, stats.pending], [6, 0, 0]);
    assert.deepEqual(
      log.warnings.filter((w) => /unexpected failure/.test(w)),
      ['broken: unexpected failure: encoder is not a function (batch 1); going on with the next events.'],
    );
    const letters = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string; event: { id: string } });
    assert.deepEqual(
      letters.map((letter) => [letter.event.id, letter.reason]),
      [1, 2, 3, 4, 5, 6].map((n) => [
        `e${n}:1`,
        `unexpected failure: encoder is not a function (batch ${Math.ceil(n / 2)})`,
      ]),
    );
  });
});
