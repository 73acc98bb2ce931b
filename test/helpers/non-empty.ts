// A list a test goes on to check item by item (a loop, `every`, a filter then a loop), asserted to hold
// at least one item: on an empty list such checks pass with nothing checked. `what` names the items
// ("UPDATED events of web"), for the failure's message.
import assert from 'node:assert/strict';

export function nonEmpty<T>(list: T[], what: string): [T, ...T[]];
export function nonEmpty<T>(list: readonly T[], what: string): readonly [T, ...T[]];
export function nonEmpty<T>(list: readonly T[], what: string): readonly [T, ...T[]] {
  assert.ok(list.length > 0, `no ${what}: expected at least one to check`);
  return list as readonly [T, ...T[]];
}
