// POSTs events to an HTTP endpoint: one event per request (the event JSON of
// the contract), or a JSON array of up to `batch.maxEvents` events and
// `batch.maxBytes` of their JSON when batching is configured (for log
// collectors); a batch refused as too large (413) is sent again in halves,
// and only an event too large alone is dead-lettered. One request at a time, in
// queue order, so events of one object arrive in the order they happened.
// Retries network errors, timeouts, 408, 425, 429 and 5xx with exponential
// backoff and jitter (Retry-After honoured); other answers are final. What
// cannot be delivered goes to the dead-letter file and is counted.

import type { ChangeEvent, KubediffEvent, OutcomeEvent } from '../../../events/event.ts';
import type { Story, StoryBuilder, StoryOptions, StoryStats } from '../../../events/story.ts';
import { plural } from '../../../util/count-text.ts';
import { errorMessage } from '../../../util/errors.ts';
import { monotonicMs } from '../../../util/timestamp.ts';
import { redactUrl } from '../../../util/url.ts';
import { type BacklogOptions, SinkBacklog } from '../../core/backlog.ts';
import { halvesOf, splitNote } from '../../core/batch-halves.ts';
import { type DeadLetterFile, lossNote } from '../../core/dead-letter.ts';
import { type DeliveryOptions, HttpSink } from '../../core/delivery.ts';
import type { Digest } from '../../core/digest.ts';
import type { EventQueue } from '../../core/event-queue.ts';
import { failureKey, post, reasonWithRetryAfter } from '../../core/http.ts';
import { RateLimit } from '../../core/rate-limit.ts';
import { WEBHOOK_HEADERS } from '../../core/receiver-checks.ts';
import type { SinkReport, SinkStats } from '../../core/sink.ts';
import { sinkStoryBuilder } from '../../core/story-builder.ts';
import { LayoutError } from './layout.ts';
import { signatureFor } from './signature.ts';
import { type WebhookFormat, type WebhookWork, webhookPayload } from './webhook-body.ts';

export interface WebhookBatchOptions {
  /** At most this many events per request (a JSON array). */
  maxEvents: number;
  /** …and at most this many bytes of their JSON (always at least one event). Default 900 KiB. */
  maxBytes?: number;
  /** Send a partial batch once its oldest event has waited this long. Default 1000 ms. */
  maxWaitMs?: number;
}

export type WebhookQueueOptions = BacklogOptions;

/** Beside the webhook's own: DeliveryOptions (timeout 10 s by default, connection to last byte). */
export interface WebhookSinkOptions extends DeliveryOptions {
  url: string;
  /** For logs; default 'webhook <scheme://host/…>'. Must not contain the URL's path. */
  name?: string;
  /** Extra request headers (Authorization, X-Team, …). */
  headers?: Readonly<Record<string, string>>;
  /** HMAC-SHA256 signing secret: adds X-Kubediff-Signature. */
  secret?: string;
  /** The body: the event's JSON (default), a CloudEvent, or a layout's (webhook-body.ts). */
  format?: WebhookFormat;
  /** Absent: one event per request. */
  batch?: WebhookBatchOptions;
  queue?: WebhookQueueOptions;
  /** At most this many requests per second. Default: no limit. */
  maxRequestsPerSecond?: number;
  /** POST one STORY payload per story instead of each event (docs/stories.md); absent: events. */
  stories?: Partial<StoryOptions>;
  userAgent?: string;
}

const WEBHOOK_DEFAULTS = {
  timeoutMs: 10_000,
  batchMaxWaitMs: 1_000,
  // Under the 1 MiB request body that nginx (in front of many receivers) takes by default.
  batchMaxBytes: 900 * 1024,
  userAgent: 'kubediff',
};

type Work = WebhookWork;

