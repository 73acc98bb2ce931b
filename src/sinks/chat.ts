// The chat delivery core: what Slack, Microsoft Teams, Discord, Mattermost
// and Google Chat sinks share. People read these messages, and every
// platform takes only about one message a second (or less), so this sink
// never sends faster than its interval: events that arrive meanwhile are
// gathered, and the next message shows them one by one when they are few,
// or as a digest when they are many. A 429 waits for the platform's retry
// hint while events keep gathering, so a burst or an outage costs a few
// messages, never hours of backlog. Memory is bounded: beyond `capacity`
// waiting events only counts are kept. What a message looks like, and what
// an answer means, is the platform's renderer (ChatPlatform). With stories on
// (docs/stories.md), events are grouped per owner and each story is one
// message (story-format.ts); when more stories wait than the platform's pace
// lets through in a few seconds, they go out together as one digest.

import type { ChangeEvent } from '../events/event.ts';
import type { Story, StoryBuilder, StoryOptions, StoryStats } from '../events/story.ts';
import { plural } from '../util/count-text.ts';
import { errorMessage } from '../util/errors.ts';
import { SINK_SPLIT } from '../util/memory-budget.ts';
import { monotonicMs } from '../util/timestamp.ts';
import { type ChatMessage, chatMessage, DEFAULT_CHAT_FORMAT } from './chat-message.ts';
import { lossNote } from './dead-letter.ts';
import { type DeliveryOptions, HttpSink } from './delivery.ts';
import type { Digest } from './digest.ts';
import { type PostOutcome, post, reasonWithRetryAfter } from './http.ts';
import type { SinkReport, SinkStats } from './sink.ts';
import { sinkStoryBuilder } from './story-builder.ts';
import { storyMessage } from './story-format.ts';
import { StoryQueue } from './story-queue.ts';

/** One chat platform: where to post, how a chat message reads there, and what its answers mean. */
export interface ChatPlatform {
  /** The URL posted to; a credential (webhook URLs are), never logged beyond scheme and host. */
  readonly url: URL;
  /** How fast the platform takes messages, in words, for a digest's note. */
  readonly pace: string;
  /** The request body for a message (chat-message.ts). */
  render(message: ChatMessage): unknown;
  /** Extra request headers (a bot token). */
  headers?(): Record<string, string>;
  /** What an answer means beyond its status (Slack's `ok: false`, Discord's `retry_after`). */
  classify?(outcome: PostOutcome): PostOutcome;
}

/** Beside the platform's: DeliveryOptions (timeout 10 s by default). */
export interface ChatSinkOptions extends DeliveryOptions {
  platform: ChatPlatform;
  /** For logs and reports; never holds a credential. */
  name: string;
  /** Minimum time between two messages: the platform's rate limit. */
  minIntervalMs: number;
  /** Wait this long after a first event for related ones (a rollout is several events). Default 300 ms. */
  gatherMs?: number;
  /**
   * Events kept in full while waiting (for the message and the dead-letter file): in the gathering batch,
   * and in the closed stories waiting for their turn (story-queue.ts); beyond that they are summarized in
   * a digest and written to the dead-letter file. Default 1000…
   */
  capacity?: number;
  /** …or this many bytes of them (as JSON), whichever comes first. Default 16 MiB (the settings give each sink its share of the heap). */
  capacityBytes?: number;
  /** One message per story instead of per event (docs/stories.md); absent: per event. */
  stories?: Partial<StoryOptions>;
  userAgent?: string;
}

const CHAT_DEFAULTS = {
  timeoutMs: 10_000,
  gatherMs: 300,
  capacity: 1_000,
  capacityBytes: SINK_SPLIT.queue.chatMaxBytes,
  /** More stories than this waiting for their turn (the platform's pace) go out together as one digest. */
  storyBacklog: 5,
};

