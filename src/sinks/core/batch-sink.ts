// The delivery loop of the sinks that send events in batches (OTLP, OpenSearch/Elasticsearch, Kafka), on
// DeliverySink and SinkBacklog (bounded queue, digests when full, dead letters). One batch in flight, from
// the head of the queue (up to batchMaxEvents and batchMaxBytes, or one digest), so order per object
// holds. Too large (413, MESSAGE_TOO_LARGE): sent again in halves, only an event too large alone is
// dead-lettered. Otherwise failed: retried whole; taken in part: the retryable items go again, the others
// are dead-lettered, each refusal said once; a receiver that only counts rejects has the batch dead-lettered.
import type { ChangeEvent, KubediffEvent, OutcomeEvent } from '../../events/event.ts';
import { plural } from '../../util/count-text.ts';
import { monotonicMs } from '../../util/timestamp.ts';
import { type BacklogOptions, SinkBacklog } from './backlog.ts';
import { halvesOf, splitNote } from './batch-halves.ts';
import { type DeadLetterFile, lossNote } from './dead-letter.ts';
import { type DeliveryOptions, DeliverySink } from './delivery.ts';
import type { Digest } from './digest.ts';
import type { EventQueue } from './event-queue.ts';
import { failureKey, type PostOutcome } from './http.ts';
import type { SinkReport, SinkStats } from './sink.ts';

/** What one request carries: events (with their JSON, serialized once by the queue), or one digest. */
export type BatchWork =
  | { kind: 'events'; events: KubediffEvent[]; json: string[] }
  | { kind: 'digest'; digest: Digest<KubediffEvent> };

/** An item of a batch the receiver did not take (by its index in the batch). */
export interface ItemFailure {
  index: number;
  /** One phrase: 'HTTP 400 mapper_parsing_exception: failed to parse field [x]'. */
  reason: string;
  /** What makes two refusals the same (logged once): a status and an error type, never free text. */
  key: string;
  retryable: boolean;
}

/** What became of one request. */
export type Transmission =
  | {
      ok: true;
      /** Items the receiver did not take (the rest were delivered). */
      itemFailures?: readonly ItemFailure[];
      /** The receiver rejected this many items without saying which (OTLP partial success). */
      rejected?: { count: number; reason: string };
    }
  | {
      ok: false;
      retryable: boolean;
      /** Cut short by the shutdown deadline. */
      aborted: boolean;
      /** One phrase: 'HTTP 503 Service Unavailable', 'connection refused'. */
      reason: string;
      /**
       * What makes two failures the same (said once): 'HTTP 503', 'ECONNREFUSED', Kafka's
       * 'TOPIC_AUTHORIZATION_FAILED'; never text the receiver chooses, which may differ in every answer.
       */
      key: string;
      retryAfterMs?: number;
      /** Refused as too large (HTTP 413, Kafka's MESSAGE_TOO_LARGE): a batch of several is sent in halves. */
      tooLarge?: boolean;
    };

/** What every batch sink is given beside what is its own. */
export interface BatchSinkOptions extends DeliveryOptions {
  /** For logs and metrics: setup.ts names it (sink-name.ts) unless the config does. */
  name: string;
  /** Events per request. Default 500. */
  batchMaxEvents?: number | undefined;
  /** Bytes (UTF-8) of the events' JSON per request, at least one event each. Default: the sink's. */
  batchMaxBytes?: number | undefined;
  queue?: BacklogOptions | undefined;
}

/** What a batch sink says for what its options leave out. */
export interface BatchSinkDefaults {
  timeoutMs: number;
  /** Below what the receiver takes in one request by default (docs/sinks.md). */
  batchMaxBytes: number;
}

const DEFAULT_BATCH_MAX_EVENTS = 500;

type EventsWork = Extract<BatchWork, { kind: 'events' }>;

export abstract class BatchSink extends DeliverySink {
  private readonly backlog: SinkBacklog;
  private readonly queue: EventQueue;
  private readonly batchMaxEvents: number;
  private readonly batchMaxBytes: number;
  private readonly deadLetter: DeadLetterFile | undefined;
  private inFlight = 0;
  protected readonly loop: Promise<void>;

