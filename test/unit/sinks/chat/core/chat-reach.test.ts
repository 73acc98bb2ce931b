// What a ConfigMap or Secret change reaches, in chat messages (docs/used-by.md): an event
// alone names up to 10 workloads, 20 unread keys and 10 rolled-out changes, a message of several events and
// the notification text 3, 5 and 3, and what is left out is counted ("and 497 more"); a rollout says which
// changes it brings; a ConfigMap's story says what its last change reaches. Each platform's payload stays
// within its rules (test/helpers/chat-receivers.ts, test/helpers/slack-payload.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent, UsingWorkload } from '../../../../../src/events/event.ts';
import { type Story, StoryBuilder } from '../../../../../src/events/story.ts';
import { renderBatch } from '../../../../../src/sinks/chat/core/chat.ts';
import { chatMessage, plainText } from '../../../../../src/sinks/chat/core/chat-message.ts';
import { renderSlackMessage } from '../../../../../src/sinks/chat/slack/slack-format.ts';
import { Digest } from '../../../../../src/sinks/core/digest.ts';
import { storyMessage } from '../../../../../src/sinks/core/story-format.ts';
import { CHAT_PLATFORMS, type ChatPlatformName } from '../../../../helpers/chat-platforms.ts';
import { payloadProblems } from '../../../../helpers/chat-receivers.ts';
import { blockKitProblems } from '../../../../helpers/slack-payload.ts';

const web: UsingWorkload = {
  object: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd1', namespace: 'shop' },
  via: [{ type: 'env', key: 'APP_MODE', env: 'APP_MODE', container: 'app' }],
  keys: ['APP_MODE'],
  live: false,
  pods: { total: 3, old: 3 },
};
const report: UsingWorkload = {
  object: { apiVersion: 'batch/v1', kind: 'CronJob', name: 'report', uid: 'c1', namespace: 'shop' },
  via: [{ type: 'volume', volume: 'cfg', container: 'report' }],
  keys: ['APP_MODE'],
  live: true,
  pods: { total: 0, old: 0 },
};

let sequence = 0;
function configMapChange(usedBy: ChangeEvent['usedBy'], name = 'app-config'): ChangeEvent {
  sequence++;
  return {
    id: `cm-${name}:${sequence}`,
    type: 'UPDATED',
    time: '2026-11-22T10:31:07.412Z',
    cluster: 'prod',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name,
      uid: `cm-${name}`,
      resourceVersion: String(sequence),
    },
    by: { user: { username: 'alice' } },
    changes: [{ op: 'replace', path: '/data/APP_MODE', from: 'a', to: 'b' }],
    ...(usedBy ? { usedBy } : {}),
  };
}

/** `count` Deployments that read APP_MODE through env, each with one pod older than the change. */
function manyWorkloads(count: number): UsingWorkload[] {
  return Array.from({ length: count }, (_, n) => ({
    ...web,
    object: { ...web.object, name: `web-${String(n).padStart(3, '0')}`, uid: `d-${n}` },
    pods: { total: 1, old: 1 },
  }));
}

function digestOf(events: readonly ChangeEvent[]): Digest {
  const digest = new Digest({ retain: 5 });
  for (const event of events) digest.add(event);
  return digest;
}

const PLATFORMS = Object.keys(CHAT_PLATFORMS) as ChatPlatformName[];

/** Every platform's payload of `batch`: within its rules, and its text without markup and escapes. */
function everyPayload(batch: Digest): Record<'slack' | ChatPlatformName, string> {
  const slack = renderSlackMessage(batch);
  assert.deepEqual(blockKitProblems(slack), [], 'slack');
  const texts: Record<string, string> = { slack: JSON.stringify(slack) };
  for (const name of PLATFORMS) {
    const raw = JSON.stringify(renderBatch(CHAT_PLATFORMS[name].create('https://x.invalid/h'), batch).body);
    assert.deepEqual(payloadProblems(name, raw), [], name);
    texts[name] = raw;
  }
  // Markup and escapes out: backslashes (markdown), backticks (code), Google Chat's <font> around code.
  for (const [name, raw] of Object.entries(texts))
    texts[name] = raw
      .replace(/\\+/g, '')
      .replaceAll('`', '')
      .replace(/<\/?font[^>]*>/g, '');
  return texts as Record<'slack' | ChatPlatformName, string>;
}