/** The request body for everything `batch` stands for (its events one by one when few, else a digest), and which. */
export function renderBatch(platform: ChatPlatform, batch: Digest): { body: unknown; inFull: boolean } {
  const message = chatMessage(batch, DEFAULT_CHAT_FORMAT, platform.pace);
  return { body: platform.render(message), inFull: message.inFull };
}

export class ChatSink extends HttpSink {
  private readonly platform: ChatPlatform;
  private readonly options: ChatSinkOptions;
  private readonly minIntervalMs: number;
  private readonly gatherMs: number;
  private pending: Digest;
  private pendingSince = 0;
  private inFlight: Digest | undefined;
  private nextSendAt = 0;
  private readonly stories: StoryBuilder | undefined;
  /** Closed stories waiting for their message, bounded; also where every batch is made and abandoned. */
  private readonly ready: StoryQueue;
  protected readonly loop: Promise<void>;

  constructor(options: ChatSinkOptions) {
    super(options, { name: options.name, timeoutMs: CHAT_DEFAULTS.timeoutMs });
    this.options = options;
    this.platform = options.platform;
    this.minIntervalMs = options.minIntervalMs;
    this.gatherMs = options.gatherMs ?? CHAT_DEFAULTS.gatherMs;
    this.ready = new StoryQueue({
      sink: this.name,
      capacity: Math.max(1, options.capacity ?? CHAT_DEFAULTS.capacity),
      capacityBytes: options.capacityBytes ?? CHAT_DEFAULTS.capacityBytes,
      counters: this.counters,
      trouble: this.trouble,
      deadLetter: options.deadLetter,
    });
    this.pending = this.newBatch();
    this.stories = options.stories
      ? sinkStoryBuilder(this.name, options.stories, options.log, (story) => this.storyClosed(story))
      : undefined;
    this.loop = this.run();
  }

  deliver(event: ChangeEvent): void {
    this.counters.accepted++;
    if (this.clock.closing) {
      const batch = this.newBatch();
      batch.add(event);
      this.abandon(batch, 'arrived after shutdown began');
      return;
    }
    if (this.stories) {
      this.stories.add(event);
      return;
    }
    if (this.pending.isEmpty) this.pendingSince = Date.now();
    this.pending.add(event);
    this.wakeup.notify();
  }

  stats(): SinkStats {
    const stories = (this.stories?.pendingEvents ?? 0) + this.ready.pendingEvents;
    return { ...this.counters, pending: this.pending.count + (this.inFlight?.count ?? 0) + stories };
  }

  storyStats(): StoryStats | undefined {
    return this.stories?.stats();
  }

  close(timeoutMs: number): Promise<SinkReport> {
    // Open stories are told now: their owners may not go quiet before the shutdown timeout.
    this.stories?.flush();
    return this.closeWith(timeoutMs, () => {
      this.ready.abandonAll('not delivered within the shutdown timeout');
      if (!this.pending.isEmpty) {
        this.abandon(this.pending, 'not delivered within the shutdown timeout');
        this.pending = this.newBatch();
      }
    });
  }

  private newBatch(): Digest {
    return this.ready.newBatch();
  }

  /** A closed story waits for its message, its events kept as a batch for the accounting. */
  private storyClosed(story: Story): void {
    try {
      this.ready.push(story);
    } catch (error) {
      // A story closes on a timer, where nothing else would report this: account for it here.
      this.counters.lost += story.count;
      this.trouble.warn(`a story could not be queued: ${errorMessage(error)}`);
      return;
    }
    this.wakeup.notify();
  }

  private async run(): Promise<void> {
    for (;;) {
      if (this.clock.expired) return;
      if (this.ready.length > 0) {
        if (!(await this.clock.waitUntil(this.nextSendAt, this.wakeup))) return;
        await this.sendStories();
        continue;
      }
      if (this.pending.isEmpty) {
        if (this.clock.closing) return;
        await this.wakeup.wait();
        continue;
      }
      // Related events (a rollout) come within moments of each other: gather them into one message.
      if (!this.clock.closing && Date.now() < this.pendingSince + this.gatherMs) {
        await this.wakeup.wait(this.pendingSince + this.gatherMs - Date.now(), this.clock.closingSignal);
        continue;
      }
      if (!(await this.clock.waitUntil(this.nextSendAt, this.wakeup))) return;
      const batch = this.pending;
      this.pending = this.newBatch();
      this.inFlight = batch;
      await this.contained(
        () => this.send(batch),
        (reason) => this.abandon(batch, reason),
      );
      this.inFlight = undefined;
    }
  }

