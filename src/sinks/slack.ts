// Posts to Slack through an incoming webhook or, with a bot token, through
// chat.postMessage to a channel. Slack takes about one message per second
// per webhook or channel, so this sink never sends faster than that: events
// that arrive meanwhile are gathered, and the next message shows them one by
// one when they are few, or as a digest when they are many. A 429 waits for
// Retry-After while events keep gathering, so a burst or an outage costs a
// few messages, never hours of backlog. Memory is bounded: beyond `capacity`
// waiting events only counts are kept.

import type { ChangeEvent } from '../events/event.ts';
import type { Story, StoryBuilder, StoryOptions, StoryStats } from '../events/story.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { redactUrl } from '../util/url.ts';
import { type DeadLetterFile, lossNote } from './dead-letter.ts';
import { abandonDigest, HttpSink, plural, type RetryOptions } from './delivery.ts';
import { Digest } from './digest.ts';
import { bodyExcerpt, type PostOutcome, postJson, reasonWithRetryAfter } from './http.ts';
import type { SinkReport, SinkStats } from './sink.ts';
import {
  DEFAULT_SLACK_FORMAT,
  renderSlackMessage,
  type SlackFormatOptions,
  showsEventsInFull,
} from './slack-format.ts';
import { sinkStoryBuilder } from './story-builder.ts';
import { renderStorySlack } from './story-format.ts';

export type SlackTarget =
  /** An incoming webhook URL (https://hooks.slack.com/services/…); a credential. */
  | { kind: 'webhook'; url: string }
  /** A bot token (xoxb-…) and the channel to post to (an ID such as C0123456789, or #name). */
  | { kind: 'bot'; token: string; channel: string; apiUrl?: string };

export interface SlackSinkOptions {
  target: SlackTarget;
  /** For logs; default 'slack <scheme://host/…>' or 'slack #channel'. */
  name?: string;
  /** Per request. Default 10 s. */
  timeoutMs?: number;
  /** Minimum time between two messages. Default 1000 ms (Slack's rate limit). */
  minIntervalMs?: number;
  /** Wait this long after a first event for related ones (a rollout is several events). Default 300 ms. */
  gatherMs?: number;
  /** Events kept in full while waiting (for the message and the dead-letter file); beyond that only counted. Default 1000… */
  capacity?: number;
  /** …or this many bytes of them (as JSON), whichever comes first. Default 16 MiB. */
  capacityBytes?: number;
  format?: Partial<SlackFormatOptions>;
  /** One message per story instead of per event (README, "Stories"); absent: per event. */
  stories?: Partial<StoryOptions>;
  retry?: Partial<RetryOptions>;
  deadLetter?: DeadLetterFile;
  userAgent?: string;
  log: Logger;
}

const SLACK_DEFAULTS = {
  apiUrl: 'https://slack.com/api',
  timeoutMs: 10_000,
  minIntervalMs: 1_000,
  gatherMs: 300,
  capacity: 1_000,
  capacityBytes: 16 * 1024 * 1024,
  /** More stories than this waiting for their turn (Slack's pace) go out together as one digest. */
  storyBacklog: 5,
};

