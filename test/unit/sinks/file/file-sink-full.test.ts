// The file sink on a real full disk: a 64 KiB tmpfs mounted for the test (root only). Writes fail with
// ENOSPC: the batch is retried while events wait (said once), another sink keeps delivering, and once
// space returns every event is in the file exactly once, in order, whole lines only (the line a failed
// write cut short is finished, not written twice). A read-only volume at start is a clear UsageError.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { renderJsonLine } from '../../../../src/sinks/core/stream-output.ts';
import { FileSink } from '../../../../src/sinks/file/file-sink.ts';
import { UsageError } from '../../../../src/util/errors.ts';
import { sampleEvent } from '../../../helpers/events.ts';
import { readFileSinkLines } from '../../../helpers/file-sink-files.ts';
import { memoryLog } from '../../../helpers/sink-test.ts';

const root = process.getuid?.() === 0;
const mounted: string[] = [];
after(() => {
  for (const dir of mounted) execFileSync('umount', ['-l', dir]);
});

/** A tmpfs of `size` at a new directory. */
async function smallVolume(size: string, options = ''): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-file-sink-volume-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}${options}`, 'tmpfs', dir]);
  mounted.push(dir);
  return dir;
}

/** Writes `file` until the volume is full; returns the bytes it took. */
async function fill(file: string): Promise<number> {
  const handle = await open(file, 'w');
  const chunk = Buffer.alloc(4096, 0x78);
  let bytes = 0;
  try {
    for (;;) bytes += (await handle.write(chunk)).bytesWritten;
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    await handle.close();
  }
  return bytes;
}

const eventNumber = (n: number) => sampleEvent({ id: `u${n}:${n}`, object: { name: `web-${n}` } });
const idsIn = async (file: string) =>
  (await readFileSinkLines(file)).map((line) => (JSON.parse(line) as { id: string }).id);

describe('file sink on a full disk', { skip: root ? false : 'mounting a tmpfs needs root' }, () => {
  it('retries while the disk is full (said once), the other sink delivers, every event once when space returns', async () => {
    const volume = await smallVolume('64k');
    const file = path.join(volume, 'events.jsonl');
    const log = memoryLog();
    const full = await FileSink.create({
      name: 'file on tmpfs',
      path: file,
      retry: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 100_000 },
      log,
    });
    const otherDir = await mkdtemp(path.join(tmpdir(), 'kubediff-file-sink-other-'));
    const other = await FileSink.create({ name: 'other', path: path.join(otherDir, 'e.jsonl'), log });
    full.deliver(eventNumber(0));
    while (full.stats().pending > 0) await new Promise((resolve) => setImmediate(resolve));
    // The live file's page has room left: the next batch fits in part, a line is cut short.
    await fill(path.join(volume, 'filler'));

    const count = 60;
    for (let n = 1; n <= count; n++) {
      full.deliver(eventNumber(n));
      other.deliver(eventNumber(n));
    }
    await log.waitForLine(
      /file on tmpfs: cannot write .*no space left on the device \(ENOSPC\); retrying in/,
    );
    const otherReport = await other.close(5000);
    assert.equal(otherReport.stats.delivered, count, 'the other sink delivered everything meanwhile');
    const during = full.stats();
    assert.ok(during.delivered > 1 && during.delivered < count + 1, JSON.stringify(during));
    assert.ok(during.pending > 0);

    await rm(path.join(volume, 'filler'));
    await log.waitForLine(/file on tmpfs: delivering again/);
    const report = await full.close(10_000);
    assert.deepEqual(
      { ...report.stats, digests: 0, overflows: 0 },
      {
        accepted: count + 1,
        delivered: count + 1,
        summarized: 0,
        deadLettered: 0,
        lost: 0,
        pending: 0,
        digests: 0,
        overflows: 0,
      },
    );
    assert.deepEqual(
      await idsIn(file),
      Array.from({ length: count + 1 }, (_, n) => `u${n}:${n}`),
    );
    assert.equal(
      (await readFile(file, 'utf8')).length,
      Array.from({ length: count + 1 }, (_, n) => renderJsonLine(eventNumber(n))).join('').length,
    );
    assert.equal(log.warnings.filter((w) => /ENOSPC/.test(w)).length, 1, log.warnings.join('\n'));
  });

  it('gives up on a batch after its retries: dead-lettered, the cut line finished (never truncated), later batches whole', async () => {
    const volume = await smallVolume('64k');
    const file = path.join(volume, 'events.jsonl');
    const log = memoryLog();
    const { DeadLetterFile } = await import('../../../../src/sinks/core/dead-letter.ts');
    const deadDir = await mkdtemp(path.join(tmpdir(), 'kubediff-file-sink-dead-'));
    const deadLetter = DeadLetterFile.open(path.join(deadDir, 'dead.jsonl'), log);
    const sink = await FileSink.create({
      name: 'file',
      path: file,
      retry: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 },
      deadLetter,
      log,
    });
    sink.deliver(eventNumber(0));
    while (sink.stats().pending > 0) await new Promise((resolve) => setImmediate(resolve));
    await fill(path.join(volume, 'filler'));
    for (let n = 1; n <= 40; n++) sink.deliver(eventNumber(n));
    await log.waitForLine(/gave up after 3 attempts/);
    while (sink.stats().pending > 0) await new Promise((resolve) => setImmediate(resolve));
    const atGiveUp = await readFile(file, 'utf8');
    assert.ok(!atGiveUp.endsWith('\n'), 'a write was cut inside a line (what this test is about)');
    await rm(path.join(volume, 'filler'));
    sink.deliver(eventNumber(41));
    const report = await sink.close(5000);
    deadLetter.close();
    const written = await idsIn(file);
    const dead = (await readFile(path.join(deadDir, 'dead.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { event: { id: string } }).event.id);
    // The file only grew: a shipper that read the part of the cut line reads its rest next.
    assert.ok((await readFile(file, 'utf8')).startsWith(atGiveUp), 'the file was never truncated');
    assert.equal(written.at(-1), 'u41:41');
    // The cut line was finished although its batch was given up: that one event is in both files.
    const finished = written.at(-2);
    assert.equal(finished, dead[0]);
    assert.deepEqual(
      [...written.slice(0, -2), ...dead],
      Array.from({ length: 41 }, (_, n) => `u${n}:${n}`),
      'every event in the file or in the dead-letter file, in order',
    );
    assert.equal(report.stats.delivered + report.stats.deadLettered, 42);
  });

  it('a read-only volume at start: a UsageError that says so', async () => {
    const volume = await smallVolume('64k', ',ro');
    await assert.rejects(
      FileSink.create({ name: 'file', path: path.join(volume, 'events.jsonl'), log: memoryLog() }),
      (error: unknown) => error instanceof UsageError && /read-only \(EROFS\)/.test(error.message),
    );
  });
});
