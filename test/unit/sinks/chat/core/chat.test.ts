// The chat delivery core with each platform's renderer (Teams, Discord, Mattermost, Google Chat) against
// loopback receivers that enforce that platform's documented payload rules and limits and answer 429 with
// its own retry hint (test/helpers/chat-receivers.ts).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ChangeEvent, EventType } from '../../../../../src/events/event.ts';
import { ChatSink, type ChatSinkOptions } from '../../../../../src/sinks/chat/core/chat.ts';
import { CHAT_PLATFORMS, type ChatPlatformName } from '../../../../helpers/chat-platforms.ts';
import {
  eventsInChatMessage,
  payloadProblems,
  rateLimited,
  startChatReceiver,
  titleOf,
} from '../../../../helpers/chat-receivers.ts';
import type { HttpReceiver } from '../../../../helpers/http-receiver.ts';
import { degradedRollout } from '../../../../helpers/outcome-fixtures.ts';
import { memoryLog } from '../../../../helpers/sink-test.ts';

const receivers: HttpReceiver[] = [];
after(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

let sequence = 0;
function event(type: EventType, name: string, namespace = 'shop'): ChangeEvent {
  sequence++;
  return {
    id: `uid-${name}:${sequence}`,
    type,
    time: new Date(Date.UTC(2026, 10, 22, 10, 31, 7, sequence % 1000)).toISOString(),
    cluster: 'prod-eu',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace,
      name,
      uid: `uid-${name}`,
      resourceVersion: String(sequence),
    },
    ...(type === 'UPDATED'
      ? {
          changes: [
            { op: 'replace' as const, path: '/data/color', from: 'blue', to: `red *${sequence}* <b>` },
            { op: 'add' as const, path: '/data/huge', to: 'x'.repeat(5000) },
          ],
        }
      : {}),
  };
}

const PLATFORMS: ChatPlatformName[] = ['teams', 'discord', 'mattermost', 'google-chat'];
const bodies = (receiver: HttpReceiver) => receiver.jsonBodies() as Record<string, unknown>[];

/** A `platform` sink posting to `receiver` (its webhook URL's path a secret that must not leak). */
function chatSink(
  platform: ChatPlatformName,
  receiver: HttpReceiver,
  options: Partial<ChatSinkOptions> & Pick<ChatSinkOptions, 'minIntervalMs' | 'gatherMs'>,
): ChatSink {
  return new ChatSink({
    platform: CHAT_PLATFORMS[platform].create(receiver.url('/hook/SECRET')),
    name: platform,
    log: memoryLog(),
    ...options,
  });
}

