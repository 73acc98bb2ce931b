// src/who/listener/read-slots.ts: which read gives its place when a request finds every read taken, on a clock
// of the test's own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CutReason,
  MAX_SOURCES,
  PROMPT_BODY_MS,
  type ReadSlot,
  ReadSlots,
  STANDING_MS,
} from '../../../src/who/listener/read-slots.ts';

function slots(options: { limit: number; slowBodyMs?: number }) {
  let now = 0;
  const cuts: string[] = [];
  const reads = new ReadSlots({ ...options, now: () => now });
  const take = (source: string, name = source): ReadSlot | undefined =>
    reads.take(source, (reason: CutReason) => cuts.push(`${name}: ${reason}`));
  /** A body from `source` that arrives in `ms` and is answered with `status`. */
  const body = (source: string, ms: number, status = 200) => {
    const slot = take(source) as ReadSlot;
    now += ms;
    reads.judge(source, slot.end() && status < 400);
  };
  return {
    reads,
    take,
    body,
    cuts,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('read slots', () => {
  it('hands out free reads, then refuses a source that holds as many as any other', () => {
    const { take, reads, cuts } = slots({ limit: 2 });
    assert.ok(take('a'));
    assert.ok(take('b'));
    assert.equal(reads.reading, 2);
    assert.equal(take('a'), undefined);
    assert.deepEqual(cuts, []);
  });

  it('fair share: a source takes the place of the oldest read of the one holding at least two more', () => {
    const { take, cuts } = slots({ limit: 4 });
    for (const name of ['a1', 'a2', 'a3']) take('a', name);
    take('b', 'b1');
    // a holds 3, c none: a gives its oldest.
    assert.ok(take('c'));
    assert.deepEqual(cuts, ['a1: share']);
    // a holds 2, b and c one each: a gives nothing to b (2 < 1 + 2).
    assert.equal(take('b'), undefined);
    // …but to d, which holds none.
    assert.ok(take('d'));
    assert.deepEqual(cuts, ['a1: share', 'a2: share']);
  });

  it('standing: a source whose bodies came promptly takes the place of one whose did not', () => {
    const { take, body, cuts } = slots({ limit: 2 });
    body('api', 3);
    body('slow', PROMPT_BODY_MS + 1);
    take('slow', 'slow1');
    take('other', 'other1');
    // Two sources, one read each: no share to take; 'api' is in good standing, neither of them is.
    assert.ok(take('api'));
    assert.deepEqual(cuts, ['slow1: standing']);
  });

  it('fair share takes nothing from a source in good standing for one that is not', () => {
    const { take, body, cuts } = slots({ limit: 2 });
    body('api', 1);
    body('peer', 1);
    take('api', 'api1');
    take('api', 'api2');
    assert.equal(take('nobody'), undefined);
    assert.ok(take('peer'));
    assert.deepEqual(cuts, ['api1: share']);
  });

  it('a slow, cut or refused body keeps its source out of good standing for STANDING_MS', () => {
    const { take, body, cuts, advance } = slots({ limit: 1 });
    body('api', 1);
    body('api', 1, 400);
    take('x', 'x1');
    assert.equal(take('api'), undefined, 'refused a moment ago: no standing');
    advance(STANDING_MS + 1);
    assert.ok(take('api'));
    assert.deepEqual(cuts, ['x1: standing']);
  });

  it('a body arriving for slowBodyMs gives its place to anyone, its own source too', () => {
    const { take, cuts, advance } = slots({ limit: 1, slowBodyMs: 1_000 });
    take('a', 'a1');
    advance(999);
    assert.equal(take('a'), undefined);
    advance(1);
    assert.ok(take('a', 'a2'));
    assert.deepEqual(cuts, ['a1: slow']);
  });

  it(`remembers ${MAX_SOURCES} sources at most, forgetting the one seen least recently`, () => {
    const { take, body, cuts } = slots({ limit: 1 });
    body('api', 1);
    for (let index = 0; index < MAX_SOURCES; index++) body(`s${index}`, PROMPT_BODY_MS + 1);
    take('x', 'x1');
    assert.equal(take('api'), undefined, 'forgotten: no standing');
    assert.deepEqual(cuts, []);
  });
});
