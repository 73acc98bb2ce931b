// The Slack sink against a local "Slack" (a loopback HTTP server), and its Block Kit messages.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Change } from '../../../../../src/diff/types.ts';
import type { ChangeEvent, EventType } from '../../../../../src/events/event.ts';
import { DEFAULT_CHAT_FORMAT } from '../../../../../src/sinks/chat/core/chat-message.ts';
import { SlackSink, type SlackSinkOptions } from '../../../../../src/sinks/chat/slack/slack.ts';
import { renderSlackMessage } from '../../../../../src/sinks/chat/slack/slack-format.ts';
import { DeadLetterFile } from '../../../../../src/sinks/core/dead-letter.ts';
import { Digest } from '../../../../../src/sinks/core/digest.ts';
import { FakeSlackApi } from '../../../../helpers/fake-slack-api.ts';
import type { HttpReceiver } from '../../../../helpers/http-receiver.ts';
import { nonEmpty } from '../../../../helpers/non-empty.ts';
import { degradedRollout } from '../../../../helpers/outcome-fixtures.ts';
import { memoryLog, sinkTestKit } from '../../../../helpers/sink-test.ts';
import {
  blockKitProblems,
  eventsInMessage,
  type SlackPayload,
  visibleText,
} from '../../../../helpers/slack-payload.ts';

const kit = sinkTestKit<SlackSink>();
const slack = kit.receiver;

function sink(options: Partial<SlackSinkOptions> & Pick<SlackSinkOptions, 'target'>): SlackSink {
  const created = new SlackSink({
    log: memoryLog(),
    gatherMs: 50,
    minIntervalMs: 200,
    retry: { initialDelayMs: 40, maxDelayMs: 150 },
    ...options,
  });
  return kit.track(created);
}

let sequence = 0;
function event(
  type: EventType = 'UPDATED',
  options: {
    name?: string;
    namespace?: string;
    resource?: string;
    kind?: string;
    changes?: Change[];
    by?: ChangeEvent['by'];
  } = {},
): ChangeEvent {
  sequence++;
  const name = options.name ?? 'settings';
  return {
    id: `uid-${name}:${sequence}`,
    type,
    time: new Date(Date.UTC(2026, 10, 22, 10, 31, 7, sequence % 1000)).toISOString(),
    cluster: 'prod-eu',
    object: {
      apiVersion: options.resource === 'deployments' ? 'apps/v1' : 'v1',
      kind: options.kind ?? 'ConfigMap',
      resource: options.resource ?? 'configmaps',
      namespace: options.namespace ?? 'shop',
      name,
      uid: `uid-${name}`,
      resourceVersion: String(sequence),
    },
    ...(options.by ? { by: options.by } : {}),
    ...(type === 'UPDATED'
      ? {
          changes: options.changes ?? [
            { op: 'replace' as const, path: '/data/color', from: 'blue', to: 'red' },
          ],
        }
      : {}),
  };
}

function payloads(receiver: HttpReceiver): SlackPayload[] {
  return receiver.jsonBodies() as SlackPayload[];
}

function assertValid(payload: SlackPayload): void {
  assert.deepEqual(blockKitProblems(payload), [], JSON.stringify(payload, null, 1).slice(0, 3000));
}

function batchOf(events: ChangeEvent[]): Digest {
  const digest = new Digest({ retain: 1000 });
  for (const e of events) digest.add(e);
  return digest;
}