for (const platform of PLATFORMS) {
  describe(`${platform} sink`, () => {
    it('stories on: one message per story, who made the owner change and what was derived', async () => {
      const receiver = await startChatReceiver(platform, 0);
      receivers.push(receiver);
      const sink = chatSink(platform, receiver, {
        minIntervalMs: 100,
        gatherMs: 20,
        stories: { windowMs: 60_000, maxLengthMs: 60_000 },
      });
      const owner = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-deploy' };
      const deployment: ChangeEvent = {
        ...event('UPDATED', 'web'),
        object: {
          ...event('UPDATED', 'web').object,
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          resource: 'deployments',
          uid: 'uid-deploy',
        },
        owner,
        by: { managers: [{ manager: 'kubectl-set', operation: 'Update' }] },
      };
      const replicaSet: ChangeEvent = {
        ...event('ADDED', 'web-7d9'),
        object: {
          ...event('ADDED', 'web-7d9').object,
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          resource: 'replicasets',
        },
        owner,
      };
      sink.deliver(deployment);
      sink.deliver(replicaSet);
      // The window is a minute: the story is told at close, as one message for both events.
      const report = await sink.close(5000);
      assert.equal(report.stats.delivered, 2);
      assert.equal(receiver.requests.length, 1);
      const body = receiver.requests[0]?.body ?? '';
      assert.deepEqual(payloadProblems(platform, body), []);
      assert.match(titleOf(platform, bodies(receiver)[0] ?? {}), /Deployment shop\/web updated/);
      // Markdown platforms escape `-` and the like: compare the text without escapes.
      const text = body.replaceAll('\\', '');
      assert.match(text, /by kubectl-set/);
      assert.match(text, /Derived/);
      assert.match(text, /ReplicaSet web-7d9 created/);
      assert.match(text, /2 events: 1 Deployment updated, 1 ReplicaSet added/);
    });

    it("an OUTCOME is a follow-up in the channel, after its story's message", async () => {
      const receiver = await startChatReceiver(platform, 0);
      receivers.push(receiver);
      const sink = chatSink(platform, receiver, {
        minIntervalMs: 100,
        gatherMs: 20,
        stories: { windowMs: 60_000, maxLengthMs: 60_000 },
      });
      const { change, outcome } = degradedRollout('prod-eu');
      sink.deliver(change);
      // The verdict before the story is told (at close): it waits for the story's message.
      sink.deliverOutcome(outcome);
      const report = await sink.close(5000);
      assert.equal(report.stats.delivered, 2);
      assert.equal(receiver.requests.length, 2);
      for (const request of receiver.requests) assert.deepEqual(payloadProblems(platform, request.body), []);
      const [story, followUp] = bodies(receiver);
      assert.match(titleOf(platform, story ?? {}), /Deployment shop\/web updated/);
      assert.match(titleOf(platform, followUp ?? {}), /Deployment shop\/web degraded in 40s/);
      const text = (receiver.requests[1]?.body ?? '').replaceAll('\\', '');
      assert.match(text, /web shop:1\.5 by alice → degraded in 40s/);
      assert.match(text, /web-7d9f8-a/);
      assert.match(text, /CrashLoopBackOff, 2 restarts, last OOMKilled \(exit 137\)/);
      assert.match(text, /outcome of uid-web:42/);
    });

    it('reads one change at a glance: cluster, type, kind namespace/name, path: from → to', async () => {
      const receiver = await startChatReceiver(platform, 0);
      receivers.push(receiver);
      const sink = chatSink(platform, receiver, { minIntervalMs: 100, gatherMs: 20 });
      sink.deliver(event('UPDATED', 'web'));
      const report = await sink.close(5000);
      assert.equal(report.stats.delivered, 1);
      const [request] = receiver.requests;
      assert.deepEqual(payloadProblems(platform, request?.body ?? ''), []);
      assert.ok(request && 'status' in request.reply && request.reply.status < 300, 'the receiver took it');
      const body = request?.body ?? '';
      assert.match(titleOf(platform, bodies(receiver)[0] ?? {}), /UPDATED ConfigMap shop\/web/);
      assert.match(body, /prod-eu/);
      assert.match(body, /data\.color/);
      assert.match(body, /→/);
    });

    it('turns a 500-change burst into a handful of valid messages that account for all 500', async () => {
      const interval = 250;
      const receiver = await startChatReceiver(platform, interval - 30);
      receivers.push(receiver);
      const sink = chatSink(platform, receiver, {
        minIntervalMs: interval,
        gatherMs: 50,
        retry: { initialDelayMs: 50, maxDelayMs: 200 },
      });
      for (let i = 0; i < 500; i++) {
        sink.deliver(event(i % 5 === 0 ? 'ADDED' : 'UPDATED', `cm-${i}`, i % 2 === 0 ? 'shop' : 'web'));
        if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const report = await sink.close(10_000);
      const accepted = receiver.requests.filter((r) => 'status' in r.reply && r.reply.status < 300);
      for (const request of receiver.requests) assert.deepEqual(payloadProblems(platform, request.body), []);
      const total = accepted.reduce((sum, r) => sum + eventsInChatMessage(platform, JSON.parse(r.body)), 0);
      assert.equal(total, 500);
      assert.ok(accepted.length <= 12, `${accepted.length} messages`);
      assert.equal(report.stats.delivered + report.stats.summarized, 500);
      assert.equal(report.stats.lost + report.stats.deadLettered, 0);
    });

    it("waits for the platform's 429 retry hint, then sends everything that arrived meanwhile", async () => {
      const receiver = await startChatReceiver(platform, 0);
      receivers.push(receiver);
      receiver.script(rateLimited(platform, 1));
      const log = memoryLog();
      const sink = chatSink(platform, receiver, { minIntervalMs: 50, gatherMs: 20, log });
      sink.deliver(event('ADDED', 'first'));
      await receiver.waitForRequests(1);
      for (let i = 0; i < 20; i++) sink.deliver(event('UPDATED', `cm-${i}`));
      const [limited, next] = await receiver.waitForRequests(2);
      assert.ok((next?.at ?? 0) - (limited?.at ?? 0) >= 950, 'waited for the hint');
      const report = await sink.close(5000);
      assert.equal(eventsInChatMessage(platform, bodies(receiver)[1] ?? {}), 21);
      assert.equal(report.stats.summarized, 21);
      assert.ok(log.warnings.some((w) => /HTTP 429/.test(w) && !w.includes('SECRET')));
    });
  });
}