export class WebhookSink extends HttpSink {
  private readonly url: URL;
  private readonly options: WebhookSinkOptions;
  private readonly backlog: SinkBacklog;
  private readonly queue: EventQueue;
  private inFlight = 0;
  private readonly pace: RateLimit;
  private readonly stories: StoryBuilder | undefined;
  /** Closed stories waiting for their request, serialized; at most the queue's capacity of events. */
  private readyStories: { story: Story; json: string }[] = [];
  private readyStoryEvents = 0;
  protected readonly loop: Promise<void>;

  constructor(options: WebhookSinkOptions) {
    const url = new URL(options.url);
    super(options, { name: `webhook ${redactUrl(url)}`, timeoutMs: WEBHOOK_DEFAULTS.timeoutMs });
    this.options = options;
    this.url = url;
    this.pace = RateLimit.perSecond(options.maxRequestsPerSecond);
    this.backlog = new SinkBacklog(this.name, options.queue, {
      counters: this.counters,
      trouble: this.trouble,
      deadLetter: options.deadLetter,
    });
    this.queue = this.backlog.queue;
    this.stories = options.stories
      ? sinkStoryBuilder(this.name, options.stories, options.log, (story) => this.storyClosed(story))
      : undefined;
    this.deliverOutcome = options.stories ? undefined : (event) => this.queueEvent(event);
    this.loop = this.run();
  }

  deliver(event: ChangeEvent): void {
    if (this.stories) {
      this.counters.accepted++;
      if (this.clock.closing) this.abandon([event], 'arrived after shutdown began');
      else this.stories.add(event);
      return;
    }
    this.queueEvent(event);
  }

  /**
   * An OUTCOME is POSTed like an event (its own body, or in a batch); with stories on it is not offered
   * one (a STORY payload holds changes alone: docs/outcomes.md).
   */
  readonly deliverOutcome: ((event: OutcomeEvent) => void) | undefined;

  private queueEvent(event: KubediffEvent): void {
    this.counters.accepted++;
    if (this.clock.closing) {
      this.abandon([event], 'arrived after shutdown began');
      return;
    }
    this.backlog.push(event);
    this.wakeup.notify();
  }

  stats(): SinkStats {
    const stories = (this.stories?.pendingEvents ?? 0) + this.readyStoryEvents;
    return { ...this.counters, pending: this.queue.pendingEvents + this.inFlight + stories };
  }

  storyStats(): StoryStats | undefined {
    return this.stories?.stats();
  }

  /** The connections, and the layout's thread once the last request is made. */
  protected override async release(): Promise<void> {
    const format = this.options.format;
    await Promise.all([super.release(), format?.kind === 'layout' ? format.layout.close() : undefined]);
  }

  close(timeoutMs: number): Promise<SinkReport> {
    // Open stories are told now: their owners may not go quiet before the shutdown timeout.
    this.stories?.flush();
    return this.closeWith(timeoutMs, () => {
      for (const { story } of this.readyStories)
        this.abandon(story.events, 'not delivered within the shutdown timeout');
      this.readyStories = [];
      this.readyStoryEvents = 0;
      this.backlog.abandonAll('not delivered within the shutdown timeout');
    });
  }

  private async run(): Promise<void> {
    for (;;) {
      const work = await this.next();
      if (!work) return;
      this.inFlight = countOf(work);
      await this.contained(
        () => this.send(work),
        (reason) => this.failed(work, reason, false),
      );
      this.inFlight = 0;
      this.backlog.settled();
    }
  }

  /**
   * A closed story waits for its request. Beyond the queue's capacity (a receiver down for long), its
   * events join the event queue instead, where a backlog becomes a digest: memory stays bounded and
   * nothing is dropped.
   */
  private storyClosed(story: Story): void {
    if (this.readyStoryEvents + story.count > this.backlog.capacity && this.readyStories.length > 0) {
      for (const event of story.events) {
        try {
          this.backlog.push(event);
        } catch (error) {
          // A story closes on a timer, where nothing else would report this (the backlog counted it lost).
          this.trouble.warn(`event ${event.id} of ${story.id} could not be queued: ${errorMessage(error)}`);
        }
      }
      this.wakeup.notify();
      return;
    }
    let json: string;
    try {
      json = JSON.stringify(story);
    } catch (error) {
      this.counters.lost += story.count;
      this.trouble.warn(`a story could not be queued: ${errorMessage(error)}`);
      return;
    }
    this.readyStories.push({ story, json });
    this.readyStoryEvents += story.count;
    this.wakeup.notify();
  }