/** chat.postMessage errors worth retrying; every other `error` is final. */
const RETRYABLE_API_ERRORS = new Set([
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

const API_ERROR_HINTS: Record<string, string> = {
  channel_not_found: 'check --slack-channel (a channel ID such as C0123456789, or #name)',
  not_in_channel: 'invite the app to the channel (/invite @your-app)',
  is_archived: 'the channel is archived',
  invalid_auth: 'check the token in KUBEDIFF_SLACK_TOKEN',
  not_authed: 'set a bot token in KUBEDIFF_SLACK_TOKEN',
  token_revoked: 'the token in KUBEDIFF_SLACK_TOKEN was revoked',
  account_inactive: 'the token in KUBEDIFF_SLACK_TOKEN belongs to a deactivated app or user',
  missing_scope: 'the token needs the chat:write scope',
};

const WEBHOOK_ERROR_HINTS: Record<string, string> = {
  no_service: 'the webhook URL is wrong or was revoked',
  channel_not_found: "the webhook's channel no longer exists",
  channel_is_archived: "the webhook's channel is archived",
  action_prohibited: 'an admin restricted posting to this channel',
};

export class SlackSink extends HttpSink {
  private readonly options: SlackSinkOptions;
  private readonly url: URL;
  private readonly minIntervalMs: number;
  private readonly gatherMs: number;
  private readonly capacity: number;
  private readonly capacityBytes: number;
  private readonly format: SlackFormatOptions;
  private pending: Digest;
  private pendingSince = 0;
  private inFlight: Digest | undefined;
  private nextSendAt = 0;
  private readonly stories: StoryBuilder | undefined;
  /** Closed stories waiting for their message, each with its events as a batch (for the accounting). */
  private ready: { story: Story; batch: Digest }[] = [];
  protected readonly loop: Promise<void>;

  constructor(options: SlackSinkOptions) {
    super({
      name: options.name ?? slackSinkName(options.target),
      timeoutMs: options.timeoutMs ?? SLACK_DEFAULTS.timeoutMs,
      retry: options.retry,
      log: options.log,
      deadLetter: options.deadLetter,
    });
    this.options = options;
    const target = options.target;
    this.url =
      target.kind === 'webhook'
        ? new URL(target.url)
        : new URL(`${(target.apiUrl ?? SLACK_DEFAULTS.apiUrl).replace(/\/+$/, '')}/chat.postMessage`);
    this.minIntervalMs = options.minIntervalMs ?? SLACK_DEFAULTS.minIntervalMs;
    this.gatherMs = options.gatherMs ?? SLACK_DEFAULTS.gatherMs;
    this.capacity = Math.max(1, options.capacity ?? SLACK_DEFAULTS.capacity);
    this.capacityBytes = options.capacityBytes ?? SLACK_DEFAULTS.capacityBytes;
    this.format = { ...DEFAULT_SLACK_FORMAT, ...options.format };
    this.pending = this.newBatch();
    this.stories = options.stories
      ? sinkStoryBuilder(this.name, options.stories, options.log, (story) => {
          const batch = this.newBatch();
          try {
            for (const event of story.events) batch.add(event);
          } catch (error) {
            // A story closes on a timer, where nothing else would report this: account for it here.
            this.counters.lost += story.count;
            this.trouble.warn(`a story could not be queued: ${errorMessage(error)}`);
            return;
          }
          this.ready.push({ story, batch });
          this.wakeup.notify();
        })
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
    const stories =
      (this.stories?.pendingEvents ?? 0) + this.ready.reduce((sum, entry) => sum + entry.batch.count, 0);
    return { ...this.counters, pending: this.pending.count + (this.inFlight?.count ?? 0) + stories };
  }

  storyStats(): StoryStats | undefined {
    return this.stories?.stats();
  }

  close(timeoutMs: number): Promise<SinkReport> {
    // Open stories are told now: their owners may not go quiet before the shutdown timeout.
    this.stories?.flush();
    return this.closeWith(timeoutMs, () => {
      for (const entry of this.ready) this.abandon(entry.batch, 'not delivered within the shutdown timeout');
      this.ready = [];
      if (!this.pending.isEmpty) {
        this.abandon(this.pending, 'not delivered within the shutdown timeout');
        this.pending = this.newBatch();
      }
    });
  }

  private newBatch(): Digest {
    return new Digest({ retain: this.capacity, retainBytes: this.capacityBytes });
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
      try {
        await this.send(batch);
      } catch (error) {
        // A bug must not end deliveries silently: account for this message and go on with the next.
        this.trouble.warn(`unexpected failure: ${errorMessage(error)}; going on with the next events.`);
        this.abandon(batch, `unexpected failure: ${errorMessage(error)}`);
      } finally {
        this.inFlight = undefined;
      }
    }
  }

  /**
   * The next story as one message; when more stories wait than Slack's pace lets through in a few
   * seconds, all of them as one digest (the same digest as a burst of events).
   */
  private async sendStories(): Promise<void> {
    let entry: { story?: Story; batch: Digest } | undefined;
    if (this.ready.length > SLACK_DEFAULTS.storyBacklog) {
      const batch = this.newBatch();
      for (const waiting of this.ready) batch.merge(waiting.batch);
      this.ready = [];
      entry = { batch };
    } else {
      entry = this.ready.shift();
    }
    if (!entry) return;
    this.inFlight = entry.batch;
    try {
      await this.send(entry.batch, entry.story);
    } catch (error) {
      this.trouble.warn(`unexpected failure: ${errorMessage(error)}; going on with the next events.`);
      this.abandon(entry.batch, `unexpected failure: ${errorMessage(error)}`);
    } finally {
      this.inFlight = undefined;
    }
  }

  /** Sends `batch` (as `story`'s message when given), folding in whatever arrives while it waits to be retried. */
  private async send(batch: Digest, story?: Story): Promise<void> {
    let failures = 0;
    let attempts = 0;
    for (;;) {
      attempts++;
      const message = story ? renderStorySlack(story, this.format) : renderSlackMessage(batch, this.format);
      const startedAt = performance.now();
      const outcome = classify(
        await postJson(this.agent, this.url, JSON.stringify(this.payload(message)), {
          headers: this.headers(),
          timeoutMs: this.timeoutMs,
          signal: this.clock.deadlineSignal,
        }),
        this.options.target.kind,
      );
      this.trouble.requestDone(startedAt, outcome.ok);
      this.nextSendAt = Date.now() + this.minIntervalMs;
      if (outcome.ok) {
        this.delay.reset();
        this.trouble.recovered();
        if (story || showsEventsInFull(batch, this.format)) this.counters.delivered += batch.count;
        else {
          this.counters.summarized += batch.count;
          this.counters.digests++;
        }
        return;
      }
      const final = this.finalFailure(
        outcome,
        `status ${outcome.status ?? ''} ${outcome.reason}`,
        this.describeLoss(batch),
      );
      if (final) {
        this.abandon(batch, final.reason);
        return;
      }
      let wait: number;
      if (outcome.status === 429) {
        // Slack's own pacing: wait as told; events keep gathering, so this does not count as a failure.
        wait = Math.max(outcome.retryAfterMs ?? this.delay.next(), this.minIntervalMs);
      } else {
        failures++;
        if (failures >= this.retry.maxAttempts) {
          this.trouble.refused(
            `gave up: ${outcome.status ?? outcome.reason}`,
            `${outcome.reason}; gave up after ${plural(failures, 'attempt')}. ${this.describeLoss(batch)}`,
          );
          this.abandon(batch, `${outcome.reason} (gave up after ${plural(failures, 'attempt')})`);
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
        batch.merge(this.pending);
        this.pending = this.newBatch();
      }
    }
  }

  private payload(message: { text: string; blocks: unknown[] }): Record<string, unknown> {
    const base = { text: message.text, blocks: message.blocks, unfurl_links: false, unfurl_media: false };
    const target = this.options.target;
    return target.kind === 'bot' ? { channel: target.channel.replace(/^#/, ''), ...base } : base;
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': this.options.userAgent ?? 'kubediff',
    };
    const target = this.options.target;
    if (target.kind === 'bot') headers.authorization = `Bearer ${target.token}`;
    return headers;
  }

  private describeLoss(batch: Digest): string {
    return lossNote(plural(batch.count, 'event'), this.options.deadLetter);
  }

  /** Events that will not reach Slack: kept ones to the dead-letter file, the rest counted as lost. */
  private abandon(batch: Digest, reason: string): void {
    if (!batch.isEmpty) abandonDigest(this.counters, this.options.deadLetter, this.name, reason, batch);
  }
}

/** The name a Slack sink goes by in logs and reports when its config gives none: the host, or the channel. */
export function slackSinkName(target: SlackTarget): string {
  return target.kind === 'webhook'
    ? `slack ${redactUrl(new URL(target.url))}`
    : `slack ${channelLabel(target.channel)}`;
}

function channelLabel(channel: string): string {
  return channel.startsWith('#') || /^[CGD][A-Z0-9]{6,}$/.test(channel) ? channel : `#${channel}`;
}

/** A chat.postMessage answer is 200 even for errors: `{"ok": false, "error": "channel_not_found"}`. */
function classify(outcome: PostOutcome, kind: SlackTarget['kind']): PostOutcome {
  if (kind === 'bot' && outcome.ok) {
    let answer: { ok?: unknown; error?: unknown } | undefined;
    try {
      answer = JSON.parse(outcome.body) as { ok?: unknown; error?: unknown };
    } catch {
      answer = undefined;
    }
    if (answer?.ok === true) return outcome;
    const error = typeof answer?.error === 'string' ? answer.error : undefined;
    const hint = error ? API_ERROR_HINTS[error] : undefined;
    return {
      ok: false,
      retryable: error !== undefined && RETRYABLE_API_ERRORS.has(error),
      aborted: false,
      status: outcome.status,
      reason: error
        ? `Slack answered "${error}"${hint ? ` (${hint})` : ''}`
        : `Slack answered HTTP ${outcome.status} without ok: ${bodyExcerpt(outcome.body) || '(empty)'}`,
      body: outcome.body,
    };
  }
  if (!outcome.ok && !outcome.retryable && outcome.body !== undefined) {
    const code = outcome.body.trim();
    const hint = kind === 'webhook' ? WEBHOOK_ERROR_HINTS[code] : undefined;
    if (hint) return { ...outcome, reason: `${outcome.reason} (${hint})` };
    if (kind === 'bot') {
      try {
        const error = (JSON.parse(code) as { error?: unknown }).error;
        const apiHint = typeof error === 'string' ? API_ERROR_HINTS[error] : undefined;
        if (apiHint) return { ...outcome, reason: `${outcome.reason} (${apiHint})` };
      } catch {
        // Not JSON: the excerpt in the reason says enough.
      }
    }
  }
  return outcome;
}
