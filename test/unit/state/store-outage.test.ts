// A store that cannot take writes for a while (src/state/store-outage.ts): retried with backoff, said once
// when it begins and once when it ends; a failure that is not transient is no outage. Mock clock.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import { StoreOutage } from '../../../src/state/store-outage.ts';
import { silentLogger } from '../../../src/util/log.ts';

const down = new Error('connect ECONNREFUSED 10.0.0.5:5432');
const full = new Error('database or disk is full');

function setUp() {
  const said: string[] = [];
  const outage = new StoreOutage({
    store: { label: 'postgres://db:5432/state', isTransient: (error) => error === down },
    log: {
      ...silentLogger,
      warn: (message: string) => said.push(`warn ${message}`),
      info: (message: string) => said.push(`info ${message}`),
    },
    keptBytes: 64 * 1024 * 1024,
    // No jitter: 0.5 s, then 1 s.
    random: () => 0.5,
  });
  return { outage, said };
}

beforeEach(() => mock.timers.enable({ apis: ['Date'], now: 1_000_000 }));
afterEach(() => mock.timers.reset());

test('a transient failure: tried again after 0.5 s, then 1 s…; the last try at exit always; said once, and once when it ends', () => {
  const { outage, said } = setUp();
  assert.equal(outage.mayTry(), true);
  assert.equal(outage.failed(down), true);
  assert.equal(outage.down, true);
  assert.equal(outage.mayTry(), false);
  assert.equal(outage.mayTry(true), true, 'the last commit is tried whatever');
  mock.timers.tick(500);
  assert.equal(outage.mayTry(), true);
  assert.equal(outage.failed(down), true);
  mock.timers.tick(999);
  assert.equal(outage.mayTry(), false, 'the backoff doubled');
  mock.timers.tick(1);
  assert.equal(outage.mayTry(), true);
  outage.succeeded();
  outage.succeeded();
  assert.equal(outage.down, false);
  assert.deepEqual(said, [
    'warn state: cannot write to postgres://db:5432/state: connect ECONNREFUSED 10.0.0.5:5432; changes are still reported, and kept (up to 64 MiB) to be recorded when it answers again.',
    'info state: postgres://db:5432/state is reachable again; the changes buffered meanwhile are recorded.',
  ]);
});

test('a failure that is not transient is no outage: nothing said here (recording stops)', () => {
  const { outage, said } = setUp();
  assert.equal(outage.failed(full), false);
  assert.equal(outage.down, false);
  assert.deepEqual(said, []);
});

test('an outage forgotten (its queue discarded) ends without a word', () => {
  const { outage, said } = setUp();
  outage.failed(down);
  outage.forget();
  assert.equal(outage.down, false);
  outage.succeeded();
  assert.equal(said.length, 1);
});
