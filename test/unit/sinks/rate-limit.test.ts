// The sinks' rate limit (src/sinks/core/rate-limit.ts) on node:test's mock clock: an interval from the last
// request, no limit at 0 or without a rate, and a receiver's wait that replaces the interval.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { RateLimit } from '../../../src/sinks/core/rate-limit.ts';

describe('RateLimit', () => {
  beforeEach(() => mock.timers.enable({ apis: ['Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  it('lets the first request go at once, the next one interval after it', () => {
    const pace = new RateLimit(1_000);
    assert.ok(pace.nextAt <= Date.now());
    pace.spaced();
    assert.equal(pace.nextAt, 1_001_000);
    mock.timers.tick(250);
    pace.spaced();
    assert.equal(pace.nextAt, 1_001_250, 'counted from the last request, not from the previous turn');
  });

  it('per second: 4 a second is one every 250 ms; no rate, 0 or less is no limit', () => {
    const four = RateLimit.perSecond(4);
    four.spaced();
    assert.equal(four.nextAt, 1_000_250);
    for (const rate of [undefined, 0, -1]) {
      const none = RateLimit.perSecond(rate);
      none.spaced();
      assert.ok(none.nextAt <= Date.now(), `rate ${rate}: no wait`);
    }
  });

  it("a receiver's wait replaces the interval, shorter or longer; the next request spaces from then", () => {
    const pace = new RateLimit(1_000);
    pace.spaced();
    pace.hold(30_000);
    assert.equal(pace.nextAt, 1_030_000);
    pace.hold(100);
    assert.equal(pace.nextAt, 1_000_100);
    mock.timers.tick(100);
    pace.spaced();
    assert.equal(pace.nextAt, 1_001_100);
  });
});
