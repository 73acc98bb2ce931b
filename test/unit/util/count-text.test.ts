// src/util/count-text.ts: grouped digits, as toLocaleString('en-US') writes whole numbers, and counted words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { andList, groupedCount, plural } from '../../../src/util/count-text.ts';

test('groups digits by three, as en-US does', () => {
  const counts = [
    0,
    1,
    12,
    123,
    1_000,
    9_999,
    10_000,
    123_456,
    1_000_000,
    98_765_432,
    2 ** 53 - 1,
    -1,
    -1_234,
  ];
  for (const count of counts) assert.equal(groupedCount(count), count.toLocaleString('en-US'), String(count));
});

test('what is not a whole number stays as written', () => {
  assert.equal(groupedCount(1.5), '1.5');
  assert.equal(groupedCount(Number.POSITIVE_INFINITY), 'Infinity');
});

test('a counted word is plural unless the count is one, with the count grouped', () => {
  assert.equal(plural(0, 'event'), '0 events');
  assert.equal(plural(1, 'event'), '1 event');
  assert.equal(plural(2, 'attempt'), '2 attempts');
  assert.equal(plural(12_345, 'change'), '12,345 changes');
});

test('andList: items in words, commas between all but the last two', () => {
  assert.equal(andList([]), '');
  assert.equal(andList(['a']), 'a');
  assert.equal(andList(['a', 'b']), 'a and b');
  assert.equal(
    andList(['kubectl-annotate', 'kubectl-create', 'unknown']),
    'kubectl-annotate, kubectl-create and unknown',
  );
});