describe('Slack messages (Block Kit)', () => {
  it('names who made a change, and the manager of each change when they come from several', () => {
    const by = { managers: [{ manager: 'kubectl-set', operation: 'Update' }] };
    const one = renderSlackMessage(
      batchOf([
        event('UPDATED', {
          by,
          changes: [{ op: 'replace', path: '/data/a', from: '1', to: '2', manager: 'kubectl-set' }],
        }),
      ]),
    );
    assertValid(one);
    assert.equal(one.text, '[prod-eu] UPDATED ConfigMap shop/settings by kubectl-set (1 change)');
    assert.ok(JSON.stringify(one.blocks).includes('by *kubectl-set*'));
    assert.ok(!JSON.stringify(one.blocks).includes('_(kubectl-set)_'));
    const mixed = renderSlackMessage(
      batchOf([
        event('UPDATED', {
          by: { managers: [...by.managers, { manager: 'helm', operation: 'Update' }] },
          changes: [
            { op: 'replace', path: '/data/a', from: '1', to: '2', manager: 'kubectl-set' },
            { op: 'add', path: '/data/b', to: '3', manager: 'helm' },
          ],
        }),
        event('UPDATED', { name: 'other', by }),
      ]),
    );
    assertValid(mixed);
    const text = JSON.stringify(mixed.blocks);
    assert.ok(text.includes('_(kubectl-set)_') && text.includes('_(helm)_'), text);
    assert.ok(text.includes('by *kubectl-set, helm*'), text);
  });

  it('shows one event at a glance: cluster, type, kind namespace/name, then path: from → to', () => {
    const message = renderSlackMessage(
      batchOf([
        event('UPDATED', {
          kind: 'Deployment',
          resource: 'deployments',
          name: 'web',
          changes: [
            { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
            { op: 'add', path: '/metadata/labels/app.kubernetes.io~1name', to: 'web' },
            { op: 'remove', path: '/spec/template/spec/containers/1', from: { name: 'sidecar' } },
          ],
        }),
      ]),
    );
    assertValid(message);
    assert.deepEqual(message.blocks[0], {
      type: 'header',
      text: { type: 'plain_text', text: ':pencil2: UPDATED Deployment shop/web', emoji: true },
    });
    const text = visibleText(message);
    assert.match(text, /cluster \*prod-eu\*/);
    assert.match(text, /deployments\.apps \(apps\/v1\)/);
    assert.match(text, /10:31:07 UTC/);
    assert.match(text, /• `spec\.replicas`: `2` → `5`/);
    assert.match(text, /• `metadata\.labels\["app\.kubernetes\.io\/name"\]` added: `"web"`/);
    assert.match(text, /• `spec\.template\.spec\.containers\[1\]` removed \(was `\{"name":"sidecar"\}`\)/);
    assert.equal(message.text, '[prod-eu] UPDATED Deployment shop/web (3 changes)');
    assert.equal(eventsInMessage(message), 1);
  });

  it('says who made a change, alone and in a group', () => {
    const by = {
      user: { username: 'alice<x>' },
      userAgent: 'kubectl/v1.36.3',
      auditID: 'a1',
      match: 'exact' as const,
    };
    const alone = renderSlackMessage(batchOf([{ ...event('UPDATED'), by }]));
    assertValid(alone);
    assert.ok(visibleText(alone).includes('by *alice&lt;x&gt; (kubectl)*'), visibleText(alone));
    assert.match(alone.text, / by alice/);
    const group = renderSlackMessage(
      batchOf([{ ...event('UPDATED', { name: 'a' }), by }, event('ADDED', { name: 'b' })]),
    );
    assertValid(group);
    assert.match(visibleText(group), /`shop\/a` by \*alice/);
  });

  it('stays within Slack limits with hundreds of changes and huge values, saying what it left out', () => {
    const changes: Change[] = Array.from({ length: 300 }, (_, i) => ({
      op: 'replace' as const,
      path: `/data/${'k'.repeat(200)}${i}`,
      from: 'x'.repeat(5000),
      to: { nested: 'y'.repeat(5000), list: [1, 2, 3] },
    }));
    const message = renderSlackMessage(batchOf([event('UPDATED', { changes })]));
    assertValid(message);
    assert.match(visibleText(message), /…and 280 more changes/);
    assert.ok(JSON.stringify(message).length < 20_000);
  });

  it('escapes what mrkdwn would misread and keeps inline code closed', () => {
    const message = renderSlackMessage(
      batchOf([
        event('UPDATED', {
          name: 'a&b',
          changes: [
            { op: 'replace', path: '/data/script', from: 'echo `date` <b>&amp;', to: 'line1\nline2 <@U123>' },
            { op: 'add', path: '/data/emoji', to: '😀'.repeat(100) },
          ],
        }),
      ]),
    );
    assertValid(message);
    const text = visibleText(message);
    assert.match(text, /&lt;b&gt;&amp;amp;/);
    assert.match(text, /\(\+1 more lines\)/);
    assert.ok(!text.includes('<@U123>'), 'no mention can be smuggled in');
  });

  it('shows a few events one by one, and many as a digest with counts and the most recent changes', () => {
    const few = renderSlackMessage(batchOf([event('ADDED', { name: 'a' }), event('UPDATED', { name: 'b' })]));
    assertValid(few);
    assert.equal(few.text, '[prod-eu] 2 changes in shop: 1 configmap added, 1 configmap updated');
    assert.match(visibleText(few), /:heavy_plus_sign: \*ADDED\* ConfigMap `shop\/a`/);
    assert.match(
      visibleText(few),
      /:pencil2: \*UPDATED\* ConfigMap `shop\/b`\n• `data\.color`: `"blue"` → `"red"`/,
    );

    const many: ChangeEvent[] = [];
    for (let i = 0; i < 30; i++)
      many.push(event('ADDED', { name: `pod-${i}`, kind: 'Pod', resource: 'pods' }));
    for (let i = 0; i < 5; i++)
      many.push(event('UPDATED', { name: `web-${i}`, kind: 'Deployment', resource: 'deployments' }));
    many.push(event('DELETED', { name: 'old', namespace: 'web' }));
    many.push(event('DELETED', { name: 'older', namespace: 'web' }));
    const digest = renderSlackMessage(batchOf(many));
    assertValid(digest);
    assert.equal(
      digest.text,
      '[prod-eu] 37 changes in shop and web: 30 pods added, 5 deployments updated, 2 configmaps deleted',
    );
    assert.equal(eventsInMessage(digest), 37);
    const text = visibleText(digest);
    assert.match(text, /By namespace:\* shop 35 · web 2/);
    assert.match(text, /Most recent, oldest first:/);
    assert.equal(
      (text.match(/^:[a-z_0-9]+: \*(ADDED|UPDATED|DELETED)\*/gm) ?? []).length,
      DEFAULT_CHAT_FORMAT.digestRecent,
    );
  });

  it('keeps a digest of thousands of kinds of change within the limits', () => {
    const events: ChangeEvent[] = [];
    for (let i = 0; i < 2000; i++)
      events.push(event('ADDED', { name: `n${i}`, namespace: `ns-${i % 300}`, resource: `things${i % 50}` }));
    const message = renderSlackMessage(batchOf(events));
    assertValid(message);
    assert.equal(eventsInMessage(message), 2000);
  });
});

describe('Slack sink', () => {
  it('posts one message per event when they come slowly, with the Block Kit payload', async () => {
    const server = await slack();
    const hook = sink({ target: { kind: 'webhook', url: server.url('/services/T000/B000/XXXX') } });
    hook.deliver(event('ADDED', { name: 'a' }));
    await server.waitForRequests(1);
    hook.deliver(event('DELETED', { name: 'a' }));
    await server.waitForRequests(2);
    const report = await hook.close(1000);
    const [first, second] = payloads(server);
    assertValid(first!);
    assertValid(second!);
    assert.equal(first!.text, '[prod-eu] ADDED ConfigMap shop/a');
    assert.equal(second!.text, '[prod-eu] DELETED ConfigMap shop/a');
    assert.equal(first!.unfurl_links, false);
    assert.equal(server.requests[0]!.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(report.stats.delivered, 2);
    assert.equal(report.name, `slack http://127.0.0.1:${server.port}/…`);
  });

  it('gathers events that come together into one message', async () => {
    const server = await slack();
    const hook = sink({ target: { kind: 'webhook', url: server.url('/hook') }, gatherMs: 150 });
    for (const name of ['a', 'b', 'c']) hook.deliver(event('UPDATED', { name }));
    await server.waitForRequests(1);
    // A later event is the sentinel: the next message is its own, nothing came in between.
    hook.deliver(event('UPDATED', { name: 'sentinel' }));
    await server.waitForRequests(2);
    assert.equal(eventsInMessage(payloads(server)[0]!), 3);
    assert.equal(eventsInMessage(payloads(server)[1]!), 1);
    assert.match(JSON.stringify(payloads(server)[1]), /shop\/sentinel/);
    await hook.close(1000);
    assert.equal(server.requests.length, 2);
  });

  it('under a burst, sends at most one message per interval, as digests that account for every event', async () => {
    const server = await slack();
    const hook = sink({ target: { kind: 'webhook', url: server.url('/hook') }, minIntervalMs: 250 });
    const started = Date.now();
    // 300 events over about 1.2 s.
    for (let i = 0; i < 300; i++) {
      hook.deliver(event(i % 3 === 0 ? 'ADDED' : 'UPDATED', { name: `cm-${i}` }));
      if (i % 25 === 24) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const report = await hook.close(5000);
    const messages = payloads(server);
    for (const message of messages) assertValid(message);
    const total = messages.reduce((sum, message) => sum + eventsInMessage(message), 0);
    assert.equal(total, 300, messages.map((m) => m.text).join('\n'));
    const elapsed = Date.now() - started;
    assert.ok(
      messages.length <= Math.ceil(elapsed / 250) + 1,
      `${messages.length} messages in ${elapsed} ms`,
    );
    const gaps = server.requests.slice(1).map((request, i) => request.at - server.requests[i]!.at);
    for (const [i, gap] of nonEmpty(gaps, 'gaps between messages').entries())
      assert.ok(gap >= 240, `message ${i + 1} came ${gap} ms after the previous one`);
    assert.equal(report.stats.delivered + report.stats.summarized, 300);
    assert.ok(report.stats.digests >= 1);
  });

  it('on 429 waits for Retry-After, then sends one message for everything that arrived meanwhile', async () => {
    const server = await slack();
    server.script({ status: 429, headers: { 'retry-after': '1' }, body: 'rate_limited' });
    const log = memoryLog();
    const hook = sink({ target: { kind: 'webhook', url: server.url('/hook') }, log });
    hook.deliver(event('ADDED', { name: 'first' }));
    await server.waitForRequests(1);
    for (let i = 0; i < 20; i++) hook.deliver(event('UPDATED', { name: `cm-${i}` }));
    const [limited, next] = await server.waitForRequests(2);
    assert.ok(next!.at - limited!.at >= 950, `retried after ${next!.at - limited!.at} ms`);
    const message = payloads(server)[1]!;
    assertValid(message);
    assert.equal(eventsInMessage(message), 21);
    assert.match(String(message.text), /21 changes in shop: 20 configmaps updated, 1 configmap added/);
    // A later event is the sentinel: the next message is its own, nothing was sent twice in between.
    hook.deliver(event('UPDATED', { name: 'sentinel' }));
    await server.waitForRequests(3);
    assert.equal(eventsInMessage(payloads(server)[2]!), 1);
    assert.match(JSON.stringify(payloads(server)[2]), /shop\/sentinel/);
    const report = await hook.close(1000);
    assert.equal(server.requests.length, 3);
    assert.equal(report.stats.summarized, 21);
    assert.ok(log.warnings.some((w) => /HTTP 429.*Retry-After 1s/.test(w)));
  });

  it('does not retry a revoked webhook (404 no_service): says so once, with a hint, never the URL path', async () => {
    const server = await slack({ defaultReply: { status: 404, body: 'no_service' } });
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'kubediff-slack-')), 'dead.jsonl');
    const log = memoryLog();
    const deadLetter = DeadLetterFile.open(file, log);
    const hook = sink({
      target: { kind: 'webhook', url: server.url('/services/T1/B2/SECRETTOKEN') },
      log,
      deadLetter,
    });
    hook.deliver(event('ADDED', { name: 'a' }));
    await server.waitForRequests(1);
    hook.deliver(event('ADDED', { name: 'b' }));
    await server.waitForRequests(2);
    const report = await hook.close(1000);
    deadLetter.close();
    assert.equal(server.requests.length, 2);
    const refusals = log.warnings.filter((w) => w.includes('404'));
    assert.equal(refusals.length, 1, log.lines.join('\n'));
    assert.match(
      refusals[0]!,
      /HTTP 404 Not Found: "no_service" \(the webhook URL is wrong or was revoked\); not retried/,
    );
    assert.ok(!log.lines.join('\n').includes('SECRETTOKEN'));
    assert.equal(report.stats.deadLettered, 2);
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    assert.equal(lines.filter((line) => line.includes('"event"')).length, 2);
    assert.ok(!(await readFile(file, 'utf8')).includes('SECRETTOKEN'));
  });

  it('posts as a bot with chat.postMessage: token in the Authorization header, channel in the body', async () => {
    const server = await slack({ defaultReply: { status: 200, body: '{"ok":true,"ts":"1.2"}' } });
    const hook = sink({
      target: { kind: 'bot', token: 'xoxb-test-token', channel: '#alerts', apiUrl: server.url('/api') },
    });
    hook.deliver(event());
    await server.waitForRequests(1);
    const report = await hook.close(1000);
    const request = server.requests[0]!;
    assert.equal(request.path, '/api/chat.postMessage');
    assert.equal(request.headers.authorization, 'Bearer xoxb-test-token');
    const body = JSON.parse(request.body) as SlackPayload;
    assert.equal(body.channel, 'alerts');
    assertValid(body);
    assert.equal(report.stats.delivered, 1);
    assert.equal(report.name, 'slack #alerts');
  });

  it('as a bot, retries Slack errors that pass and stops at the ones that do not', async () => {
    const server = await slack();
    server.script(
      { status: 200, body: '{"ok":false,"error":"internal_error"}' },
      { status: 200, body: '{"ok":true}' },
      { status: 200, body: '{"ok":false,"error":"not_in_channel"}' },
    );
    const log = memoryLog();
    const hook = sink({
      target: { kind: 'bot', token: 'xoxb-secret-token', channel: 'C0123456789', apiUrl: server.url('/api') },
      log,
    });
    hook.deliver(event('ADDED', { name: 'a' }));
    await server.waitForRequests(2);
    hook.deliver(event('ADDED', { name: 'b' }));
    await server.waitForRequests(3);
    const report = await hook.close(1000);
    assert.equal(report.stats.delivered, 1);
    assert.equal(report.stats.lost, 1);
    assert.ok(
      log.warnings.some((w) => /Slack answered "not_in_channel" \(invite the app to the channel/.test(w)),
      log.lines.join('\n'),
    );
    assert.ok(!log.lines.join('\n').includes('xoxb-secret-token'));
  });

  it('on close, sends what is waiting (pacing and gathering cut short by the deadline, not skipped)', async () => {
    const server = await slack();
    const hook = sink({
      target: { kind: 'webhook', url: server.url('/hook') },
      gatherMs: 5000,
      minIntervalMs: 300,
    });
    hook.deliver(event('ADDED', { name: 'a' }));
    hook.deliver(event('ADDED', { name: 'b' }));
    const report = await hook.close(2000);
    assert.equal(server.requests.length, 1);
    assert.equal(eventsInMessage(payloads(server)[0]!), 2);
    assert.equal(report.stats.delivered, 2);
  });

  it('on close, reports what a hanging Slack did not take', async () => {
    const server = await slack({ defaultReply: { hang: true } });
    const hook = sink({ target: { kind: 'webhook', url: server.url('/hook') } });
    hook.deliver(event('ADDED', { name: 'a' }));
    await server.waitForRequests(1);
    hook.deliver(event('ADDED', { name: 'b' }));
    const report = await hook.close(300);
    assert.equal(report.stats.lost, 2);
    assert.equal(report.stats.pending, 0);
  });
});

describe('Slack bot: a change and its OUTCOME in one thread', () => {
  const TOKEN = 'xoxb-thread-token';
  const HEADLINE =
    'web shop:1.5 by alice → degraded in 40s: 3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)';
  const started: FakeSlackApi[] = [];
  after(async () => {
    await Promise.all(started.map((api) => api.close()));
  });
  async function fakeSlack(): Promise<FakeSlackApi> {
    const api = await FakeSlackApi.start({ token: TOKEN });
    started.push(api);
    return api;
  }
  const bot = (api: FakeSlackApi, options: Partial<SlackSinkOptions> = {}) =>
    sink({ target: { kind: 'bot', token: TOKEN, channel: '#alerts', apiUrl: api.apiUrl }, ...options });
  const headerOf = (blocks: unknown[]) => (blocks[0] as { type: string; text: { text: string } }).text.text;

  it('stories on: the story is one message, its OUTCOME a reply in its thread, and its first line says the verdict', async () => {
    const api = await fakeSlack();
    const hook = bot(api, { stories: { windowMs: 200, maxLengthMs: 60_000 } });
    const { change, outcome } = degradedRollout();
    hook.deliver(change);
    hook.deliver({
      ...event('ADDED', { name: 'web-7d9f8', kind: 'ReplicaSet', resource: 'replicasets' }),
      cluster: undefined,
      owner: change.owner,
    } as ChangeEvent);
    // The verdict comes before the story is told: it waits for the story's message.
    hook.deliverOutcome(outcome);
    await api.receiver.waitForRequests(3);
    const report = await hook.close(2000);
    assert.deepEqual(api.refused, []);
    const [story, ...others] = api.topLevel();
    assert.ok(story);
    assert.equal(others.length, 0, 'one message for the story, the OUTCOME in its thread');
    assert.match(headerOf(story.posted.blocks), /Deployment shop\/web updated/);
    const [reply, ...more] = api.repliesTo(story);
    assert.ok(reply);
    assert.equal(more.length, 0);
    assert.equal(api.messages.indexOf(reply), 1, 'the reply after the story');
    assert.match(headerOf(reply.blocks), /Deployment shop\/web degraded in 40s/);
    assert.match(
      visibleText(reply as SlackPayload),
      /web-7d9f8-a.*CrashLoopBackOff, 2 restarts, last OOMKilled \(exit 137\)/,
    );
    assert.match(visibleText(reply as SlackPayload), /BackOff.*×4/);
    // chat.update: by the channel's ID (as chat.postMessage answered it), the first line rewritten.
    assert.equal(story.edits.length, 1);
    assert.equal(api.receiver.requests[2]?.path, '/api/chat.update');
    assert.equal(story.text, HEADLINE);
    assert.equal(headerOf(story.blocks), HEADLINE);
    assert.deepEqual(story.blocks.slice(1), story.posted.blocks.slice(1), 'the rest as posted');
    assert.equal(report.stats.delivered, 3);
  });

  it('stories off: the change is its own message; an OUTCOME of a change this sink never posted stands alone', async () => {
    const api = await fakeSlack();
    const hook = bot(api);
    const { change, outcome } = degradedRollout('prod-eu');
    hook.deliver(change);
    await api.receiver.waitForRequests(1);
    hook.deliverOutcome(outcome);
    const other = degradedRollout('prod-eu');
    hook.deliverOutcome({ ...other.outcome, id: 'outcome:elsewhere:1', follows: ['elsewhere:1'] });
    await api.receiver.waitForRequests(4);
    const report = await hook.close(2000);
    assert.deepEqual(api.refused, []);
    const [message, alone] = api.topLevel();
    assert.equal(api.topLevel().length, 2);
    assert.equal(api.repliesTo(message!).length, 1);
    assert.equal(message!.text, `[prod-eu] ${HEADLINE}`);
    assert.match(headerOf(alone!.blocks), /Deployment shop\/web degraded/);
    assert.equal(alone!.edits.length, 0);
    assert.equal(report.stats.delivered, 3);
  });

  it('an edit Slack refuses is said once; the OUTCOME stays delivered in the thread', async () => {
    const api = await fakeSlack();
    const log = memoryLog();
    const hook = bot(api, { log });
    for (const _ of [1, 2]) {
      const { change, outcome } = degradedRollout();
      api.refuseNext('chat.update', 'cant_update_message');
      hook.deliver(change);
      hook.deliverOutcome(outcome);
      await api.receiver.waitForRequests(api.receiver.requests.length + 3);
    }
    const report = await hook.close(2000);
    assert.deepEqual(
      api.refused.map((refusal) => `${refusal.method} ${refusal.error}`),
      ['chat.update cant_update_message', 'chat.update cant_update_message'],
    );
    assert.equal(api.messages.filter((message) => message.threadTs).length, 2);
    assert.equal(report.stats.delivered, 4);
    const said = log.warnings.filter((line) => /could not edit the message of a change/.test(line));
    assert.equal(said.length, 1, log.lines.join('\n'));
    assert.match(said[0] ?? '', /cant_update_message/);
    assert.ok(!log.lines.join('\n').includes(TOKEN));
  });
});
