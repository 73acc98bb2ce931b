// src/sinks/core/dead-letter.ts: the dead-letter file is capped. It rotates at maxFileBytes (file → file.1 →
// file.2…), deletes the oldest beyond maxFiles files in all (counted, warned about once), and creates
// every file 0600. Real files in a temp folder.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { DEFAULT_DEAD_LETTER_LIMITS, DeadLetterFile } from '../../../src/sinks/core/dead-letter.ts';
import { sampleEvent } from '../../helpers/events.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

const root = mkdtempSync(path.join(tmpdir(), 'kubediff-dead-letter-'));
after(() => rmSync(root, { recursive: true, force: true }));
const folder = () => mkdtempSync(path.join(root, 'case-'));

const event = (name: string, padding = 0): ChangeEvent =>
  sampleEvent({
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'a',
      name: `${name}${'.'.repeat(padding)}`,
    },
  }) as ChangeEvent;
const names = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { event: ChangeEvent }).event.object.name);

describe('the dead-letter file', () => {
  it('defaults to 3 files of 10 MiB', () => {
    assert.deepEqual(DEFAULT_DEAD_LETTER_LIMITS, { maxFileBytes: 10 * 1024 * 1024, maxFiles: 3 });
  });

  it('rotates at the size, keeps the newest, deletes the oldest beyond maxFiles, counts and warns once', () => {
    const dir = folder();
    const file = path.join(dir, 'dead.jsonl');
    const log = memoryLog();
    const recordBytes = Buffer.byteLength(
      `${JSON.stringify({ time: new Date().toISOString(), sink: 's', reason: 'r', event: event('e00') })}\n`,
    );
    // Three records per file.
    const dead = DeadLetterFile.open(file, log, { maxFileBytes: recordBytes * 3 + 10, maxFiles: 3 });
    const written = Array.from({ length: 20 }, (_, index) => `e${String(index).padStart(2, '0')}`);
    for (const name of written) assert.equal(dead.writeEvents('s', 'r', [event(name)]), true);
    dead.close();

    assert.deepEqual(readdirSync(dir).sort(), ['dead.jsonl', 'dead.jsonl.1', 'dead.jsonl.2']);
    const kept = [...names(`${file}.2`), ...names(`${file}.1`), ...names(file)];
    assert.deepEqual(kept, written.slice(written.length - kept.length), 'the newest, in order');
    assert.equal(kept.length, 8, '3 + 3 + the 2 written since the last rotation');
    const stats = dead.stats();
    assert.equal(stats.droppedRecords, written.length - kept.length);
    assert.equal(
      stats.bytes,
      ['', '.1', '.2'].reduce((sum, suffix) => sum + statSync(`${file}${suffix}`).size, 0),
    );
    for (const suffix of ['', '.1', '.2']) {
      assert.ok(statSync(`${file}${suffix}`).size <= recordBytes * 3 + 10);
      assert.equal((statSync(`${file}${suffix}`).mode & 0o777).toString(8), '600', suffix);
    }
    const warnings = log.lines.filter((line) => line.includes('is at its cap'));
    assert.equal(warnings.length, 1, log.lines.join('\n'));
    assert.match(
      warnings[0] ?? '',
      /\(3 files of [\d.]+ (bytes|KiB)\): deleted .*dead\.jsonl\.2 and the 3 dead letters in it/,
    );
  });

  it('a record larger than the size is written alone to a fresh file', () => {
    const dir = folder();
    const file = path.join(dir, 'dead.jsonl');
    const dead = DeadLetterFile.open(file, memoryLog(), { maxFileBytes: 1024, maxFiles: 2 });
    dead.writeEvents('s', 'r', [event('small')]);
    dead.writeEvents('s', 'r', [event('big', 4000)]);
    dead.writeEvents('s', 'r', [event('after')]);
    dead.close();
    assert.deepEqual(
      names(`${file}.1`).map((name) => name.replace(/\.+$/, '')),
      ['big'],
    );
    assert.deepEqual(names(file), ['after']);
    assert.equal(dead.stats().droppedRecords, 1, 'small was in the oldest file');
  });

  it('with one file, a full file is started afresh', () => {
    const dir = folder();
    const file = path.join(dir, 'dead.jsonl');
    const dead = DeadLetterFile.open(file, memoryLog(), { maxFileBytes: 1200, maxFiles: 1 });
    for (const name of ['a', 'b', 'c', 'd', 'e']) dead.writeEvents('s', 'r', [event(name)]);
    dead.close();
    assert.deepEqual(readdirSync(dir), ['dead.jsonl']);
    assert.equal(names(file).length + dead.stats().droppedRecords, 5);
  });

  it("continues a previous run's file and its rotated files, counting what is deleted from them", () => {
    const dir = folder();
    const file = path.join(dir, 'dead.jsonl');
    const old = (name: string) =>
      `${JSON.stringify({ time: 't', sink: 's', reason: 'r', event: event(name) })}\n`;
    writeFileSync(`${file}.1`, old('older1') + old('older2'));
    writeFileSync(file, old('current').repeat(5), { mode: 0o600 });
    const dead = DeadLetterFile.open(file, memoryLog(), { maxFileBytes: 1024, maxFiles: 2 });
    dead.writeEvents('s', 'r', [event('new')]);
    dead.close();
    assert.deepEqual(names(file), ['new']);
    assert.equal(names(`${file}.1`).length, 5, 'the previous current file, rotated');
    assert.equal(dead.stats().droppedRecords, 2, 'the two in the previous run’s oldest file');
  });
});
