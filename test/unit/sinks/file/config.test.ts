// The file sink's settings as users give them: a `sinks:` entry of type file (every key, its bounds, each
// problem at its line and column) and --output-file.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadWatchSettings } from '../../../../src/config/settings.ts';
import { sinkSettingsFromFlags } from '../../../../src/config/sink-settings.ts';
import { UsageError } from '../../../../src/util/errors.ts';

async function settingsOf(yaml: string) {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-file-sink-config-'));
  const config = path.join(dir, 'kubediff.yaml');
  await writeFile(config, yaml);
  return loadWatchSettings({ config }, false, {});
}

describe('file sink settings', () => {
  it('reads every key of a sinks: entry of type file into its spec', async () => {
    const settings = await settingsOf(
      [
        'sinks:',
        '  - type: file',
        '    name: events-file',
        '    path: /data/events.jsonl',
        '    maxSize: 10MB',
        '    maxFiles: 0',
        '    compress: false',
        '    fsync: interval',
        '    fsyncInterval: 250ms',
        '    mode: "0640"',
        '    queueCapacity: 50',
        '    deadLetter: /other/dead.jsonl',
        '    filter: { events: [updated] }',
        '',
      ].join('\n'),
    );
    const [spec] = settings.delivery.sinks.filter((sink) => sink.type === 'file');
    assert.deepEqual(
      { ...spec, queue: spec && 'queue' in spec ? { capacity: spec.queue?.capacity } : undefined },
      {
        type: 'file',
        name: 'events-file',
        path: '/data/events.jsonl',
        maxSize: 10 * 1024 * 1024,
        maxFiles: 0,
        compress: false,
        fsync: 'interval',
        fsyncIntervalMs: 250,
        mode: 0o640,
        queue: { capacity: 50 },
        deadLetterFile: '/other/dead.jsonl',
        filter: { types: ['UPDATED'] },
      },
    );
  });

  it('says what is wrong with a key, where, and what it takes', async () => {
    const cases: [string, RegExp][] = [
      ['    maxSize: "100"\n', /kubediff\.yaml:4:\d+: sinks\[0\]\.maxSize: must be at least 1KB, got "100"/],
      ['    maxSize: lots\n', /sinks\[0\]\.maxSize: expected a size such as 64MB or 1GB, got "lots"/],
      ['    maxFiles: 1001\n', /sinks\[0\]\.maxFiles: expected a number from 0 to 1,000/],
      ['    fsync: always\n', /sinks\[0\]\.fsync: expected one of every-event, interval, never/],
      ['    fsync: never\n    fsyncInterval: 1s\n', /sinks\[0\]\.fsyncInterval: applies to fsync: interval/],
      ['    fsyncInterval: soon\n', /sinks\[0\]\.fsyncInterval: expected a duration/],
      ['    mode: "999"\n', /sinks\[0\]\.mode: /],
      ['    stories: true\n', /stories do not apply to a file sink/],
      ['    mode: "0200"\n', /sinks\[0\]\.mode: must give the owner read and write .*got "0200"/],
      ['    mode: "0444"\n', /sinks\[0\]\.mode: must give the owner read and write/],
      ['    timeout: 5s\n', /sinks\[0\]\.timeout: unknown key; expected one of .*deadLetter, path/],
    ];
    for (const [keys, message] of cases) {
      await assert.rejects(
        settingsOf(`sinks:\n  - type: file\n    path: /data/events.jsonl\n${keys}`),
        (error: unknown) => error instanceof UsageError && message.test(error.message),
        keys,
      );
    }
  });

  it('--output-file adds a file sink with every default', () => {
    assert.deepEqual(sinkSettingsFromFlags({ outputFile: ' /data/events.jsonl ' }, {}).sinks, [
      { type: 'file', path: '/data/events.jsonl' },
    ]);
    assert.deepEqual(sinkSettingsFromFlags({}, {}).sinks, []);
  });

  it('refuses a blank path, as a flag or a key', async () => {
    for (const outputFile of ['', '  ']) {
      assert.throws(
        () => sinkSettingsFromFlags({ outputFile }, {}),
        (error: unknown) =>
          error instanceof UsageError && /^--output-file is empty: give the file/.test(error.message),
      );
    }
    await assert.rejects(
      settingsOf('sinks:\n  - type: file\n    path: "  "\n'),
      (error: unknown) =>
        error instanceof UsageError && /kubediff\.yaml:3:\d+: sinks\[0\]\.path: is empty/.test(error.message),
    );
  });
});
