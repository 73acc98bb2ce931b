// One duration parser for every flag, config key and environment variable (src/util/duration.ts): the same
// units everywhere (7d works for --shutdown-timeout as for --state-max-age), nothing a Node.js timer
// cannot wait for, no 0 where 0 would switch something off, and one wording for every mistake.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { loadConfigFile } from '../../../src/config/file.ts';
import { serviceOptionsFromFlags } from '../../../src/config/service-settings.ts';
import { sinkSettingsFromFlags } from '../../../src/config/sink-settings.ts';
import { AGE_RULES, checkDuration, MAX_TIMER_MS, parseDurationSetting } from '../../../src/util/duration.ts';
import { UsageError } from '../../../src/util/errors.ts';

describe('durations', () => {
  it('reads what people write, days included', () => {
    assert.equal(checkDuration('500ms').ms, 500);
    assert.equal(checkDuration('30s').ms, 30_000);
    assert.equal(checkDuration(' 1h30m ').ms, 5_400_000);
    assert.equal(checkDuration('1.5d').ms, 36 * 3_600_000);
    assert.equal(checkDuration('7d').ms, 7 * 86_400_000);
  });

  it('refuses what is not a duration, with one wording', () => {
    for (const text of ['5', 'soon', '-1s', '1w', '', '1 s']) {
      assert.equal(
        checkDuration(text).problem,
        'expected a duration such as 500ms, 30s, 5m, 2h or 7d',
        JSON.stringify(text),
      );
    }
  });

  it('refuses what a Node.js timer cannot wait for, unless it never becomes a timer', () => {
    assert.equal(checkDuration(`${MAX_TIMER_MS}ms`).ms, MAX_TIMER_MS);
    assert.equal(
      checkDuration(`${MAX_TIMER_MS + 1}ms`).problem,
      'expected at most 24d (2147483647ms, the longest a Node.js timer can wait)',
    );
    assert.match(checkDuration('25d').problem ?? '', /at most 24d/);
    assert.equal(checkDuration('25d', AGE_RULES).ms, 25 * 86_400_000);
    assert.match(checkDuration(`${'9'.repeat(400)}d`, AGE_RULES).problem ?? '', /at most/);
  });

  it('refuses 0 unless 0 means something', () => {
    assert.equal(checkDuration('0s').problem, 'expected a duration longer than 0');
    assert.equal(checkDuration('0ms', { allowZero: true }).ms, 0);
  });

  it('names the flag or the environment variable, in one sentence', () => {
    const failure = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        assert.ok(error instanceof UsageError && exitCodeOf(error) === EXIT_USAGE, String(error));
        return error.message;
      }
      assert.fail('no error');
    };
    assert.equal(
      failure(() => parseDurationSetting('KUBEDIFF_WATCH_IDLE_TIMEOUT', '0s')),
      'invalid KUBEDIFF_WATCH_IDLE_TIMEOUT="0s": expected a duration longer than 0.',
    );
    assert.equal(
      failure(() => sinkSettingsFromFlags({ shutdownTimeout: '30d' })),
      'invalid --shutdown-timeout "30d": expected at most 24d (2147483647ms, the longest a Node.js timer can wait).',
    );
    assert.equal(
      failure(() => sinkSettingsFromFlags({ webhook: ['http://127.0.0.1:1/'], webhookTimeout: '0s' })),
      'invalid --webhook-timeout "0s": expected a duration longer than 0.',
    );
    assert.equal(
      failure(() => serviceOptionsFromFlags({ readyFailureThreshold: 'soon' }, {})),
      'invalid --ready-failure-threshold "soon": expected a duration such as 500ms, 30s, 5m, 2h or 7d.',
    );
  });

  it('accepts the same units for every flag: 7d is a valid --shutdown-timeout, 0 exits at once', () => {
    assert.equal(sinkSettingsFromFlags({ shutdownTimeout: '7d' }).shutdownTimeoutMs, 7 * 86_400_000);
    assert.equal(sinkSettingsFromFlags({ shutdownTimeout: '0s' }).shutdownTimeoutMs, 0);
  });

  it('says the same in a config file, where 0 is allowed only where it means "at once"', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubediff-durations-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'kubediff.yaml');
    writeFileSync(
      file,
      [
        'shutdownTimeout: 7d',
        'state: { path: /tmp/state.db, maxAge: 90d }',
        'sinks:',
        '  - { type: webhook, url: "http://127.0.0.1:9/", timeout: 0s, batch: 2, batchWait: 0s }',
        '  - { type: webhook, url: "http://127.0.0.1:9/", timeout: 25d }',
        '',
      ].join('\n'),
    );
    assert.throws(
      () => loadConfigFile(file, {}),
      (error: unknown) => {
        assert.ok(error instanceof UsageError);
        assert.deepEqual(error.message.split('\n').slice(1), [
          `  ${file}:4:59: sinks[0].timeout: expected a duration longer than 0, got "0s"`,
          `  ${file}:5:59: sinks[1].timeout: expected at most 24d (2147483647ms, the longest a Node.js timer can wait), got "25d"`,
        ]);
        return true;
      },
    );
  });
});
