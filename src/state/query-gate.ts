// A bound on the history queries waiting for a reader that answers one at a time (the SQLite worker
// thread, the PostgreSQL connection): beyond `max` waiting or running, a query is refused at once with
// ReaderBusy (the UI answers 503), rather than queued without end behind a slow one.
import { ReaderBusy } from './reader-busy.ts';

export class QueryGate {
  private readonly max: number;
  private pending = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Queries waiting or running now. */
  get size(): number {
    return this.pending;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.pending >= this.max) {
      throw new ReaderBusy(`${this.max} history queries are waiting, the most held.`);
    }
    this.pending++;
    try {
      return await work();
    } finally {
      this.pending--;
    }
  }
}

/** Documented in docs/ui.md ("Limits"): queries waiting or running per reader. */
export const QUERY_QUEUE_LIMIT = 32;
