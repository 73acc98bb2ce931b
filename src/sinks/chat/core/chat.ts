// The chat delivery core that Slack, Teams, Discord, Mattermost and Google Chat share (docs/sinks.md):
// never faster than the platform's interval (rate-limit.ts); events that arrive meanwhile are gathered
// and go out one by one when few, as a digest when many; a 429 waits for the platform's hint while events
// keep gathering, so a burst or an outage costs a few messages, never hours of backlog. Bounded: beyond
// `capacity` events (or capacityBytes) waiting, only counts are kept. With stories, each story is one
// message, and more stories waiting than the pace lets through go out as one digest. The platform's
// renderer (ChatPlatform) says what a message looks like and what an answer means.
// An OUTCOME is a follow-up in the same channel once its change's message is out (at most OUTCOME_WAIT_MS);
// with Slack threads, a reply in that thread and that message's first line rewritten (docs/outcomes.md).

import type { ChangeEvent, OutcomeEvent } from '../../../events/event.ts';
import { WORKLOAD_KINDS } from '../../../events/outcomes/workload-health.ts';
import type { Story, StoryBuilder, StoryOptions, StoryStats } from '../../../events/story.ts';
import { groupOf } from '../../../kube/types.ts';
import { plural } from '../../../util/count-text.ts';
import { errorMessage } from '../../../util/errors.ts';
import { SINK_SPLIT } from '../../../util/memory-budget.ts';
import { monotonicMs } from '../../../util/timestamp.ts';
import { lossNote } from '../../core/dead-letter.ts';
import { abandonDigest, type DeliveryOptions, HttpSink } from '../../core/delivery.ts';
import { Digest } from '../../core/digest.ts';
import { type PostOptions, type PostOutcome, post, reasonWithRetryAfter } from '../../core/http.ts';
import { RateLimit } from '../../core/rate-limit.ts';
import type { SinkReport, SinkStats } from '../../core/sink.ts';
import { sinkStoryBuilder } from '../../core/story-builder.ts';
import { storyMessage } from '../../core/story-format.ts';
import { StoryQueue } from '../../core/story-queue.ts';
import { type ChatMessage, chatMessage, DEFAULT_CHAT_FORMAT, type Line } from './chat-message.ts';
import { outcomeHeadline, outcomeMessage, rolledOutImage } from './outcome-message.ts';

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
  /** Threads and edits, where the platform has them for this sink (Slack with a bot token). */
  readonly threads?: ChatThreads;
}

/** A posted message, as the platform locates it (Slack: its channel ID and ts) and as it was posted. */
export interface ChatThread {
  readonly channel: string;
  readonly ts: string;
  /** The request body it was posted with, for an edit of its first line. */
  readonly body: unknown;
}

