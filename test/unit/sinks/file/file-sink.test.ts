// The file sink on a real file system: the lines are stdout's JSON lines, rotation keeps every file within
// maxSize and every event exactly once in order across the gzipped rotated files and the live one, maxFiles
// bounds what is kept, the files are 0600, a symbolic link at the path is refused, and what a crash leaves
// (an unfinished line: ended, never cut; a half-written .gz) is put right at the next start. ENOSPC and a read-only volume:
// file-sink-full.test.ts.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { renderJsonLine } from '../../../../src/sinks/core/stream-output.ts';
import { FileSink } from '../../../../src/sinks/file/file-sink.ts';
import { UsageError } from '../../../../src/util/errors.ts';
import { sampleEvent } from '../../../helpers/events.ts';
import { readFileSinkLines } from '../../../helpers/file-sink-files.ts';
import { memoryLog } from '../../../helpers/sink-test.ts';

const scratch = () => mkdtemp(path.join(tmpdir(), 'kubediff-file-sink-'));
const eventNumber = (n: number) => sampleEvent({ id: `u${n}:${n}`, object: { name: `web-${n}` } });

describe('file sink', () => {
  it('writes each event as the line --output json prints, in a directory it creates, mode 0600', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'new', 'events.jsonl');
    const sink = await FileSink.create({ name: 'file', path: file, log: memoryLog() });
    const events = [eventNumber(1), eventNumber(2)];
    for (const event of events) sink.deliver(event);
    const report = await sink.close(5000);
    assert.equal(await readFile(file, 'utf8'), events.map(renderJsonLine).join(''));
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.deepEqual(
      { delivered: report.stats.delivered, lost: report.stats.lost, pending: report.stats.pending },
      { delivered: 2, lost: 0, pending: 0 },
    );
  });

  it('rotates past maxSize: each file within it, every event once and in order, the rotated ones gzipped', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'events.jsonl');
    const lineBytes = Buffer.byteLength(renderJsonLine(eventNumber(100)));
    const maxSize = lineBytes * 7;
    const log = memoryLog();
    const sink = await FileSink.create({ name: 'file', path: file, maxSize, maxFiles: 100, log });
    const count = 200;
    for (let n = 100; n < 100 + count; n++) sink.deliver(eventNumber(n));
    const report = await sink.close(10_000);
    assert.equal(report.stats.delivered, count);

    const names = await readdir(dir);
    const rotated = names.filter((name) => name !== 'events.jsonl');
    assert.ok(rotated.length >= Math.floor(count / 7) - 1, `rotated files: ${names.join(', ')}`);
    assert.ok(
      rotated.every((name) => /^events\.jsonl\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z\.gz$/.test(name)),
      `every rotated file is compressed under its final name: ${names.join(', ')}`,
    );
    for (const name of rotated) {
      const text = gunzipSync(await readFile(path.join(dir, name)));
      assert.ok(text.length <= maxSize, `${name} holds ${text.length} bytes, maxSize is ${maxSize}`);
      assert.ok(text.toString().endsWith('\n'));
    }
    const ids = (await readFileSinkLines(file)).map((line) => (JSON.parse(line) as { id: string }).id);
    assert.deepEqual(
      ids,
      Array.from({ length: count }, (_, i) => `u${100 + i}:${100 + i}`),
    );
    assert.equal(sink.fileStats().rotations, rotated.length);
  });

  it('keeps maxFiles rotated files, deleting the oldest, said once', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'events.jsonl');
    const maxSize = Buffer.byteLength(renderJsonLine(eventNumber(100))) * 2;
    const log = memoryLog();
    const sink = await FileSink.create({ name: 'file', path: file, maxSize, maxFiles: 3, log });
    for (let n = 100; n < 140; n++) sink.deliver(eventNumber(n));
    await sink.close(10_000);
    const rotated = (await readdir(dir)).filter((name) => name !== 'events.jsonl').sort();
    assert.equal(rotated.length, 3, rotated.join(', '));
    const ids = (await readFileSinkLines(file)).map((line) => (JSON.parse(line) as { id: string }).id);
    assert.deepEqual(
      ids,
      Array.from({ length: 8 }, (_, i) => `u${132 + i}:${132 + i}`),
      'the newest 3 rotated files and the live one: the last 8 events',
    );
    assert.equal(log.lines.filter((line) => /keeping 3 rotated files/.test(line)).length, 1);
    assert.equal(sink.fileStats().deleted, 20 - 1 - 3);
    // Deletions wait for the compression running: none is a compression failure.
    assert.equal(sink.fileStats().compressionFailures, 0);
    assert.ok(!log.lines.some((line) => /cannot compress/.test(line)), log.lines.join('\n'));
  });

  it('leaves alone a symbolic link named like a rotated file: not compressed, not deleted, not followed', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'events.jsonl');
    const target = path.join(dir, 'elsewhere');
    await writeFile(target, 'keep me\n');
    const link = `${file}.2026-12-01T10-00-00.000Z`;
    await symlink(target, link);
    const log = memoryLog();
    const sink = await FileSink.create({ name: 'file', path: file, maxFiles: 0, log });
    sink.deliver(eventNumber(1));
    await sink.close(5000);
    assert.deepEqual((await readdir(dir)).sort(), ['elsewhere', 'events.jsonl', path.basename(link)]);
    assert.equal(await readFile(link, 'utf8'), 'keep me\n');
    assert.equal(sink.fileStats().compressionFailures, 0);
  });

  it('refuses a symbolic link at its path, and a directory, in a sentence that says what to do', async () => {
    const dir = await scratch();
    const target = path.join(dir, 'elsewhere');
    await writeFile(target, 'keep me\n');
    const link = path.join(dir, 'events.jsonl');
    await symlink(target, link);
    await assert.rejects(
      FileSink.create({ name: 'file', path: link, log: memoryLog() }),
      (error: unknown) =>
        error instanceof UsageError &&
        /is a symbolic link.*give the path of a regular file/.test(error.message),
    );
    assert.equal(await readFile(target, 'utf8'), 'keep me\n');
    await mkdir(path.join(dir, 'a-directory'));
    await assert.rejects(
      FileSink.create({ name: 'file', path: path.join(dir, 'a-directory'), log: memoryLog() }),
      (error: unknown) => error instanceof UsageError && /is not a regular file/.test(error.message),
    );
  });

  it('ends an unfinished last line left by a crash with a newline (never shrinks the file), then appends whole lines', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'events.jsonl');
    const before = `${renderJsonLine(eventNumber(1))}{"id":"u2:2","ty`;
    await writeFile(file, before, { mode: 0o644 });
    const log = memoryLog();
    const sink = await FileSink.create({ name: 'file', path: file, log });
    sink.deliver(eventNumber(3));
    await sink.close(5000);
    assert.equal(await readFile(file, 'utf8'), `${before}\n${renderJsonLine(eventNumber(3))}`);
    assert.equal((await stat(file)).mode & 0o777, 0o600, 'an existing file gets the configured mode');
    assert.ok(
      log.warnings.some((w) => /unfinished line \(16 bytes.*ended with a newline/.test(w)),
      log.lines.join('\n'),
    );
  });

  it('finishes a compression a crash interrupted: no half .gz, no file twice', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'events.jsonl');
    const older = `${file}.2026-12-01T10-00-00.000Z`;
    const newer = `${file}.2026-12-01T11-00-00.000Z`;
    await writeFile(older, renderJsonLine(eventNumber(1)));
    // Crashed after the rename to .gz, before the plain file was deleted.
    const { gzipSync } = await import('node:zlib');
    await writeFile(`${older}.gz`, gzipSync(renderJsonLine(eventNumber(1))));
    // Crashed while compressing: a half-written .tmp beside the plain file.
    await writeFile(newer, renderJsonLine(eventNumber(2)));
    await writeFile(`${newer}.gz.tmp`, Buffer.from([0x1f, 0x8b, 0x08]));
    const sink = await FileSink.create({ name: 'file', path: file, log: memoryLog() });
    sink.deliver(eventNumber(3));
    await sink.close(5000);
    assert.deepEqual((await readdir(dir)).sort(), [
      'events.jsonl',
      'events.jsonl.2026-12-01T10-00-00.000Z.gz',
      'events.jsonl.2026-12-01T11-00-00.000Z.gz',
    ]);
    const ids = (await readFileSinkLines(file)).map((line) => (JSON.parse(line) as { id: string }).id);
    assert.deepEqual(ids, ['u1:1', 'u2:2', 'u3:3']);
  });
});