  /** `defaults`: the sink's, for what `options` leaves out. */
  constructor(options: BatchSinkOptions, defaults: BatchSinkDefaults) {
    super(options, { name: options.name, timeoutMs: defaults.timeoutMs });
    this.deadLetter = options.deadLetter;
    this.batchMaxEvents = Math.max(1, options.batchMaxEvents ?? DEFAULT_BATCH_MAX_EVENTS);
    this.batchMaxBytes = options.batchMaxBytes ?? defaults.batchMaxBytes;
    this.backlog = new SinkBacklog(this.name, options.queue, {
      counters: this.counters,
      trouble: this.trouble,
      deadLetter: options.deadLetter,
    });
    this.queue = this.backlog.queue;
    // Started on the next turn: the subclass's constructor finishes setting up first.
    this.loop = Promise.resolve().then(() => this.run());
  }

  /**
   * Sends one batch (honouring `this.clock.deadlineSignal`, which aborts it at the shutdown deadline).
   * Never throws for a failure the receiver or the network causes: that is a Transmission.
   */
  protected abstract transmit(work: BatchWork): Promise<Transmission>;

  deliver(event: ChangeEvent): void {
    this.queueEvent(event);
  }

  /** An OUTCOME is one more record, like an event. */
  deliverOutcome(event: OutcomeEvent): void {
    this.queueEvent(event);
  }

  private queueEvent(event: KubediffEvent): void {
    this.counters.accepted++;
    if (this.clock.closing) {
      this.backlog.abandon([event], 'arrived after shutdown began');
      return;
    }
    this.backlog.push(event);
    this.wakeup.notify();
  }

  stats(): SinkStats {
    return { ...this.counters, pending: this.queue.pendingEvents + this.inFlight };
  }

  close(timeoutMs: number): Promise<SinkReport> {
    return this.closeWith(timeoutMs, () =>
      this.backlog.abandonAll('not delivered within the shutdown timeout'),
    );
  }

  private async run(): Promise<void> {
    for (;;) {
      const work = this.next();
      if (!work) {
        if (this.clock.closing || this.clock.expired) return;
        await this.wakeup.wait();
        continue;
      }
      this.inFlight = countOf(work);
      await this.contained(
        () => this.send(work),
        (reason) => this.abandon(work, reason),
      );
      this.inFlight = 0;
      this.backlog.settled();
      if (this.clock.expired) return;
    }
  }

  private next(): BatchWork | undefined {
    const head = this.queue.peek();
    if (!head || this.clock.expired) return undefined;
    if (head.kind === 'digest') {
      this.queue.shift();
      return { kind: 'digest', digest: head.digest };
    }
    const entries = this.queue.takeEvents(this.batchMaxEvents, this.batchMaxBytes);
    return { kind: 'events', events: entries.map((e) => e.event), json: entries.map((e) => e.json) };
  }

  /** Sends `work` until it is settled; `behind` events of a batch split in halves wait for their turn. */
  private async send(work: BatchWork, behind = 0): Promise<void> {
    let pending = work;
    for (let attempt = 1; ; attempt++) {
      const startedAt = monotonicMs();
      const outcome = await this.transmit(pending);
      this.trouble.requestDone(startedAt, outcome.ok && !outcome.itemFailures?.length);
      let failure: { reason: string; key: string; retryAfterMs?: number };
      if (outcome.ok) {
        const rest = this.settle(pending, outcome);
        if (!rest) {
          this.delay.reset();
          this.trouble.recovered();
          return;
        }
        pending = rest.work;
        this.inFlight = countOf(pending) + behind;
        failure = rest;
      } else {
        if (outcome.tooLarge && !outcome.aborted && pending.kind === 'events' && pending.events.length > 1) {
          await this.sendInHalves(pending, outcome, behind);
          return;
        }
        const loss = lossNote(describeWork(pending), this.deadLetter);
        const final = this.finalFailure(outcome, outcome.key, loss);
        if (final) {
          this.abandon(pending, final.reason);
          return;
        }
        failure = outcome;
      }
      if (attempt >= this.retry.maxAttempts) {
        const loss = lossNote(describeWork(pending), this.deadLetter);
        this.abandon(pending, this.gaveUp(failure.reason, failure.key, attempt, loss));
        return;
      }
      const wait = this.delay.next(failure.retryAfterMs);
      this.trouble.retrying(failure.reason, wait, attempt);
      if (!(await this.clock.waitUntil(Date.now() + wait, this.wakeup))) {
        this.abandon(pending, `${failure.reason}; the next retry was due after the shutdown timeout`);
        return;
      }
    }
  }

