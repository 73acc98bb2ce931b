// Exponential backoff with jitter, the one retry schedule of the program: the reflector's watches
// (as client-go's reflector: 800ms doubling to 30s) and the sinks' deliveries (1s doubling to 60s)
// use it with their own numbers.
//
// A server's Retry-After is honoured as a minimum, but only up to maxRetryAfterMs: an API server (or a
// proxy in front of it) answering `Retry-After: 86400` must not park a resource type for a day, and a
// value beyond 24.8 days would overflow Node's timer into a 1 ms busy loop.
import { MAX_TIMER_MS } from './duration.ts';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** 0.5 spreads each delay over [0.5×, 1.5×) so that many reconnecting clients do not stampede. */
  jitter: number;
  /**
   * A success followed by this much quiet resets the delay to initialMs, so that one blip an hour never
   * waits the maximum. Infinity: only reset() does.
   */
  resetAfterMs: number;
  /** The longest Retry-After honoured. Default: maxMs. */
  maxRetryAfterMs?: number;
}

const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 800,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.5,
  resetAfterMs: 120_000,
};

export class Backoff {
  private readonly options: BackoffOptions;
  private readonly random: () => number;
  private current = 0;
  private lastFailureAt = 0;

  constructor(options: Partial<BackoffOptions> = {}, random: () => number = Math.random) {
    this.options = { ...DEFAULT_BACKOFF, ...options };
    this.random = random;
  }

  /** The delay before the next attempt. A server's Retry-After is honoured as a minimum, up to maxRetryAfterMs. */
  next(retryAfterMs?: number, now = Date.now()): number {
    if (now - this.lastFailureAt > this.options.resetAfterMs) this.current = 0;
    this.lastFailureAt = now;
    this.current =
      this.current === 0
        ? this.options.initialMs
        : Math.min(this.options.maxMs, this.current * this.options.factor);
    const spread = 1 - this.options.jitter + this.random() * 2 * this.options.jitter;
    const delay = Math.round(this.current * spread);
    if (retryAfterMs === undefined) return delay;
    return Math.max(delay, Math.min(retryAfterMs, this.options.maxRetryAfterMs ?? this.options.maxMs));
  }

  reset(): void {
    this.current = 0;
    this.lastFailureAt = 0;
  }
}

/**
 * Waits `ms` (at most as long as a Node.js timer can), or less if `signal` aborts first. Never rejects
 * and leaves no timer behind.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
