// What the HTTP sinks share: the retry policy, a wake-up signal for their
// delivery loop, the shutdown clock (closing, then a hard deadline), and the
// rules for telling people about trouble: the first failure of an episode
// and its recovery are logged, each distinct refusal once, never one line
// per event.
import type { Dispatcher } from 'undici';
import type { ChangeEvent, KubediffEvent } from '../../events/event.ts';
import { Backoff } from '../../util/backoff.ts';
import { plural } from '../../util/count-text.ts';
import { Credentials, scrubbingLogger } from '../../util/credentials.ts';
import { formatDuration } from '../../util/duration.ts';
import { errorMessage } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';
import { monotonicMs } from '../../util/timestamp.ts';
import type { DeadLetterFile } from './dead-letter.ts';
import type { Digest } from './digest.ts';
import { createAgent } from './http.ts';
import { emptyStats, type Sink, type SinkReport, type SinkStats } from './sink.ts';

export interface RetryOptions {
  /** Attempts per request, the first included. */
  maxAttempts: number;
  /** The first retry waits about this long (±50% jitter); each further one twice as long… */
  initialDelayMs: number;
  /** …up to this. A receiver's Retry-After is honoured even when longer (up to 10 minutes). */
  maxDelayMs: number;
}

const DEFAULT_RETRY: RetryOptions = { maxAttempts: 8, initialDelayMs: 1_000, maxDelayMs: 60_000 };

/**
 * The backoff of one sink's retries: RetryOptions' delays, doubling with ±50% jitter, reset after a
 * success. A receiver's Retry-After is a minimum (http.ts caps it at 10 minutes).
 */
export function retryBackoff(options: RetryOptions, random?: () => number): Backoff {
  return new Backoff(
    {
      initialMs: options.initialDelayMs,
      maxMs: options.maxDelayMs,
      factor: 2,
      jitter: 0.5,
      resetAfterMs: Number.POSITIVE_INFINITY,
      maxRetryAfterMs: Number.POSITIVE_INFINITY,
    },
    random,
  );
}

/** Wakes a waiting loop when there is work (or when it must stop). */
class Wakeup {
  private waiters: (() => void)[] = [];

  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  /** Resolves on the next notify(), after `ms` if given, or when `signal` aborts. Leaves no timer behind. */
  wait(ms?: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || (ms !== undefined && ms <= 0)) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((waiter) => waiter !== done);
        resolve();
      };
      this.waiters.push(done);
      if (ms !== undefined) timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Closing begins when close() is called (sleeps are cut short so the loop can decide whether a retry still
 * fits); the deadline aborts whatever is in flight.
 */
class ShutdownClock {
  private readonly closingController = new AbortController();
  private readonly deadlineController = new AbortController();
  private deadlineAt = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;

  get closing(): boolean {
    return this.closingController.signal.aborted;
  }

  /** Aborted when close() begins. */
  get closingSignal(): AbortSignal {
    return this.closingController.signal;
  }

  /** Aborted at the deadline: in-flight requests are cut short. */
  get deadlineSignal(): AbortSignal {
    return this.deadlineController.signal;
  }

  get expired(): boolean {
    return this.deadlineController.signal.aborted;
  }

  begin(timeoutMs: number): void {
    if (this.closing) return;
    this.deadlineAt = Date.now() + Math.max(0, timeoutMs);
    this.closingController.abort();
    this.timer = setTimeout(() => this.deadlineController.abort(), Math.max(0, timeoutMs));
  }

  dispose(): void {
    clearTimeout(this.timer);
  }

  /**
   * Waits until `at` (epoch ms). Before closing, close() interrupts the wait; while closing, waiting past
   * the deadline is not possible: returns false when `at` is beyond it (the caller gives up instead).
   */
  async waitUntil(at: number, wakeup: Wakeup): Promise<boolean> {
    for (;;) {
      const now = Date.now();
      if (now >= at) return true;
      if (this.closing) {
        if (at > this.deadlineAt) return false;
        await wakeup.wait(at - now, this.deadlineSignal);
        if (this.expired) return false;
      } else {
        await wakeup.wait(at - now, this.closingSignal);
      }
    }
  }
}

/**
 * What every queued sink is given, beside what is its own (each sink's options say its defaults): its
 * name in logs, its time limit and retries, where what it cannot deliver goes, who counts its requests.
 */
