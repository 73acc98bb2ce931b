// The standard output's sink as -o/--output, the file's `output:`, its `sinks:` entry and the terminal
// make it (src/sinks/stdout/ through the registry's fromOutput): which format and color it gets, when it
// is there at all, and when it tells stories.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { runValidate } from '../../../src/cli/validate.ts';
import { parseConfig } from '../../../src/config/file.ts';
import { outputSinkSpecs } from '../../../src/config/output-sink.ts';
import { settingsFromConfig, watchSettingsFromFlags } from '../../../src/config/settings.ts';
import type { RawWatchFlags } from '../../../src/config/watch-settings.ts';
import { UsageError } from '../../../src/util/errors.ts';

const WEBHOOK = '  - type: webhook\n    url: https://h/\n';

/** The sinks a watch with these flags (no file) would have, on a terminal or not. */
function flagSinks(flags: RawWatchFlags, isTTY: boolean, env: Record<string, string> = {}) {
  const settings = watchSettingsFromFlags(flags, isTTY, env);
  return [...outputSinkSpecs(settings, { isTTY, env }), ...settings.delivery.sinks];
}

/** The sinks a watch with this file under these flags would have. */
function fileSinks(yaml: string, flags: RawWatchFlags, isTTY: boolean, env: Record<string, string> = {}) {
  const settings = settingsFromConfig(parseConfig(yaml, 'c.yaml', env), flags, isTTY, env);
  return [...outputSinkSpecs(settings, { isTTY, env }), ...settings.delivery.sinks];
}

describe('the standard output sink from the flags', () => {
  it('pretty and in color on a terminal, JSON without color in a pipe; -o chooses; NO_COLOR', () => {
    assert.deepEqual(flagSinks({}, true), [{ type: 'stdout', format: 'pretty', color: true }]);
    assert.deepEqual(flagSinks({}, false), [{ type: 'stdout', format: 'json', color: false }]);
    assert.deepEqual(flagSinks({ output: 'json' }, true), [{ type: 'stdout', format: 'json', color: true }]);
    assert.deepEqual(flagSinks({ output: 'pretty' }, true, { NO_COLOR: '1' }), [
      { type: 'stdout', format: 'pretty', color: false },
    ]);
  });

  it('-o none: none; --stories: the pretty output tells stories, JSON refuses them', () => {
    assert.deepEqual(flagSinks({ output: 'none', webhook: ['https://h/'] }, true), [
      { type: 'webhook', url: 'https://h/' },
    ]);
    const [storied] = flagSinks({ stories: true }, true);
    assert.equal(typeof storied?.stories, 'object');
    assert.throws(
      () => flagSinks({ stories: true, output: 'json' }, true),
      (error: unknown) =>
        error instanceof UsageError && /^--stories applies to the pretty output/.test(error.message),
    );
  });
});

describe('the standard output sink from a config file', () => {
  it('output: chooses the format of the sink it adds, below -o', () => {
    assert.deepEqual(fileSinks('output: json\n', {}, true), [
      { type: 'stdout', format: 'json', color: true },
    ]);
    assert.deepEqual(fileSinks('output: json\n', { output: 'pretty' }, false), [
      { type: 'stdout', format: 'pretty', color: false },
    ]);
  });

  it('its entry replaces that sink and goes first; its format is below -o and above output:', () => {
    const yaml = `output: json\nsinks:\n${WEBHOOK}  - type: stdout\n    format: pretty\n    name: terminal\n`;
    assert.deepEqual(fileSinks(yaml, {}, false), [
      { type: 'stdout', format: 'pretty', color: false, name: 'terminal' },
      { type: 'webhook', url: 'https://h/' },
    ]);
    assert.deepEqual(fileSinks(yaml, { output: 'json' }, true)[0], {
      type: 'stdout',
      format: 'json',
      color: true,
      name: 'terminal',
    });
    // Without a format of its own, `output:` gives it one, or none.
    assert.deepEqual(fileSinks('output: json\nsinks:\n  - type: stdout\n', {}, true), [
      { type: 'stdout', format: 'json', color: true },
    ]);
    assert.deepEqual(fileSinks(`output: none\nsinks:\n  - type: stdout\n${WEBHOOK}`, {}, true), [
      { type: 'webhook', url: 'https://h/' },
    ]);
    assert.deepEqual(fileSinks(`sinks:\n  - type: stdout\n${WEBHOOK}`, { output: 'none' }, true), [
      { type: 'webhook', url: 'https://h/' },
    ]);
  });

  it('its entry keeps no dead letter; stories: true refused on JSON, told on pretty', () => {
    const [stdout] = fileSinks(`deadLetter: /tmp/x.jsonl\nsinks:\n  - type: stdout\n${WEBHOOK}`, {}, false);
    assert.deepEqual(stdout, { type: 'stdout', format: 'json', color: false });
    assert.throws(
      () => fileSinks('sinks:\n  - type: stdout\n    stories: true\n', {}, false),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === 'stories apply to the pretty output: a JSON stdout sink stays one event per line.',
    );
    const [storied] = fileSinks('sinks:\n  - type: stdout\n    stories: true\n', {}, true);
    assert.equal(storied?.type === 'stdout' && storied.format, 'pretty');
    assert.equal(typeof storied?.stories, 'object');
  });

  it('validate lists the standard output once, as the watch makes it, whatever the other sinks are named', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-output-sink-'));
    const run = async (text: string) => {
      const config = path.join(dir, 'c.yaml');
      await writeFile(config, text);
      const stdout = new PassThrough();
      await runValidate({ config }, { env: {}, stdout, stderr: new PassThrough() });
      return String(stdout.read()).replace(`${config}: `, '');
    };
    try {
      assert.equal(await run('sinks:\n  - type: stdout\n'), 'valid (preset default; 1 sink: stdout).\n');
      assert.equal(
        await run(`sinks:\n  - type: webhook\n    name: stdout\n    url: https://h/\n`),
        'valid (preset default; 2 sinks: stdout, stdout).\n',
      );
      assert.equal(
        await run(`output: none\nsinks:\n${WEBHOOK}`),
        'valid (preset default; 1 sink: webhook https://h/).\n',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
