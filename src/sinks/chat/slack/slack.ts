// Posts to Slack through an incoming webhook or, with a bot token, through
// chat.postMessage to a channel, on the chat delivery core (chat.ts: one
// message a second at most, gathering, digests, 429s): what is Slack's own
// here is the message (slack-format.ts), the bot's headers and body, and
// what Slack's answers mean. A bot has threads: an OUTCOME is a reply
// (`thread_ts`) to its change's message, whose first line chat.update rewrites.

import { bodyExcerpt, type PostOutcome } from '../../core/http.ts';
import { type ChatPlatform, ChatSink, type ChatSinkOptions, type ChatThreads } from '../core/chat.ts';
import { slackSinkName as nameOf } from './config.ts';
import { renderSlackChatMessage, SLACK_PACE, type SlackMessage, withFirstLine } from './slack-format.ts';

export type SlackTarget =
  /** An incoming webhook URL (https://hooks.slack.com/services/…); a credential. */
  | { kind: 'webhook'; url: string }
  /** A bot token (xoxb-…) and the channel to post to (an ID such as C0123456789, or #name). */
  | { kind: 'bot'; token: string; channel: string; apiUrl?: string };

/** The chat core's options (chat.ts), with Slack's target in place of a platform. */
export interface SlackSinkOptions extends Omit<ChatSinkOptions, 'platform' | 'name' | 'minIntervalMs'> {
  target: SlackTarget;
  /** For logs; default 'slack <scheme://host/…>' or 'slack #channel'. */
  name?: string;
  /** Minimum time between two messages. Default 1000 ms (Slack's rate limit). */
  minIntervalMs?: number;
}

const SLACK_API_URL = 'https://slack.com/api';
/** Slack takes about one message per second per webhook or channel. */
export const SLACK_MIN_INTERVAL_MS = 1_000;

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

/** Slack on the chat delivery core: Block Kit messages (slack-format.ts), and what Slack's answers mean. */
export class SlackSink extends ChatSink {
  constructor({ target, name, minIntervalMs, ...chat }: SlackSinkOptions) {
    super({
      ...chat,
      platform: slackPlatform(target),
      name: name ?? slackSinkName(target),
      minIntervalMs: minIntervalMs ?? SLACK_MIN_INTERVAL_MS,
    });
  }
}

function slackPlatform(target: SlackTarget): ChatPlatform {
  return {
    url: target.kind === 'webhook' ? new URL(target.url) : apiMethod(target, 'chat.postMessage'),
    ...(target.kind === 'bot' ? { threads: botThreads(target) } : {}),
    pace: SLACK_PACE,
    render(chat) {
      const message = renderSlackChatMessage(chat);
      // No previews, and Slack's documented defaults stated: no parsing of names into links or mentions.
      const base = {
        text: message.text,
        blocks: message.blocks,
        unfurl_links: false,
        unfurl_media: false,
        parse: 'none',
        link_names: false,
      };
      return target.kind === 'bot' ? { channel: target.channel.replace(/^#/, ''), ...base } : base;
    },
    headers: (): Record<string, string> =>
      target.kind === 'bot' ? { authorization: `Bearer ${target.token}` } : {},
    classify: (outcome) => classify(outcome, target.kind),
  };
}

function apiMethod(target: Extract<SlackTarget, { kind: 'bot' }>, method: string): URL {
  return new URL(`${(target.apiUrl ?? SLACK_API_URL).replace(/\/+$/, '')}/${method}`);
}

/**
 * A bot's threads: chat.postMessage answers where the message is (`channel`, an ID, and `ts`); a reply
 * names it in `thread_ts`; chat.update takes the channel's ID (never its name) and the ts.
 */
function botThreads(target: Extract<SlackTarget, { kind: 'bot' }>): ChatThreads {
  return {
    posted(body, answer) {
      let parsed: { channel?: unknown; ts?: unknown } | undefined;
      try {
        parsed = JSON.parse(answer) as { channel?: unknown; ts?: unknown };
      } catch {
        return undefined;
      }
      if (typeof parsed?.channel !== 'string' || typeof parsed.ts !== 'string') return undefined;
      return { channel: parsed.channel, ts: parsed.ts, body };
    },
    reply: (body, thread) => ({ ...(body as object), channel: thread.channel, thread_ts: thread.ts }),
    edit(thread, headline) {
      const posted = thread.body as SlackMessage;
      const message = withFirstLine({ text: posted.text, blocks: posted.blocks }, headline);
      return {
        url: apiMethod(target, 'chat.update'),
        body: { channel: thread.channel, ts: thread.ts, ...message, parse: 'none', link_names: false },
      };
    },
  };
}

/** The name a Slack sink goes by in logs and reports when its config gives none: the host, or the channel. */
function slackSinkName(target: SlackTarget): string {
  return nameOf(target.kind === 'webhook' ? { webhookUrl: target.url } : { channel: target.channel });
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