export interface ChatThreads {
  /** Where the message just posted with `body` is, from the platform's answer; undefined when it does not say. */
  posted(body: unknown, answer: string): ChatThread | undefined;
  /** `body` as a reply in `thread`. */
  reply(body: unknown, thread: ChatThread): unknown;
  /** The request that rewrites the first line of the thread's message to `headline`. */
  edit(thread: ChatThread, headline: Line): { url: URL; body: unknown };
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

/**
 * An OUTCOME waits at most this long for the message of the change it follows (a story closes within
 * its maximum length, 60 s by default, then waits for its turn); then it is posted on its own.
 */
export const OUTCOME_WAIT_MS = 120_000;
/** OUTCOMEs waiting for their message at most; beyond, the oldest is given up (dead-letter file, or lost). */
export const OUTCOMES_WAITING = 100;
/** Workload changes remembered as not yet posted; beyond, the oldest is forgotten (its OUTCOME does not wait for it). */
const AWAITED_CHANGES = 10_000;
/** Posted workload changes remembered for their OUTCOMEs (the image, the thread); beyond, the oldest is forgotten. */
const POSTED_CHANGES = 500;

/** What an OUTCOME's message needs of its change's message, when that was posted. */
interface PostedChange {
  /** The image the change rolled out ('shop:1.5'), for the headline. */
  image?: string;
  thread?: ChatThread;
}

interface WaitingOutcome {
  event: OutcomeEvent;
  /** Posted by then even if its change's message is not (Date.now() ms). */
  until: number;
}

/** The request body for everything `batch` stands for (its events one by one when few, else a digest), and which. */
export function renderBatch(platform: ChatPlatform, batch: Digest): { body: unknown; inFull: boolean } {
  const message = chatMessage(batch, DEFAULT_CHAT_FORMAT, platform.pace);
  return { body: platform.render(message), inFull: message.inFull };
}

export class ChatSink extends HttpSink {
  private readonly platform: ChatPlatform;
  private readonly options: ChatSinkOptions;
  private readonly gatherMs: number;
  private pending: Digest;
  private pendingSince = 0;
  private inFlight: Digest | undefined;
  /** The platform's pace: one message per minIntervalMs, counted from the last answer. */
  private readonly pace: RateLimit;
  private readonly stories: StoryBuilder | undefined;
  /** Closed stories waiting for their message, bounded; also where every batch is made and abandoned. */
  private readonly ready: StoryQueue;
  /** OUTCOMEs waiting for the message of their change, oldest first (at most OUTCOMES_WAITING). */
  private readonly outcomes: WaitingOutcome[] = [];
  private outcomesOverflowed = false;
  private editFailed = false;
  /** Changes accepted whose message is not posted (nor given up) yet, by id. */
  private readonly awaited = new Set<string>();
  /** Changes whose message was posted, by id. */
  private readonly posted = new Map<string, PostedChange>();
  protected readonly loop: Promise<void>;

  constructor(options: ChatSinkOptions) {
    super(options, { name: options.name, timeoutMs: CHAT_DEFAULTS.timeoutMs });
    this.options = options;
    this.platform = options.platform;
    this.pace = new RateLimit(options.minIntervalMs);
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
    if (isFollowed(event)) remember(this.awaited, event.id, AWAITED_CHANGES);
    if (this.stories) {
      this.stories.add(event);
      return;
    }
    if (this.pending.isEmpty) this.pendingSince = Date.now();
    this.pending.add(event);
    this.wakeup.notify();
  }

  /** An OUTCOME: a follow-up of its change's message, once that is posted (see the header). */
  deliverOutcome(event: OutcomeEvent): void {
    this.counters.accepted++;
    if (this.clock.closing) {
      this.abandonOutcome(event, 'arrived after shutdown began');
      return;
    }
    if (this.outcomes.length >= OUTCOMES_WAITING) {
      const oldest = this.outcomes.shift() as WaitingOutcome;
      this.counters.overflows++;
      if (!this.outcomesOverflowed) {
        this.outcomesOverflowed = true;
        this.trouble.warn(
          `more than ${OUTCOMES_WAITING} OUTCOMEs wait for the messages of their changes: the oldest are given up to the dead-letter file, or lost (said once; counted in kubediff_sink_overflows_total).`,
        );
      }
      this.abandonOutcome(oldest.event, `more than ${OUTCOMES_WAITING} OUTCOMEs waiting`);
    }
    this.outcomes.push({ event, until: Date.now() + OUTCOME_WAIT_MS });
    this.wakeup.notify();
  }

  stats(): SinkStats {
    const stories = (this.stories?.pendingEvents ?? 0) + this.ready.pendingEvents;
    return {
      ...this.counters,
      pending: this.pending.count + (this.inFlight?.count ?? 0) + stories + this.outcomes.length,
    };
  }

  storyStats(): StoryStats | undefined {
    return this.stories?.stats();
  }

