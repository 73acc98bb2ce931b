// src/util/log.ts: human lines on a terminal, JSON lines with levels anywhere else; the same message in both.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonLine, resolveLogFormat, stderrLogger } from '../../../src/util/log.ts';

function capture(format: 'text' | 'json', debug = false) {
  const lines: string[] = [];
  const log = stderrLogger({ debug, format, write: (line) => lines.push(line) });
  return { log, lines };
}

test('text: the one-sentence messages as before', () => {
  const { log, lines } = capture('text');
  log.info('watching 3 resource types');
  log.warn('pods: forbidden');
  log.debug('hidden without --debug');
  log.error('it broke');
  assert.deepEqual(lines, [
    'kubediff: watching 3 resource types\n',
    'kubediff: warning: pods: forbidden\n',
    'kubediff: error: it broke\n',
  ]);
});

test('json: one object per line with time, level, msg and extra fields', () => {
  const { log, lines } = capture('json', true);
  log.info('became the leader', { component: 'leader-election', identity: 'a' });
  log.warn('careful', { level: 'not allowed to override', skipped: undefined });
  log.debug('details');
  const records = lines.map((line) => {
    assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), 'one line');
    return JSON.parse(line) as Record<string, unknown>;
  });
  assert.deepEqual(
    records.map(({ time, ...rest }) => {
      assert.ok(!Number.isNaN(Date.parse(String(time))));
      return rest;
    }),
    [
      { level: 'info', msg: 'became the leader', component: 'leader-election', identity: 'a' },
      { level: 'warn', msg: 'careful' },
      { level: 'debug', msg: 'details' },
    ],
  );
  assert.deepEqual(Object.keys(records[0] ?? {}).slice(0, 3), ['time', 'level', 'msg']);
});

test('a message with quotes and newlines stays one valid JSON line', () => {
  const line = jsonLine('warn', 'a "quoted"\nmessage');
  assert.equal(line.split('\n').length, 2);
  assert.equal((JSON.parse(line) as { msg: string }).msg, 'a "quoted"\nmessage');
});

test('format: flag, then $KUBEDIFF_LOG_FORMAT, then json unless stderr is a terminal', () => {
  assert.equal(resolveLogFormat(undefined, true, {}), 'text');
  assert.equal(resolveLogFormat(undefined, false, {}), 'json');
  assert.equal(resolveLogFormat('auto', false, { KUBEDIFF_LOG_FORMAT: 'text' }), 'text');
  assert.equal(resolveLogFormat('json', true, { KUBEDIFF_LOG_FORMAT: 'text' }), 'json');
  assert.equal(resolveLogFormat(undefined, true, { KUBEDIFF_LOG_FORMAT: 'json' }), 'json');
});
