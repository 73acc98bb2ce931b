import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nonEmpty } from '../../helpers/non-empty.ts';

test('returns the list itself, typed with a first item', () => {
  const events = ['ADDED', 'UPDATED'];
  const checked = nonEmpty(events, 'events');
  assert.equal(checked, events);
  // Typed: the first item is a string, not string | undefined (tsc checks this line).
  const first: string = checked[0];
  assert.equal(first, 'ADDED');
  const frozen: readonly number[] = Object.freeze([1]);
  assert.deepEqual(nonEmpty(frozen, 'numbers'), [1]);
});

test('an empty list fails, naming what was expected', () => {
  assert.throws(() => nonEmpty([], 'UPDATED events of web'), {
    name: 'AssertionError',
    message: 'no UPDATED events of web: expected at least one to check',
  });
});
