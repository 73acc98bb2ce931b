// src/util/timestamp.ts: the same text as Date.prototype.toISOString, without its time-zone set-up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTimestamp } from '../../../src/util/timestamp.ts';

test('writes what toISOString writes, across the calendar', () => {
  const instants = [
    0,
    1,
    999,
    Date.UTC(2026, 10, 24, 2, 17, 3, 512),
    Date.UTC(2000, 1, 29, 23, 59, 59, 999),
    Date.UTC(1969, 11, 31, 23, 59, 59, 1),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(100, 0, 1),
    -62_198_755_200_000, // year 0
  ];
  // And a spread of instants over four centuries, a few hours and milliseconds apart.
  for (let ms = Date.UTC(1900, 0, 1); ms < Date.UTC(2300, 0, 1); ms += 86_400_000 * 37 + 3_600_000 * 5 + 7) {
    instants.push(ms);
  }
  for (const ms of instants) assert.equal(isoTimestamp(ms), new Date(ms).toISOString(), String(ms));
});

test('an expanded year, and an invalid time, as toISOString has them', () => {
  assert.equal(isoTimestamp(Date.UTC(10_000, 0, 1)), '+010000-01-01T00:00:00.000Z');
  assert.equal(isoTimestamp(Date.UTC(-1, 0, 1)), '-000001-01-01T00:00:00.000Z');
  assert.throws(() => isoTimestamp(Number.NaN), RangeError);
});

test('now by default', () => {
  const before = Date.now();
  const written = Date.parse(isoTimestamp());
  assert.ok(written >= before && written <= Date.now());
});