  /**
   * The next story as one message; when more stories wait than the platform's pace lets through in a
   * few seconds, all of them as one digest (the same digest as a burst of events).
   */
  private async sendStories(): Promise<void> {
    const entry = this.ready.next(CHAT_DEFAULTS.storyBacklog);
    if (!entry) return;
    const { batch, story } = entry;
    this.inFlight = batch;
    await this.contained(
      () => this.send(batch, story),
      (reason) => this.abandon(batch, reason),
    );
    this.inFlight = undefined;
  }

  /** Sends `batch` (as `story`'s message when given), folding in whatever arrives while it waits to be retried. */
  private async send(batch: Digest, story?: Story): Promise<void> {
    let failures = 0;
    let attempts = 0;
    for (;;) {
      attempts++;
      const message = story
        ? storyMessage(story)
        : chatMessage(batch, DEFAULT_CHAT_FORMAT, this.platform.pace);
      const startedAt = monotonicMs();
      const answer = await post(
        this.agent,
        this.platform.url,
        JSON.stringify(this.platform.render(message)),
        {
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'user-agent': this.options.userAgent ?? 'kubediff',
            ...this.platform.headers?.(),
          },
          timeoutMs: this.timeoutMs,
          signal: this.clock.deadlineSignal,
          credentials: this.credentials,
        },
      );
      const outcome = this.platform.classify ? this.platform.classify(answer) : answer;
      this.trouble.requestDone(startedAt, outcome.ok);
      this.nextSendAt = Date.now() + this.minIntervalMs;
      if (outcome.ok) {
        this.delay.reset();
        this.trouble.recovered();
        if (message.inFull) this.counters.delivered += batch.count;
        else {
          this.counters.summarized += batch.count;
          this.counters.digests++;
        }
        return;
      }
      // Said once per status: a receiver's error body may differ on every request (a request id).
      const final = this.finalFailure(
        outcome,
        `status ${outcome.status ?? 'none'}`,
        this.describeLoss(batch),
      );
      if (final) {
        this.abandon(batch, final.reason);
        return;
      }
      let wait: number;
      if (outcome.status === 429) {
        // The platform's own pacing: wait as told; events keep gathering, so this is not a failure.
        wait = Math.max(outcome.retryAfterMs ?? this.delay.next(), this.minIntervalMs);
      } else {
        failures++;
        if (failures >= this.retry.maxAttempts) {
          const key = String(outcome.status ?? outcome.reason);
          this.abandon(batch, this.gaveUp(outcome.reason, key, failures, this.describeLoss(batch)));
          return;
        }
        wait = this.delay.next(outcome.retryAfterMs);
      }
      this.trouble.retrying(reasonWithRetryAfter(outcome), wait, attempts);
      this.nextSendAt = Date.now() + wait;
      if (!(await this.clock.waitUntil(this.nextSendAt, this.wakeup))) {
        this.abandon(batch, `${outcome.reason}; the next attempt was due after the shutdown timeout`);
        return;
      }
      // Everything that arrived meanwhile goes out with this message (a story stays that story).
      if (!story) {
        this.ready.merge(batch, this.pending);
        this.pending = this.newBatch();
      }
    }
  }

  private describeLoss(batch: Digest): string {
    return lossNote(plural(batch.count, 'event'), this.options.deadLetter);
  }

  /** Events that will not reach the platform: kept ones to the dead-letter file, the rest counted as lost. */
  private abandon(batch: Digest, reason: string): void {
    this.ready.abandon(batch, reason);
  }
}