export interface DeliveryOptions {
  /** For logs and reports; never holds a credential. */
  name?: string | undefined;
  /**
   * The sink's own credentials (sink-credentials.ts): scrubbed from its receivers' answers before they
   * are quoted, and from every line it logs. None by default.
   */
  credentials?: Credentials | undefined;
  /** Time limit of one request. */
  timeoutMs?: number | undefined;
  retry?: Partial<RetryOptions> | undefined;
  deadLetter?: DeadLetterFile | undefined;
  /** Told of each request and retry (metrics). */
  deliveries?: DeliveryObserver | undefined;
  log: Logger;
}

/**
 * Who learns of a sink's HTTP deliveries, for metrics (src/service/metrics/sink-metrics.ts): each request's
 * duration and outcome, and each retry. Given to each sink when it is built (absent unless `--listen` is).
 */
export interface DeliveryObserver {
  request(sink: string, seconds: number, outcome: 'ok' | 'error'): void;
  retry(sink: string): void;
}

/** Distinct kinds of refusal a sink logs before it logs further ones with --debug only. */
const MAX_REFUSAL_KEYS = 32;

/** Tells people about delivery trouble without repeating themselves. */
export class TroubleReport {
  private readonly name: string;
  private readonly log: Logger;
  private readonly deliveries: DeliveryObserver | undefined;
  private failing = false;
  private readonly refusals = new Set<string>();

  constructor(name: string, log: Logger, deliveries?: DeliveryObserver) {
    this.name = name;
    this.log = log;
    this.deliveries = deliveries;
  }

  /** A retryable failure; logged when an episode of failures begins, later ones go to --debug. */
  retrying(reason: string, delayMs: number, attempt: number): void {
    this.deliveries?.retry(this.name);
    const detail = `${this.name}: ${reason}; retrying in ${formatDuration(delayMs)} (attempt ${attempt + 1})`;
    if (this.failing) {
      this.log.debug(detail);
      return;
    }
    this.failing = true;
    this.log.warn(`${detail}; events wait in the queue meanwhile.`);
  }

  /** One HTTP request is over (for metrics): how long it took since `startedAt` (monotonicMs()). */
  requestDone(startedAt: number, ok: boolean): void {
    this.deliveries?.request(this.name, (monotonicMs() - startedAt) / 1000, ok ? 'ok' : 'error');
  }

  /** A success: ends an episode of failures. */
  recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info(`${this.name}: delivering again.`);
  }

  /**
   * A request refused for good (4xx) or given up on; each distinct `key` (a status, a kind of failure:
   * never text a receiver chooses, which may differ on every answer) is logged once. The keys remembered
   * are bounded: beyond MAX_REFUSAL_KEYS, further refusals go to --debug, said once.
   */
  refused(key: string, message: string): void {
    if (this.refusals.has(key) || this.refusals.size > MAX_REFUSAL_KEYS) {
      this.log.debug(`${this.name}: ${message}`);
      return;
    }
    this.refusals.add(key);
    if (this.refusals.size > MAX_REFUSAL_KEYS) {
      this.log.warn(
        `${this.name}: ${message} (${MAX_REFUSAL_KEYS} kinds of refusal logged already: further ones only with --debug)`,
      );
      return;
    }
    this.log.warn(`${this.name}: ${message}`);
  }

  info(message: string): void {
    this.log.info(`${this.name}: ${message}`);
  }

  warn(message: string): void {
    this.log.warn(`${this.name}: ${message}`);
  }

  debug(message: string): void {
    this.log.debug(`${this.name}: ${message}`);
  }
}

/**
 * What the queued sinks (the chat platforms, webhooks, the batch sinks of batch-sink.ts)
 * share: their retry schedule, the wake-up of their delivery loop, the shutdown clock, the trouble report
 * and the counters, and close(): begin the shutdown clock, let the delivery loop finish, hand what is left
 * to `abandonRest`, then release the connections (`release`) and report.
 */
export abstract class DeliverySink implements Sink {
  readonly name: string;
  protected readonly timeoutMs: number;
  protected readonly retry: RetryOptions;
  protected readonly delay: Backoff;
  protected readonly wakeup = new Wakeup();
  protected readonly clock = new ShutdownClock();
  protected readonly trouble: TroubleReport;
  protected readonly counters: SinkStats = emptyStats();
  /** What its receivers' answers are scrubbed of (post() takes it). */
  protected readonly credentials: Credentials;
  private readonly deadLetterFile: DeadLetterFile | undefined;
  /** The delivery loop, started by the subclass once it is set up. */
  protected abstract readonly loop: Promise<void>;
  private closed: Promise<SinkReport> | undefined;

