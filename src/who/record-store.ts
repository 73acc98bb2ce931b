// The records of one source of "who" that wait for their change, oldest first, indexed by uid and by
// name. Bounded: at most `maxRecords` (beyond it the oldest is dropped: its change goes out without
// user), each for at most `retainMs` (then it expires: the write it names failed, changed nothing
// reportable, or its change came before it and went on). Each limit is counted; the first drop is logged.
// A record that named its change is let go when it reaches the front; behind one still waiting (kept up
// to retainMs), those are let go in one pass as soon as there are more than `maxRecords` of them:
// whatever the order, at most 2 × maxRecords records are held.

import { groupedCount } from '../util/count-text.ts';
import type { Logger } from '../util/log.ts';

export interface KeptRecord<R> {
  readonly record: R;
  readonly received: number;
  used: boolean;
}

export interface RecordStoreOptions<R> {
  maxRecords: number;
  retainMs: number;
  uidOf(record: R): string | undefined;
  nameKeyOf(record: R): string | undefined;
  /** How the log line at the bound names them: 'audit records', with the setting and the metric. */
  describe: { records: string; setting: string; metric: string };
  log: Logger;
}

export class RecordStore<R> {
  private readonly options: RecordStoreOptions<R>;
  /** Oldest first, from `head`; used entries are passed over when they reach the head. */
  private kept: KeptRecord<R>[] = [];
  private head = 0;
  private live = 0;
  private readonly uids = new Map<string, Set<KeptRecord<R>>>();
  private readonly names = new Map<string, Set<KeptRecord<R>>>();
  /** Records dropped at the bound, and records that expired unused. */
  dropped = 0;
  expired = 0;

  constructor(options: RecordStoreOptions<R>) {
    this.options = options;
  }

  get size(): number {
    return this.live;
  }

  /** Records held, used ones not let go yet included (at most 2 × maxRecords). */
  get held(): number {
    return this.kept.length - this.head;
  }

  add(record: R, now: number): void {
    const kept: KeptRecord<R> = { record, received: now, used: false };
    this.kept.push(kept);
    this.live++;
    const uid = this.options.uidOf(record);
    if (uid !== undefined) addTo(this.uids, uid, kept);
    const name = this.options.nameKeyOf(record);
    if (name !== undefined) addTo(this.names, name, kept);
    while (this.live > this.options.maxRecords) {
      this.dropOldest();
      if (this.dropped++ === 0) {
        const { records, setting, metric } = this.options.describe;
        this.options.log.warn(
          `who join: more than ${groupedCount(this.options.maxRecords)} ${records} wait for their change (${setting}); ` +
            `dropping the oldest (their changes go out without user). Counted in ${metric}; logged once.`,
        );
      }
    }
  }

  /** The records kept for this uid, oldest first. */
  byUid(uid: string): Iterable<KeptRecord<R>> {
    return this.uids.get(uid) ?? [];
  }

  byName(key: string): Iterable<KeptRecord<R>> {
    return this.names.get(key) ?? [];
  }

  /** Takes a record out: it named its change (or can name none any more). */
  use(kept: KeptRecord<R>): R {
    if (kept.used) return kept.record;
    kept.used = true;
    this.live--;
    const uid = this.options.uidOf(kept.record);
    if (uid !== undefined) removeFrom(this.uids, uid, kept);
    const name = this.options.nameKeyOf(kept.record);
    if (name !== undefined) removeFrom(this.names, name, kept);
    // Used records behind one still waiting: let go in one pass once they outnumber maxRecords.
    if (this.held - this.live > this.options.maxRecords) {
      this.kept = this.kept.slice(this.head).filter((entry) => !entry.used);
      this.head = 0;
    }
    return kept.record;
  }

  /** Drops what was kept longer than `retainMs`: counted as expired. */
  expire(now: number): void {
    for (let oldest = this.oldest(); oldest; oldest = this.oldest()) {
      if (now - oldest.received < this.options.retainMs) break;
      this.dropOldest();
      this.expired++;
    }
  }

  /** The oldest record not used yet (used ones are passed over for good). */
  private oldest(): KeptRecord<R> | undefined {
    while (this.head < this.kept.length) {
      const oldest = this.kept[this.head] as KeptRecord<R>;
      if (!oldest.used) return oldest;
      this.kept[this.head] = undefined as unknown as KeptRecord<R>;
      this.head++;
    }
    this.kept = [];
    this.head = 0;
    return undefined;
  }

  private dropOldest(): void {
    const oldest = this.oldest();
    if (!oldest) return;
    this.use(oldest);
    if (this.head > 1024 && this.head * 2 > this.kept.length) {
      this.kept = this.kept.slice(this.head);
      this.head = 0;
    }
  }
}

/** A Set per key keeps arrival order and removes in constant time. */
export function addTo<T>(map: Map<string, Set<T>>, key: string, value: T): void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(value);
}

export function removeFrom<T>(map: Map<string, Set<T>>, key: string, value: T): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
