// The Kafka sink when no broker answers (a loopback port that refuses connections): the backlog is
// bounded (an overflow folds into a digest, said once, the folded events written to the dead-letter
// file), and close() accounts for every event. The sink against a real broker is
// test/integration/sinks-kafka.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DeadLetterFile } from '../../../src/sinks/core/dead-letter.ts';
import { KafkaSink } from '../../../src/sinks/stream/kafka/kafka.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { freePorts } from '../../helpers/processes.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

describe('Kafka sink without a broker', () => {
  it('keeps a bounded backlog: the overflow becomes a digest, said once, every event accounted for', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-kafka-unit-'));
    const log = memoryLog();
    const file = DeadLetterFile.open(path.join(dir, 'dead.jsonl'), log);
    const sink = new KafkaSink({
      name: 'kafka changes',
      brokers: [`127.0.0.1:${(await freePorts(1))[0]}`],
      topic: 'changes',
      timeoutMs: 1000,
      retry: { initialDelayMs: 50, maxDelayMs: 200, maxAttempts: 1000 },
      queue: { capacity: 10, digestRetain: 3 },
      deadLetter: file,
      log,
    });
    // Closed whatever happens: a client left retrying would keep this file's process from ever exiting.
    t.after(() => sink.close(0));
    for (let i = 0; i < 60; i++) sink.deliver(sampleEvent({ id: `uid-${i}:${i}` }));
    await log.waitForLine(/kafka changes: .*retrying in/);
    const report = await sink.close(300);
    file.close();

    const overflow = log.warnings.filter((w) => /summarized in a digest/.test(w));
    assert.equal(overflow.length, 1, 'the overflow is said once');
    assert.equal(log.warnings.filter((w) => /retrying in/.test(w)).length, 1, 'the outage is said once');
    const { stats } = report;
    assert.equal(stats.accepted, 60);
    assert.equal(stats.delivered + stats.summarized, 0);
    assert.equal(stats.deadLettered, 60, JSON.stringify(stats));
    assert.equal(stats.lost + stats.pending, 0);
    const lines = (await readFile(path.join(dir, 'dead.jsonl'), 'utf8')).trim().split('\n');
    const ids = new Set(
      lines.flatMap((line) => {
        const letter = JSON.parse(line) as { event?: { id: string }; digest?: { events: { id: string }[] } };
        return letter.event ? [letter.event.id] : (letter.digest?.events ?? []).map((e) => e.id);
      }),
    );
    assert.equal(ids.size, 60, 'every event is in the dead-letter file, in full');
  });
});
