// A sink's pace: the earliest time its next request may go out. One interval after the last request
// (the webhook's maxRequestsPerSecond, counted from when a request starts; a chat platform's message
// interval, counted from its answer), and never before a wait the receiver asked for (a 429's
// Retry-After) or a retry's backoff. It only keeps the time; the sink waits for it on its clock
// (DeliveryClock.waitUntil), which gives up at the shutdown deadline.

export class RateLimit {
  /** 0: no limit (the next request may go at once). */
  private readonly intervalMs: number;
  private notBefore = 0;

  constructor(intervalMs: number) {
    this.intervalMs = Math.max(0, intervalMs);
  }

  /** At most `perSecond` requests a second; none given (or not above 0): no limit. */
  static perSecond(perSecond: number | undefined): RateLimit {
    return new RateLimit(perSecond && perSecond > 0 ? 1000 / perSecond : 0);
  }

  /** The earliest time (epoch ms) the next request may go out. */
  get nextAt(): number {
    return this.notBefore;
  }

  /** A request went out (or was answered): the next one waits an interval from now. */
  spaced(): void {
    if (this.intervalMs > 0) this.notBefore = Date.now() + this.intervalMs;
  }

  /** The receiver asked for a wait, or a retry backs off: the next request waits `ms` from now. */
  hold(ms: number): void {
    this.notBefore = Date.now() + ms;
  }
}
