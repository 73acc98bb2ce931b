// src/util/count-text.ts: grouped digits, as toLocaleString('en-US') writes whole numbers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupedCount } from '../../src/util/count-text.ts';

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
