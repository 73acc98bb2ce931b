// --state and its retention flags (src/config/state-settings.ts), and the config file's `state:` keys.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stateSettingsFromFlags } from '../../../src/config/state-settings.ts';
import { DEFAULT_RETENTION } from '../../../src/state/store.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { formatSize, parseSize } from '../../../src/util/size.ts';

test('no --state: no state; retention flags alone are a usage error', () => {
  assert.equal(stateSettingsFromFlags({}), undefined);
  assert.throws(() => stateSettingsFromFlags({ stateMaxAge: '1d' }), UsageError);
});

test('--state with the default retention, or the given one', () => {
  assert.deepEqual(stateSettingsFromFlags({ state: 'k.db' }), { path: 'k.db', retention: DEFAULT_RETENTION });
  assert.deepEqual(
    stateSettingsFromFlags({ state: 'k.db', stateMaxAge: '2d', stateMaxEvents: '50', stateMaxSize: '64MB' }),
    { path: 'k.db', retention: { maxAgeMs: 2 * 86_400_000, maxEvents: 50, maxSizeBytes: 64 * 1024 * 1024 } },
  );
  assert.equal(stateSettingsFromFlags({ state: 'k.db', stateMaxEvents: 7 })?.retention.maxEvents, 7);
});

test('durations in days, sizes with units; bad values name the flag', () => {
  const age = (text: string) =>
    stateSettingsFromFlags({ state: 'k.db', stateMaxAge: text })?.retention.maxAgeMs;
  assert.equal(age('90m'), 90 * 60_000);
  assert.equal(age('1.5d'), 36 * 3_600_000);
  // An age is never a timer: longer than a Node.js timer can wait is fine.
  assert.equal(age('90d'), 90 * 86_400_000);
  assert.equal(parseSize('--state-max-size', '500k'), 500 * 1024);
  assert.equal(parseSize('--state-max-size', '1GB'), 1024 ** 3);
  assert.throws(
    () => age('soon'),
    /invalid --state-max-age "soon": expected a duration such as 500ms, 30s, 5m, 2h or 7d\./,
  );
  assert.throws(() => age('0d'), /invalid --state-max-age "0d": expected a duration longer than 0\./);
  assert.throws(() => parseSize('--state-max-size', 'big'), /invalid --state-max-size "big"/);
  assert.throws(
    () => parseSize('KUBEDIFF_STATE_MAX_BACKLOG', '0MB'),
    /invalid KUBEDIFF_STATE_MAX_BACKLOG="0MB"/,
  );
  assert.deepEqual([512, 20_480, 1_572_864, 64 * 1024 ** 2].map(formatSize), [
    '512 B',
    '20 KiB',
    '1.5 MiB',
    '64 MiB',
  ]);
  assert.throws(
    () => stateSettingsFromFlags({ state: 'k.db', stateMaxEvents: '0' }),
    /invalid --state-max-events "0"/,
  );
});
