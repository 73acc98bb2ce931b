// A local fake of Slack's Web API (https://docs.slack.dev/reference/methods/chat.postMessage,
// …/chat.update) on loopback, for a bot's threads: it answers as Slack does (HTTP 200 with `ok`, and
// `error` when not), checks what Slack checks and what kubediff must get right, and keeps the channel's
// messages as Slack would show them.
//
// - chat.postMessage: a bot token, a channel (an ID, or a name that Slack resolves: the answer names the
//   ID), a valid Block Kit payload with its `text`; a `thread_ts` must be the ts of a message of that
//   channel that is not itself a reply (`thread_not_found` otherwise). Answers the channel ID and a new ts.
// - chat.update: a channel ID (a name is `channel_not_found`, as Slack answers), the ts of a message of that
//   channel (`message_not_found`), `text` and valid blocks; the message's text and blocks are replaced.
//
//   const slack = await FakeSlackApi.start({ token: 'xoxb-test' });
//   …run kubediff with KUBEDIFF_SLACK_TOKEN=xoxb-test, --slack-channel '#alerts',
//      KUBEDIFF_SLACK_API_URL=slack.apiUrl…
//   slack.messages  // top-level messages, each with its replies and edits
import { HttpReceiver, type ReceivedRequest, type Reply } from './http-receiver.ts';
import { blockKitProblems, type SlackPayload } from './slack-payload.ts';

export interface FakeSlackMessage {
  channel: string;
  ts: string;
  /** The message it replies to (a thread), when it does. */
  threadTs?: string;
  text: string;
  blocks: unknown[];
  /** The text and blocks it was posted with. */
  posted: { text: string; blocks: unknown[] };
  /** What chat.update set, in order (the message's text and blocks are the last). */
  edits: { text: string; blocks: unknown[] }[];
}

export class FakeSlackApi {
  readonly receiver: HttpReceiver;
  /** Every message posted, in order (replies too). */
  readonly messages: FakeSlackMessage[] = [];
  /** Requests Slack refused, with its error: a test expecting none asserts this is empty. */
  readonly refused: { method: string; error: string; body: string }[] = [];
  private readonly token: string;
  private sequence = 0;
  private readonly refusals = new Map<string, string>();

  private constructor(receiver: HttpReceiver, token: string) {
    this.receiver = receiver;
    this.token = token;
  }

  static async start(options: { token: string }): Promise<FakeSlackApi> {
    let fake: FakeSlackApi | undefined;
    const receiver = await HttpReceiver.start({ respond: (request) => fake?.answer(request) });
    fake = new FakeSlackApi(receiver, options.token);
    return fake;
  }

  /** The base URL, as Slack's https://slack.com/api. */
  get apiUrl(): string {
    return this.receiver.url('/api');
  }

  /** Top-level messages of the channel. */
  topLevel(): FakeSlackMessage[] {
    return this.messages.filter((message) => message.threadTs === undefined);
  }

  repliesTo(message: FakeSlackMessage): FakeSlackMessage[] {
    return this.messages.filter(
      (reply) => reply.channel === message.channel && reply.threadTs === message.ts,
    );
  }

  /** The next call of `method` is answered `{"ok": false, "error": error}`, as Slack does. */
  refuseNext(method: string, error: string): void {
    this.refusals.set(method, error);
  }

  close(): Promise<void> {
    return this.receiver.close();
  }

  private answer(request: Omit<ReceivedRequest, 'reply'>): Reply {
    const method = request.path.replace(/^\/api\//, '');
    const error = (code: string): Reply => {
      this.refused.push({ method, error: code, body: request.body });
      return json({ ok: false, error: code });
    };
    const refusal = this.refusals.get(method);
    if (refusal !== undefined) {
      this.refusals.delete(method);
      return error(refusal);
    }
    if (request.method !== 'POST') return error('invalid_request');
    if (request.headers.authorization !== `Bearer ${this.token}`) return error('invalid_auth');
    if (!String(request.headers['content-type']).startsWith('application/json'))
      return error('invalid_form_data');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(request.body) as Record<string, unknown>;
    } catch {
      return error('invalid_json');
    }
    const problems = blockKitProblems(body as unknown as SlackPayload);
    if (problems.length > 0) return error(`invalid_blocks: ${problems.join('; ')}`);
    if (method === 'chat.postMessage') return this.postMessage(body, error);
    if (method === 'chat.update') return this.update(body, error);
    return error('unknown_method');
  }

  private postMessage(body: Record<string, unknown>, error: (code: string) => Reply): Reply {
    const channel = channelId(body.channel, true);
    if (!channel) return error('channel_not_found');
    const threadTs = body.thread_ts;
    if (threadTs !== undefined) {
      const parent = this.messages.find((m) => m.channel === channel && m.ts === threadTs);
      if (typeof threadTs !== 'string' || !parent || parent.threadTs !== undefined)
        return error('thread_not_found');
    }
    this.sequence++;
    const message: FakeSlackMessage = {
      channel,
      ts: `1764640000.${String(this.sequence).padStart(6, '0')}`,
      ...(typeof threadTs === 'string' ? { threadTs } : {}),
      text: String(body.text),
      blocks: body.blocks as unknown[],
      posted: { text: String(body.text), blocks: body.blocks as unknown[] },
      edits: [],
    };
    this.messages.push(message);
    return json({ ok: true, channel, ts: message.ts, message: { text: message.text, ts: message.ts } });
  }

  private update(body: Record<string, unknown>, error: (code: string) => Reply): Reply {
    const channel = channelId(body.channel, false);
    if (!channel) return error('channel_not_found');
    const message = this.messages.find((m) => m.channel === channel && m.ts === body.ts);
    if (!message) return error('message_not_found');
    message.text = String(body.text);
    message.blocks = body.blocks as unknown[];
    message.edits.push({ text: message.text, blocks: message.blocks });
    return json({ ok: true, channel, ts: message.ts, text: message.text });
  }
}

/** The channel's ID: an ID as is; a name ('#alerts', 'alerts') only where Slack resolves names. */
function channelId(channel: unknown, namesResolve: boolean): string | undefined {
  if (typeof channel !== 'string' || channel === '') return undefined;
  if (/^[CGD][A-Z0-9]{8,}$/.test(channel)) return channel;
  if (!namesResolve) return undefined;
  return `C${channel
    .replace(/^#/, '')
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '')
    .padEnd(10, '0')}`;
}

function json(value: unknown): Reply {
  return {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify(value),
  };
}