  /**
   * A batch the receiver refused as too large: its first half, then its second, each sent (and split
   * again if need be) as a batch of its own. Said once: batchBytes is set too high for this receiver.
   */
  private async sendInHalves(
    work: EventsWork,
    refusal: { reason: string; key: string },
    behind: number,
  ): Promise<void> {
    const [first, second] = halvesOf(work);
    this.trouble.refused(`too large: ${refusal.key}`, splitNote(refusal.reason, work));
    this.inFlight = countOf(work) + behind;
    await this.send(first, behind + second.events.length);
    await this.send(second, behind);
  }

  /**
   * Accounts for an answer: delivered items counted, refused ones dead-lettered (each reason said once);
   * returns the items to send again, if any, and why.
   */
  private settle(
    work: BatchWork,
    outcome: Extract<Transmission, { ok: true }>,
  ): { work: BatchWork; reason: string; key: string } | undefined {
    if (work.kind === 'digest') {
      const failure = outcome.itemFailures?.[0];
      if (!failure) {
        this.counters.summarized += work.digest.count;
        this.counters.digests++;
        return undefined;
      }
      if (failure.retryable) return { work, reason: failure.reason, key: failure.key };
      this.trouble.refused(
        failure.key,
        `${failure.reason}; not retried. ${lossNote('A digest', this.deadLetter)}`,
      );
      this.backlog.abandonDigest(work.digest, `${failure.reason} (not retried)`);
      return undefined;
    }
    const failures = new Map((outcome.itemFailures ?? []).map((failure) => [failure.index, failure]));
    const again: number[] = [];
    let delivered = 0;
    work.events.forEach((event, index) => {
      const failure = failures.get(index);
      if (!failure) {
        delivered++;
      } else if (failure.retryable) {
        again.push(index);
      } else {
        this.trouble.refused(
          failure.key,
          `${failure.reason}; not retried. ${lossNote(`Event ${event.id}`, this.deadLetter)}`,
        );
        this.backlog.abandon([event], `${failure.reason} (not retried)`);
      }
    });
    const rejected = outcome.rejected;
    if (rejected && rejected.count > 0) {
      // Which ones the receiver does not say: the batch goes to the dead-letter file with the count.
      const count = Math.min(rejected.count, delivered);
      const reason = `the receiver rejected ${plural(count, 'event')} of these ${plural(work.events.length, 'event')} without saying which: ${rejected.reason}`;
      // Said once, whatever message the receiver gives (it may differ in every answer).
      this.trouble.refused(
        'rejected without saying which',
        `${reason}. ${lossNote('The batch', this.deadLetter)}`,
      );
      if (this.deadLetter?.writeEvents(this.name, reason, work.events)) this.counters.deadLettered += count;
      else this.counters.lost += count;
      delivered -= count;
    }
    this.counters.delivered += delivered;
    if (again.length === 0) return undefined;
    const first = failures.get(again[0] as number);
    return {
      work: {
        kind: 'events',
        events: again.map((index) => work.events[index] as KubediffEvent),
        json: again.map((index) => work.json[index] as string),
      },
      reason: `${first?.reason ?? 'items to retry'} (${plural(again.length, 'event')} of ${work.events.length})`,
      key: first?.key ?? 'items to retry',
    };
  }

  private abandon(work: BatchWork, reason: string): void {
    if (work.kind === 'events') this.backlog.abandon(work.events, reason);
    else this.backlog.abandonDigest(work.digest, reason);
  }
}

/**
 * A request that failed, as the batch loop takes it: the answer's reason, its key (failureKey: never the
 * receiver's text), Retry-After, and whether it was refused as too large (413). `retryable`: the sink's own
 * rule when it has one (default: the HTTP layer's).
 */
export function failedTransmission(
  outcome: Extract<PostOutcome, { ok: false }>,
  retryable = outcome.retryable,
): Transmission {
  return {
    ok: false,
    retryable,
    aborted: outcome.aborted,
    reason: outcome.reason,
    key: failureKey(outcome),
    ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
    ...(outcome.status === 413 ? { tooLarge: true } : {}),
  };
}

function countOf(work: BatchWork): number {
  return work.kind === 'events' ? work.events.length : work.digest.count;
}

function describeWork(work: BatchWork): string {
  if (work.kind === 'digest') return `A digest of ${plural(work.digest.count, 'event')}`;
  return work.events.length === 1
    ? `Event ${work.events[0]?.id}`
    : `${plural(work.events.length, 'event')} (a batch)`;
}
