// The one retry schedule (src/util/backoff.ts), with the reflector's numbers and the sinks'.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryBackoff } from '../../../src/sinks/core/delivery.ts';
import { Backoff } from '../../../src/util/backoff.ts';

describe('backoff', () => {
  it('doubles from 800ms to the cap, spreads with jitter, honours Retry-After and resets after quiet', () => {
    const backoff = new Backoff({ jitter: 0 }, () => 0.5);
    const delays = Array.from({ length: 8 }, () => backoff.next(undefined, 1_000));
    assert.deepEqual(delays, [800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000]);
    // Retry-After is a minimum, up to the cap: a server cannot park a watch for a day.
    assert.equal(backoff.next(20_000, 1_000), 30_000);
    assert.equal(new Backoff({ jitter: 0 }).next(20_000, 1_000), 20_000);
    assert.equal(backoff.next(45_000, 1_000), 30_000);
    assert.equal(backoff.next(86_400_000, 1_000), 30_000);
    assert.equal(backoff.next(undefined, 1_000 + 121_000), 800);
    const jittered = new Backoff({ jitter: 0.5 }, () => 0);
    assert.equal(jittered.next(), 400);
  });

  it("with the sinks' numbers: 1s doubling to 60s, and a receiver's Retry-After honoured beyond that", () => {
    const backoff = retryBackoff({ maxAttempts: 8, initialDelayMs: 1_000, maxDelayMs: 60_000 }, () => 0.5);
    const delays = Array.from({ length: 8 }, () => backoff.next(undefined, 1_000));
    assert.deepEqual(delays, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    assert.equal(backoff.next(300_000, 1_000_000), 300_000);
    backoff.reset();
    assert.equal(backoff.next(undefined, 10_000_000), 1_000);
    assert.equal(
      retryBackoff({ maxAttempts: 3, initialDelayMs: 1_000, maxDelayMs: 60_000 }, () => 0).next(),
      500,
    );
  });
});