  close(timeoutMs: number): Promise<SinkReport> {
    // Open stories are told now: their owners may not go quiet before the shutdown timeout.
    this.stories?.flush();
    return this.closeWith(timeoutMs, () => {
      this.ready.abandonAll('not delivered within the shutdown timeout');
      for (const waiting of this.outcomes.splice(0))
        this.abandonOutcome(waiting.event, 'not delivered within the shutdown timeout');
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
        if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) return;
        await this.sendStories();
        continue;
      }
      const outcome = this.dueOutcome();
      if (outcome) {
        if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) return;
        await this.sendOutcome(outcome);
        continue;
      }
      if (this.pending.isEmpty) {
        if (this.clock.closing && this.outcomes.length === 0) return;
        const next = this.outcomes[0];
        if (next) await this.wakeup.wait(Math.max(0, next.until - Date.now()), this.clock.closingSignal);
        else await this.wakeup.wait();
        continue;
      }
      // Related events (a rollout) come within moments of each other: gather them into one message.
      if (!this.clock.closing && Date.now() < this.pendingSince + this.gatherMs) {
        await this.wakeup.wait(this.pendingSince + this.gatherMs - Date.now(), this.clock.closingSignal);
        continue;
      }
      if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) return;
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

  /**
   * The first OUTCOME whose change's message is posted (or given up), or that waited OUTCOME_WAIT_MS; at
   * shutdown, with nothing else to send, any (their changes' messages will not come).
   */
  private dueOutcome(): OutcomeEvent | undefined {
    const now = Date.now();
    const nothingElse = this.clock.closing && this.pending.isEmpty && this.ready.length === 0;
    const index = this.outcomes.findIndex(
      (waiting) =>
        nothingElse || waiting.until <= now || !waiting.event.follows.some((id) => this.awaited.has(id)),
    );
    if (index < 0) return undefined;
    return this.outcomes.splice(index, 1)[0]?.event;
  }

  /** An OUTCOME's message: a reply in its change's thread (and an edit of that message), else a follow-up. */
  private async sendOutcome(event: OutcomeEvent): Promise<void> {
    const change = event.follows.map((id) => this.posted.get(id)).find((found) => found !== undefined);
    const thread = this.platform.threads && change?.thread;
    const batch = new Digest<OutcomeEvent>({ retain: 1 });
    batch.add(event);
    await this.contained(
      async () => {
        const message = outcomeMessage(event, change?.image);
        const body = this.platform.render(message);
        const sent = await this.post(
          this.platform.url,
          thread ? (this.platform.threads as ChatThreads).reply(body, thread) : body,
          batch,
        );
        if (!sent) return;
        this.counters.delivered++;
        if (thread) await this.editFirstLine(thread, outcomeHeadline(event, change?.image));
      },
      (reason) => abandonDigest(this.counters, this.options.deadLetter, this.name, reason, batch),
    );
  }

  /** Rewrites the first line of a posted message: one attempt, its failure said (the OUTCOME was posted). */
  private async editFirstLine(thread: ChatThread, headline: Line): Promise<void> {
    const edit = (this.platform.threads as ChatThreads).edit(thread, headline);
    const startedAt = monotonicMs();
    const answer = await post(this.agent, edit.url, JSON.stringify(edit.body), this.requestOptions());
    const outcome = this.platform.classify ? this.platform.classify(answer) : answer;
    this.trouble.requestDone(startedAt, outcome.ok);
    if (!outcome.ok && !this.editFailed) {
      this.editFailed = true;
      this.trouble.warn(
        `could not edit the message of a change to say its outcome (${outcome.reason}); the OUTCOME was posted in its thread (said once).`,
      );
    }
  }