  /** `defaults`: the sink's, for what `options` leaves out. */
  constructor(options: DeliveryOptions, defaults: { name: string; timeoutMs: number }) {
    this.name = options.name ?? defaults.name;
    this.timeoutMs = options.timeoutMs ?? defaults.timeoutMs;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.delay = retryBackoff(this.retry);
    this.credentials = options.credentials ?? Credentials.none;
    this.trouble = new TroubleReport(
      this.name,
      scrubbingLogger(options.log, this.credentials),
      options.deliveries,
    );
    this.deadLetterFile = options.deadLetter;
  }

  abstract deliver(event: ChangeEvent): void;
  abstract stats(): SinkStats;
  abstract close(timeoutMs: number): Promise<SinkReport>;

  /** Releases the connections once the delivery loop is over. */
  protected abstract release(): Promise<void>;

  /**
   * One delivery (a message, a request, a batch): a bug in `send` must not end the delivery loop silently,
   * so its events are accounted for (`abandon`, with the reason) and the loop goes on with the next. Said
   * once per kind of error (its class), as refusals are: a failure that repeats on every batch is one line.
   */
  protected async contained(send: () => Promise<void>, abandon: (reason: string) => void): Promise<void> {
    try {
      await send();
    } catch (error) {
      const reason = `unexpected failure: ${errorMessage(error)}`;
      const kind = error instanceof Error ? error.name : typeof error;
      this.trouble.refused(`unexpected: ${kind}`, `${reason}; going on with the next events.`);
      abandon(reason);
    }
  }

  /**
   * The retries are used up after `attempts`: said once per `key` (with `loss`, what becomes of the
   * events); returns the reason the dead-letter file records.
   */
  protected gaveUp(reason: string, key: string, attempts: number, loss: string): string {
    const gaveUp = `gave up after ${plural(attempts, 'attempt')}`;
    this.trouble.refused(`gave up: ${key}`, `${reason}; ${gaveUp}. ${loss}`);
    return `${reason} (${gaveUp})`;
  }

  /**
   * A delivery that failed for good, or undefined when it is worth retrying: cut short by the shutdown,
   * or refused (said once per `refusalKey`; `loss` says what becomes of the events). Returns the reason
   * the dead-letter file records, and whether the receiver refused it (that is logged already).
   */
  protected finalFailure(
    failure: { aborted: boolean; retryable: boolean; reason: string },
    refusalKey: string,
    loss: string,
  ): { reason: string; refused: boolean } | undefined {
    if (failure.aborted) return { reason: 'in flight when the shutdown timeout ran out', refused: false };
    if (failure.retryable) return undefined;
    this.trouble.refused(refusalKey, `${failure.reason}; not retried. ${loss}`);
    return { reason: `${failure.reason} (not retried)`, refused: true };
  }

  protected closeWith(timeoutMs: number, abandonRest: () => void): Promise<SinkReport> {
    this.closed ??= (async () => {
      this.clock.begin(timeoutMs);
      this.wakeup.notify();
      await this.loop;
      this.clock.dispose();
      abandonRest();
      await this.release().catch(() => {});
      return {
        name: this.name,
        stats: this.stats(),
        ...(this.deadLetterFile ? { deadLetterFile: this.deadLetterFile.path } : {}),
      };
    })();
    return this.closed;
  }
}

/** A DeliverySink that POSTs over HTTP: its connection pool. */
export abstract class HttpSink extends DeliverySink {
  protected readonly agent: Dispatcher;

  constructor(...args: ConstructorParameters<typeof DeliverySink>) {
    super(...args);
    this.agent = createAgent(this.timeoutMs);
  }

  protected release(): Promise<void> {
    return this.agent.destroy();
  }
}

/**
 * A digest that will not be delivered: the events it keeps in full go to the dead-letter file with its
 * counts, together with `alreadyWritten` events written there when they were evicted from it; the rest
 * are counted lost (all but `alreadyWritten` when the file cannot be written).
 */
export function abandonDigest<E extends KubediffEvent>(
  counters: SinkStats,
  file: DeadLetterFile | undefined,
  sink: string,
  reason: string,
  digest: Digest<E>,
  alreadyWritten = 0,
): void {
  const kept = digest.events.length;
  if (file?.writeDigest(sink, reason, digest.toPayload())) {
    counters.deadLettered += kept + alreadyWritten;
    counters.lost += digest.count - kept - alreadyWritten;
  } else {
    counters.deadLettered += alreadyWritten;
    counters.lost += digest.count - alreadyWritten;
  }
}
