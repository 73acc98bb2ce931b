// A flag that sets a config key is checked by the format at that key of the file's schema: the same rule,
// worded for the flag (`invalid --flag "value": <problem>.`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import {
  checkedFlagValue,
  flagDurationMs,
  flagSizeBytes,
  formatAt,
} from '../../../src/config/flag-values.ts';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    assert.equal(exitCodeOf(error), EXIT_USAGE);
    return (error as Error).message;
  }
  assert.fail('accepted');
}

describe('flag values by the schema’s formats', () => {
  it('finds the format at a key, a list’s items included, and refuses a key without one', () => {
    assert.equal(formatAt(['selector']).name, 'label-selector');
    assert.equal(formatAt(['namespaces', '[]']).name, 'namespace');
    assert.equal(formatAt(['ignore', '[]']).name, 'ignore-path');
    assert.equal(formatAt(['state', 'maxAge']).name, 'age');
    assert.equal(formatAt(['shutdownTimeout']).name, 'duration-or-zero');
    assert.throws(() => formatAt(['kubeconfig']), /no format at kubeconfig/);
    assert.throws(() => formatAt(['nothing', 'here']), /no format at nothing\.here/);
  });

  it('words a refusal for the flag, with the format’s problem', () => {
    assert.equal(
      refusal(() => checkedFlagValue('--namespace', ['namespaces', '[]'], 'Shop')),
      `invalid --namespace "Shop": not a namespace name: use lowercase letters, digits and '-' (globs: * and ?).`,
    );
    assert.equal(
      refusal(() => flagDurationMs('--state-max-age', ['state', 'maxAge'], '0s')),
      'invalid --state-max-age "0s": expected a duration longer than 0.',
    );
    assert.equal(
      refusal(() => flagSizeBytes('--state-max-size', ['state', 'maxSize'], 'big')),
      'invalid --state-max-size "big": use a size such as 64MB or 1GB.',
    );
  });

  it('converts what the format accepts, with the key’s own bounds', () => {
    assert.equal(flagDurationMs('--shutdown-timeout', ['shutdownTimeout'], '0s'), 0);
    // An age has no timer's bound.
    assert.equal(flagDurationMs('--state-max-age', ['state', 'maxAge'], '1000d'), 1000 * 86_400_000);
    assert.match(
      refusal(() => flagDurationMs('--story-max-length', ['stories', 'maxLength'], '1000d')),
      /expected at most 24d/,
    );
    assert.equal(flagSizeBytes('--dead-letter-max-size', ['deadLetterMaxSize'], '2MB'), 2 * 1024 * 1024);
  });
});