  /** Every request's: the platform's headers (a bot token), the timeout, the shutdown, the credentials to scrub. */
  private requestOptions(): PostOptions {
    return {
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': this.options.userAgent ?? 'kubediff',
        ...this.platform.headers?.(),
      },
      timeoutMs: this.timeoutMs,
      signal: this.clock.deadlineSignal,
      credentials: this.credentials,
    };
  }

  /**
   * Posts `body` until it is taken (true), retrying as for any message; false when it was given up (then
   * `batch`, what it stands for, is accounted for).
   */
  private async post(url: URL, body: unknown, batch: Digest<OutcomeEvent>): Promise<boolean> {
    let failures = 0;
    let attempts = 0;
    const loss = () => lossNote(plural(batch.count, 'OUTCOME'), this.options.deadLetter);
    const giveUp = (reason: string) =>
      abandonDigest(this.counters, this.options.deadLetter, this.name, reason, batch);
    for (;;) {
      attempts++;
      const startedAt = monotonicMs();
      const answer = await post(this.agent, url, JSON.stringify(body), this.requestOptions());
      const outcome = this.platform.classify ? this.platform.classify(answer) : answer;
      this.trouble.requestDone(startedAt, outcome.ok);
      this.pace.spaced();
      if (outcome.ok) {
        this.delay.reset();
        this.trouble.recovered();
        return true;
      }
      const final = this.finalFailure(outcome, `status ${outcome.status ?? 'none'}`, loss());
      if (final) {
        giveUp(final.reason);
        return false;
      }
      let wait: number;
      if (outcome.status === 429) {
        wait = Math.max(outcome.retryAfterMs ?? this.delay.next(), this.options.minIntervalMs);
      } else {
        failures++;
        if (failures >= this.retry.maxAttempts) {
          giveUp(this.gaveUp(outcome.reason, String(outcome.status ?? outcome.reason), failures, loss()));
          return false;
        }
        wait = this.delay.next(outcome.retryAfterMs);
      }
      this.trouble.retrying(reasonWithRetryAfter(outcome), wait, attempts);
      this.pace.hold(wait);
      if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) {
        giveUp(`${outcome.reason}; the next attempt was due after the shutdown timeout`);
        return false;
      }
    }
  }

  private abandonOutcome(event: OutcomeEvent, reason: string): void {
    const batch = new Digest<OutcomeEvent>({ retain: 1 });
    batch.add(event);
    abandonDigest(this.counters, this.options.deadLetter, this.name, reason, batch);
  }

  /** The changes of a posted message: no longer awaited; remembered with the image and the thread. */
  private postedChanges(batch: Digest, body: unknown, answer: string): void {
    const thread = this.platform.threads?.posted(body, answer);
    for (const event of batch.events) {
      if (!isFollowed(event)) continue;
      this.awaited.delete(event.id);
      const image = rolledOutImage(event);
      remember(this.posted, event.id, POSTED_CHANGES, {
        ...(image ? { image } : {}),
        ...(thread ? { thread } : {}),
      });
    }
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
      const body = this.platform.render(message);
      const startedAt = monotonicMs();
      const answer = await post(this.agent, this.platform.url, JSON.stringify(body), this.requestOptions());
      const outcome = this.platform.classify ? this.platform.classify(answer) : answer;
      this.trouble.requestDone(startedAt, outcome.ok);
      this.pace.spaced();
      if (outcome.ok) {
        this.delay.reset();
        this.trouble.recovered();
        this.postedChanges(batch, body, outcome.body);
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
        wait = Math.max(outcome.retryAfterMs ?? this.delay.next(), this.options.minIntervalMs);
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
      this.pace.hold(wait);
      if (!(await this.clock.waitUntil(this.pace.nextAt, this.wakeup))) {
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
    for (const event of batch.events) this.awaited.delete(event.id);
    this.ready.abandon(batch, reason);
  }
}

/** A change of a workload whose rollouts are followed: what an OUTCOME follows (not its pods, its ReplicaSets). */
function isFollowed(event: ChangeEvent): boolean {
  return WORKLOAD_KINDS.has(`${groupOf(event.object.apiVersion)}/${event.object.resource}`);
}

/** Adds `key` to a Set or Map kept to `max` entries, the oldest forgotten first. */
function remember<V>(into: Set<string> | Map<string, V>, key: string, max: number, value?: V): void {
  if (into instanceof Map) {
    into.delete(key);
    into.set(key, value as V);
  } else into.add(key);
  while (into.size > max) {
    const oldest = into.keys().next().value;
    if (oldest === undefined) break;
    into.delete(oldest);
  }
}