describe('chat messages say what a ConfigMap or Secret change reaches', () => {
  it('an event alone: the notification and a line of its own, as the issue words it, names as code', () => {
    const event = configMapChange({ workloads: [web, report], unreadKeys: ['DEBUG'] });
    const message = chatMessage(digestOf([event]));
    const reach =
      '→ used by deployment/web (env APP_MODE: 3 pods still run the old value), cronjob/report (volume cfg: live)';
    assert.equal(
      plainText(message.summary),
      `[prod] UPDATED ConfigMap shop/app-config by alice (1 change) ${reach}`,
    );
    assert.deepEqual(
      message.sections.map((section) => section.lines.map(plainText)),
      [['• data.APP_MODE: "a" → "b"'], [reach, '→ read by nobody: DEBUG']],
    );
    assert.deepEqual(message.sections[1]?.lines[0]?.slice(0, 3), [
      { text: '→ ' },
      { text: 'used by ' },
      { text: 'deployment/web', style: 'code' },
    ]);
    for (const [platform, text] of Object.entries(everyPayload(digestOf([event])))) {
      assert.match(
        text,
        /used by deployment\/web \(env APP_MODE: 3 pods still run the old value\)/,
        platform,
      );
      assert.match(text, /cronjob\/report \(volume cfg: live\)/, platform);
      assert.match(text, /read by nobody: DEBUG/, platform);
    }
  });

  it('a change used by 500 workloads is a short list with "and N more", on every platform', () => {
    const unreadKeys = Array.from({ length: 1000 }, (_, n) => `KEY_${n}`);
    const event = configMapChange({ workloads: manyWorkloads(500), unreadKeys });
    const message = chatMessage(digestOf([event]));
    const [users, unread] = message.sections[1]?.lines.map(plainText) ?? [];
    assert.equal((users?.match(/deployment\/web-/g) ?? []).length, 10);
    assert.match(
      users ?? '',
      /deployment\/web-009 \(env APP_MODE: 1 pod still runs the old value\) and 490 more$/,
    );
    assert.match(unread ?? '', /^→ read by nobody: KEY_0, KEY_1, .*, KEY_19 and 980 more$/);
    const summary = plainText(message.summary);
    assert.equal((summary.match(/deployment\/web-/g) ?? []).length, 3);
    assert.match(
      summary,
      /deployment\/web-002 \(env APP_MODE: 1 pod still runs the old value\) and 497 more$/,
    );
    for (const [platform, text] of Object.entries(everyPayload(digestOf([event])))) {
      assert.match(text, /and 490 more/, platform);
      assert.ok(!text.includes('web-010'), `${platform} names only the first 10`);
    }
  });

  it('several events in one message: 3 workloads each; a digest of a burst names none', () => {
    const events = ['a', 'b', 'c'].map((name) => configMapChange({ workloads: manyWorkloads(7) }, name));
    const message = chatMessage(digestOf(events));
    assert.equal(message.inFull, true);
    for (const section of message.sections) {
      const last = plainText(section.lines.at(-1) ?? []);
      assert.match(last, /^→ used by deployment\/web-000 .*, deployment\/web-002 \(.*\) and 4 more$/);
    }
    everyPayload(digestOf(events));
    const burst = Array.from({ length: 6 }, (_, n) =>
      configMapChange({ workloads: manyWorkloads(7) }, `d${n}`),
    );
    const digest = chatMessage(digestOf(burst));
    assert.equal(digest.inFull, false);
    assert.ok(!JSON.stringify(digest).includes('used by'), 'a digest counts changes, it names no users');
  });

  it('nobody, an incomplete index, and events without usedBy', () => {
    const nobody = chatMessage(digestOf([configMapChange({ workloads: [], incomplete: 'syncing' })]));
    assert.deepEqual(nobody.sections[1]?.lines.map(plainText), [
      '→ used by nothing kubediff watches (the index is incomplete: still listing)',
    ]);
    const without = chatMessage(digestOf([configMapChange(undefined)]));
    assert.equal(without.sections.length, 1);
    assert.equal(plainText(without.summary), '[prod] UPDATED ConfigMap shop/app-config by alice (1 change)');
  });

  it('a rollout says which changes it brings, and a story of it; a ConfigMap story says what it reaches', () => {
    const rollsOut = [
      {
        object: { kind: 'ConfigMap', namespace: 'shop', name: 'app-config' },
        id: 'c:9',
        time: '2026-11-22T10:30:00Z',
      },
    ];
    const owner = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd1' };
    const rollout: ChangeEvent = {
      ...configMapChange(undefined),
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        resource: 'deployments',
        namespace: 'shop',
        name: 'web',
        uid: 'd1',
        resourceVersion: '20',
      },
      owner,
      changes: [
        {
          op: 'add',
          path: '/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt',
          to: '2026-11-22T10:31:00Z',
        },
      ],
      rollsOut,
    };
    const message = chatMessage(digestOf([rollout]));
    assert.deepEqual(message.sections[1]?.lines.map(plainText), [
      '→ rolls out configmap shop/app-config (changed 10:30:00Z)',
    ]);
    assert.match(
      plainText(message.summary),
      /\(1 change\) → rolls out configmap shop\/app-config \(changed 10:30:00Z\)$/,
    );
    everyPayload(digestOf([rollout]));

    const stories: Story[] = [];
    const builder = new StoryBuilder({ windowMs: 60_000 }, { story: (story) => stories.push(story) });
    builder.add(rollout);
    const change = configMapChange({ workloads: [web], unreadKeys: ['DEBUG'] });
    builder.add({
      ...change,
      owner: { apiVersion: 'v1', kind: 'ConfigMap', name: 'app-config', uid: change.object.uid },
    });
    builder.flush();
    const lines = stories.map((story) => storyMessage(story).sections.flatMap((s) => s.lines.map(plainText)));
    assert.deepEqual(
      lines.map((story) => story.filter((line) => line.startsWith('→'))),
      [
        ['→ rolls out configmap shop/app-config (changed 10:30:00Z)'],
        [
          '→ used by deployment/web (env APP_MODE: 3 pods still run the old value)',
          '→ read by nobody: DEBUG',
        ],
      ],
    );
  });
});
