// The recorder's view of a store that cannot take writes for a while (a PostgreSQL database down,
// restarting or too slow): the queue is kept and the commit retried with backoff (0.5 s doubling to
// 30 s), while the watch and the sinks go on; said once when it begins and once when it ends. A failure
// that is not transient (SQLite's disk full or read-only) is not an outage: recording stops.
import { Backoff } from '../util/backoff.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { formatSize } from '../util/size.ts';
import type { StateStore } from './store.ts';

export class StoreOutage {
  private readonly store: Pick<StateStore, 'label' | 'isTransient'>;
  private readonly log: Logger;
  /** The backlog bound, for the log: what is kept meanwhile. */
  private readonly keptBytes: number;
  private isDown = false;
  private retryAt = 0;
  private readonly retry: Backoff;

  constructor(options: {
    store: Pick<StateStore, 'label' | 'isTransient'>;
    log: Logger;
    keptBytes: number;
    /** The backoff's jitter (tests: a fixed value). */
    random?: () => number;
  }) {
    this.store = options.store;
    this.log = options.log;
    this.keptBytes = options.keptBytes;
    this.retry = new Backoff(
      { initialMs: 500, maxMs: 30_000, resetAfterMs: Number.POSITIVE_INFINITY },
      options.random,
    );
  }

  /** The store failed transiently and has not taken a commit since. */
  get down(): boolean {
    return this.isDown;
  }

  /** Whether to try a commit now: always when up, or for the last one (`last`); else once the backoff allows. */
  mayTry(last = false): boolean {
    return !this.isDown || last || Date.now() >= this.retryAt;
  }

  /**
   * A commit failed: true when the failure is transient (the queue is kept, the next try waits for the
   * backoff; said when an outage begins), false when recording must stop.
   */
  failed(error: unknown): boolean {
    if (!this.store.isTransient(error)) return false;
    if (!this.isDown) {
      this.log.warn(
        `state: cannot write to ${this.store.label}: ${errorMessage(error)}; changes are still reported, and kept ` +
          `(up to ${formatSize(this.keptBytes)}) to be recorded when it answers again.`,
      );
    }
    this.isDown = true;
    this.retryAt = Date.now() + this.retry.next();
    return true;
  }

  /** A commit succeeded: an outage is over (said once). */
  succeeded(): void {
    if (!this.isDown) return;
    this.isDown = false;
    this.retry.reset();
    this.log.info(
      `state: ${this.store.label} is reachable again; the changes buffered meanwhile are recorded.`,
    );
  }

  /** Forgets an outage without a word (the queue it concerned is gone); the backoff goes on from where it was. */
  forget(): void {
    this.isDown = false;
  }
}