  /** The next request's content, once it is due; undefined when there is nothing left to do. */
  private async next(): Promise<Work | undefined> {
    for (;;) {
      if (this.clock.expired) return undefined;
      const ready = this.readyStories[0];
      if (ready) {
        if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) return undefined;
        this.pace.spaced();
        this.readyStories.shift();
        this.readyStoryEvents -= ready.story.count;
        return { kind: 'story', story: ready.story, json: ready.json };
      }
      const head = this.queue.peek();
      if (!head) {
        if (this.clock.closing) return undefined;
        await this.wakeup.wait();
        continue;
      }
      if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) return undefined;
      const batch = this.options.batch;
      if (head.kind === 'event' && batch && batch.maxEvents > 1 && !this.clock.closing) {
        const due = head.queuedAt + (batch.maxWaitMs ?? WEBHOOK_DEFAULTS.batchMaxWaitMs);
        if (this.queue.length < batch.maxEvents && Date.now() < due) {
          await this.wakeup.wait(due - Date.now(), this.clock.closingSignal);
          continue;
        }
      }
      this.pace.spaced();
      if (head.kind === 'digest') {
        this.queue.shift();
        return { kind: 'digest', digest: head.digest };
      }
      if (batch) {
        const entries = this.queue.takeEvents(
          Math.max(1, batch.maxEvents),
          batch.maxBytes ?? WEBHOOK_DEFAULTS.batchMaxBytes,
        );
        return { kind: 'batch', events: entries.map((e) => e.event), json: entries.map((e) => e.json) };
      }
      this.queue.shift();
      return { kind: 'event', event: head.event, json: head.json };
    }
  }

  private async send(work: Work): Promise<void> {
    let payload: Awaited<ReturnType<typeof webhookPayload>>;
    try {
      payload = await webhookPayload(this.options.format ?? { kind: 'json' }, work);
    } catch (error) {
      if (!(error instanceof LayoutError)) throw error;
      // The layout cannot make a body of this event: no retry will, so it is dead-lettered at once.
      const loss = describeLoss(work, this.options.deadLetter);
      this.trouble.refused(`layout: ${error.code || error.message}`, `${error.message}; not sent. ${loss}`);
      this.failed(work, error.message, false);
      return;
    }
    const body = payload.body;
    for (let attempt = 1; ; attempt++) {
      const startedAt = monotonicMs();
      const outcome = await post(this.agent, this.url, body, {
        headers: { ...payload.headers, ...this.headersFor(work, body, attempt) },
        timeoutMs: this.timeoutMs,
        signal: this.clock.deadlineSignal,
        credentials: this.credentials,
      });
      this.trouble.requestDone(startedAt, outcome.ok);
      if (outcome.ok) {
        this.delivered(work);
        return;
      }
      if (outcome.status === 413 && work.kind === 'batch' && work.events.length > 1) {
        await this.sendInHalves(work, outcome.reason);
        return;
      }
      const final = this.finalFailure(
        outcome,
        failureKey(outcome),
        describeLoss(work, this.options.deadLetter),
      );
      if (final) {
        // A refusal is logged already; a request cut short by the shutdown only with --debug.
        this.failed(work, final.reason, !final.refused);
        return;
      }
      if (attempt >= this.retry.maxAttempts) {
        const loss = describeLoss(work, this.options.deadLetter);
        this.failed(work, this.gaveUp(outcome.reason, failureKey(outcome), attempt, loss), false);
        return;
      }
      const wait = this.delay.next(outcome.retryAfterMs);
      this.trouble.retrying(reasonWithRetryAfter(outcome), wait, attempt);
      if (!(await this.clock.waitUntil(Date.now() + wait, this.wakeup))) {
        this.failed(work, `${outcome.reason}; the next retry was due after the shutdown timeout`);
        return;
      }
    }
  }

  /**
   * A batch the receiver refused as too large (413): its first half, then its second, each a batch of
   * its own (split again if need be), at the pace maxRequestsPerSecond allows. Said once: batchBytes is
   * set too high for this receiver.
   */
  private async sendInHalves(work: Extract<Work, { kind: 'batch' }>, reason: string): Promise<void> {
    this.trouble.refused('too large: HTTP 413', splitNote(reason, work));
    for (const part of halvesOf(work)) {
      if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) {
        this.failed(part, `${reason}; its part was due after the shutdown timeout`);
        continue;
      }
      this.pace.spaced();
      await this.send(part);
    }
  }

  private headersFor(work: Work, body: string, attempt: number): Record<string, string> {
    const headers: Record<string, string> = {
      'user-agent': this.options.userAgent ?? WEBHOOK_DEFAULTS.userAgent,
      ...this.options.headers,
      [WEBHOOK_HEADERS.kind]: work.kind,
      [WEBHOOK_HEADERS.attempt]: String(attempt),
    };
    if (work.kind === 'event') headers[WEBHOOK_HEADERS.eventId] = work.event.id;
    if (work.kind === 'batch') headers[WEBHOOK_HEADERS.batchSize] = String(work.events.length);
    if (work.kind === 'digest') headers[WEBHOOK_HEADERS.digestId] = work.digest.id;
    if (work.kind === 'story') headers[WEBHOOK_HEADERS.storyId] = work.story.id;
    if (this.options.secret) {
      headers[WEBHOOK_HEADERS.signature] = signatureFor(
        this.options.secret,
        body,
        Math.floor(Date.now() / 1000),
      );
    }
    return headers;
  }

  private delivered(work: Work): void {
    this.delay.reset();
    this.trouble.recovered();
    if (work.kind === 'event') this.counters.delivered++;
    else if (work.kind === 'batch') this.counters.delivered += work.events.length;
    else if (work.kind === 'story') this.counters.delivered += work.story.count;
    else {
      this.counters.summarized += work.digest.count;
      this.counters.digests++;
    }
  }

  /** A request that will not be delivered: its events go to the dead-letter file, or are counted lost. */
  private failed(work: Work, reason: string, log = true): void {
    if (log) this.trouble.debug(`${reason}: ${describeWork(work)}`);
    if (work.kind === 'event') this.abandon([work.event], reason);
    else if (work.kind === 'batch') this.abandon(work.events, reason);
    else if (work.kind === 'story') this.abandon(work.story.events, reason);
    else this.abandonDigest(work.digest, reason);
  }

  private abandon(events: readonly KubediffEvent[], reason: string): void {
    this.backlog.abandon(events, reason);
  }

  private abandonDigest(digest: Digest<KubediffEvent>, reason: string): void {
    this.backlog.abandonDigest(digest, reason);
  }
}

function countOf(work: Work): number {
  if (work.kind === 'story') return work.story.count;
  return work.kind === 'event' ? 1 : work.kind === 'batch' ? work.events.length : work.digest.count;
}

function describeWork(work: Work): string {
  if (work.kind === 'event') return `event ${work.event.id}`;
  if (work.kind === 'story') return `${work.story.id} (${plural(work.story.count, 'event')})`;
  if (work.kind === 'batch') return `${plural(work.events.length, 'event')} (a batch)`;
  return `a digest of ${plural(work.digest.count, 'event')}`;
}

function describeLoss(work: Work, file: DeadLetterFile | undefined): string {
  return lossNote(work.kind === 'event' ? `Event ${work.event.id}` : capitalize(describeWork(work)), file);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
