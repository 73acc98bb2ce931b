// Chat messages cannot ping a channel or carry a link nobody wrote (issue 27). A field manager is chosen
// by whoever writes an object (`kubectl --field-manager`, up to 128 characters), a user name by the
// authenticator, keys and values by the object's author: none of them may turn into a mention, a link or
// markup on any chat platform, nor hide or reverse text with bidi or invisible characters. One event with
// hostile text in every field, its exact body on each platform; then a seeded corpus of hostile events,
// alone, in groups, as digests and as stories, through each platform's checks of what it would act on
// (test/helpers/chat-receivers.ts inertProblems, test/helpers/slack-payload.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChangeEvent, EventType } from '../../../../../src/events/event.ts';
import { type Story, StoryBuilder } from '../../../../../src/events/story.ts';
import { type ChatPlatform, renderBatch } from '../../../../../src/sinks/chat/core/chat.ts';
import {
  renderSlackChatMessage,
  renderSlackMessage,
} from '../../../../../src/sinks/chat/slack/slack-format.ts';
import { Digest } from '../../../../../src/sinks/core/digest.ts';
import { storyMessage } from '../../../../../src/sinks/core/story-format.ts';
import { CHAT_PLATFORMS, type ChatPlatformName } from '../../../../helpers/chat-platforms.ts';
import { payloadProblems } from '../../../../helpers/chat-receivers.ts';
import { hostileText } from '../../../../helpers/hostile-text.ts';
import { seededRandom } from '../../../../helpers/random-json.ts';
import { blockKitProblems } from '../../../../helpers/slack-payload.ts';

/** The field manager, a user, a key and values that try every platform's markup. */
function hostileEvent(): ChangeEvent {
  return {
    id: 'u:1',
    type: 'UPDATED',
    time: '2026-11-22T10:31:07.000Z',
    cluster: 'prod',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespace: 'shop',
      name: 'web',
      uid: 'u',
      resourceVersion: '1',
    },
    by: {
      managers: [{ manager: '<!channel> <https://evil.example|Re-login required>', operation: 'Update' }],
      user: { username: '@here *boss*\u202e' },
    },
    changes: [
      {
        op: 'replace',
        path: '/data/[x](https:~1~1evil.example)',
        from: '<users/all>',
        to: '@all {{DATE(2017-02-14T06:08:00Z)}}',
        manager: 'm1',
      },
      { op: 'add', path: '/data/b', to: 'x\u200by', manager: '_m2_ @channel' },
    ],
  };
}

/**
 * What each platform receives for it. Read them as the platform would: the manager, the user and the
 * values sit in inline code (Slack, Discord, Mattermost, Google Chat's text) or behind escapes (Teams,
 * card HTML), `<` is an entity (Slack), escaped (markdown, Teams) or a look-alike (Mattermost, Google
 * Chat's text); U+202E and U+200B are written as escapes; Discord switches mentions off.
 */
const EXPECTED: Record<ChatPlatformName | 'slack', unknown> = {
  slack: {
    text: '[prod] UPDATED ConfigMap shop/web by `@here *boss*\\u202e (&lt;!channel&gt; &lt;https://evil.example|Re-login required&gt;)` (2 changes)',
    blocks: [
      {
        type: 'header',
        text: {
          type: 'plain_text',
          text: ':pencil2: UPDATED ConfigMap shop/web',
          emoji: true,
        },
      },
      {
        type: 'context',
        elements: [
          {
            type: 'mrkdwn',
            text: 'by `@here *boss*\\u202e (&lt;!channel&gt; &lt;https://evil.example|Re-login required&gt;)`',
            verbatim: true,
          },
          {
            type: 'mrkdwn',
            text: 'cluster *prod*',
            verbatim: true,
          },
          {
            type: 'mrkdwn',
            text: 'configmaps (v1)',
            verbatim: true,
          },
          {
            type: 'mrkdwn',
            text: '10:31:07 UTC',
            verbatim: true,
          },
        ],
      },
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: '• `data["[x](https://evil.example)"]`: `"&lt;users/all&gt;"` → `"@all {{DATE(2017-02-14T06:08:00Z)}}"` _(m1)_\n• `data.b` added: `"x\\u200by"` `(_m2_ @channel)`',
          verbatim: true,
        },
      },
    ],
  },
  teams: {
    type: 'message',
    summary:
      '[prod] UPDATED ConfigMap shop/web by @here *boss*\\u202e (<!channel> <https://evil.example|Re-login required>) (2 changes)',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          msteams: {
            width: 'Full',
          },
          body: [
            {
              type: 'TextBlock',
              text: '✏️ UPDATED ConfigMap shop/web',
              size: 'Medium',
              weight: 'Bolder',
              wrap: true,
            },
            {
              type: 'TextBlock',
              text: 'by @here \\*boss\\*\\\\u202e (\\<!channel\\> \\<https\\://evil.example|Re-login required\\>) · cluster prod · configmaps (v1) · 10:31:07 UTC',
              isSubtle: true,
              spacing: 'None',
              size: 'Small',
              wrap: true,
            },
            {
              type: 'TextBlock',
              text: '• data\\["\\[x\\](https\\://evil.example)"\\]: "\\<users/all\\>" → "@all \\{\\{DATE(2017-02-14T06:08:00Z)\\}\\}" _(m1)_\n\n• data.b added: "x\\\\u200by" _(\\_m2\\_ @channel)_',
              wrap: true,
              separator: true,
            },
          ],
        },
      },
    ],
  },
  discord: {
    content:
      '\\[prod\\] UPDATED ConfigMap shop/web by `@here *boss*\\u202e (<!channel> <https://evil.example|Re-login required>)` \\(2 changes\\)',
    embeds: [
      {
        title: '✏️ UPDATED ConfigMap shop/web',
        description:
          '• `data["[x](https://evil.example)"]`: `"<users/all>"` → `"@all {{DATE(2017-02-14T06:08:00Z)}}"` _\\(m1\\)_\n• `data.b` added: `"x\\u200by"` `(_m2_ @channel)`',
        color: 3900150,
        footer: {
          text: 'by @here *boss*\\u202e (<!channel> <https://evil.example|Re-login required>) · cluster prod · configmaps (v1) · 10:31:07 UTC',
        },
      },
    ],
    allowed_mentions: {
      parse: [],
    },
  },
  mattermost: {
    text: '\\[prod\\] UPDATED ConfigMap shop/web by `@here *boss*\\u202e (‹!channel› ‹https://evil.example|Re-login required›)` \\(2 changes\\)',
    attachments: [
      {
        fallback:
          '[prod] UPDATED ConfigMap shop/web by @here *boss*\\u202e (‹!channel› ‹https://evil.example|Re-login required›) (2 changes)',
        color: '#3b82f6',
        title: '✏️ UPDATED ConfigMap shop/web',
        text: '• `data["[x](https://evil.example)"]`: `"‹users/all›"` → `"@all {{DATE(2017-02-14T06:08:00Z)}}"` _\\(m1\\)_\n• `data.b` added: `"x\\u200by"` `(_m2_ @channel)`',
        footer:
          'by @here *boss*\\u202e (‹!channel› ‹https://evil.example|Re-login required›) · cluster prod · configmaps (v1) · 10:31:07 UTC',
      },
    ],
  },
  'google-chat': {
    text: '[prod] UPDATED ConfigMap shop/web by `@here *boss*\\u202e (‹!channel› ‹https://evil.example|Re-login required›)` (2 changes)',
    cardsV2: [
      {
        cardId: 'kubediff',
        card: {
          header: {
            title: '✏️ UPDATED ConfigMap shop/web',
            subtitle:
              'by @here *boss*\\u202e (<!channel> <https://evil.example|Re-login required>) · cluster prod · configmaps (v1) · 10:31:07 UTC',
          },
          sections: [
            {
              widgets: [
                {
                  textParagraph: {
                    text: '• <font color="#1f6feb">data["[x](https://evil.example)"]</font>: <font color="#1f6feb">"&lt;users/all&gt;"</font> → <font color="#1f6feb">"@all {{DATE(2017-02-14T06:08:00Z)}}"</font> <i>(m1)</i><br>• <font color="#1f6feb">data.b</font> added: <font color="#1f6feb">"x\\u200by"</font> <i>(_m2_ @channel)</i>',
                  },
                },
              ],
            },
          ],
        },
      },
    ],
  },
};

const PLATFORMS = Object.keys(CHAT_PLATFORMS) as ChatPlatformName[];
const platform = (name: ChatPlatformName): ChatPlatform => CHAT_PLATFORMS[name].create('https://x.invalid/h');

function digestOf(events: readonly ChangeEvent[], retain = 5): Digest {
  const digest = new Digest({ retain });
  for (const event of events) digest.add(event);
  return digest;
}

describe('chat messages: text from the cluster is inert on every platform', () => {
  it('Slack: the exact body of an event with a hostile manager, user, key and values', () => {
    const body = renderSlackMessage(digestOf([hostileEvent()]));
    assert.deepEqual(body, EXPECTED.slack);
    assert.deepEqual(blockKitProblems(body), []);
  });

  for (const name of PLATFORMS) {
    it(`${name}: the exact body of an event with a hostile manager, user, key and values`, () => {
      const { body } = renderBatch(platform(name), digestOf([hostileEvent()]));
      assert.deepEqual(body, EXPECTED[name]);
      assert.deepEqual(payloadProblems(name, JSON.stringify(body)), []);
    });
  }

  it('a seeded corpus of hostile events, alone, in groups, as digests and as stories, on every platform', () => {
    const random = seededRandom(27);
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
    const types: EventType[] = ['ADDED', 'UPDATED', 'DELETED'];
    const events: ChangeEvent[] = [];
    for (let n = 0; n < 400; n++) {
      const type = pick(types);
      const owner = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: `web-${n % 7}`,
        uid: `owner-${n % 7}`,
      };
      events.push({
        id: `uid-${n}:${n}`,
        type,
        time: new Date(Date.UTC(2026, 10, 22, 10, 31, n % 60)).toISOString(),
        cluster: random() < 0.2 ? hostileText(random, 2) : 'prod',
        object: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          resource: 'configmaps',
          namespace: pick(['shop', 'web', 'kube-system']),
          name: `cm-${n}`,
          uid: `uid-${n}`,
          resourceVersion: String(n),
        },
        owner,
        by: {
          managers: [{ manager: hostileText(random), operation: 'Update' }],
          ...(random() < 0.5 ? { user: { username: hostileText(random) } } : {}),
        },
        ...(type === 'UPDATED'
          ? {
              changes: Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
                op: 'replace' as const,
                path: `/data/${hostileText(random, 2).replaceAll('~', '~0').replaceAll('/', '~1')}`,
                from: hostileText(random),
                to: hostileText(random),
                manager: hostileText(random, 2),
              })),
            }
          : {}),
        // What it reaches and what a rollout brings: names, keys, containers and variables from the cluster.
        ...(random() < 0.5
          ? {
              usedBy: {
                workloads: Array.from({ length: Math.floor(random() * 4) }, (_, w) => ({
                  object: {
                    apiVersion: 'apps/v1',
                    kind: 'Deployment',
                    name: hostileText(random, 2),
                    uid: `w${w}`,
                  },
                  via: [
                    {
                      type: 'env' as const,
                      key: hostileText(random, 2),
                      env: hostileText(random, 2),
                      container: hostileText(random, 2),
                    },
                    {
                      type: 'volume' as const,
                      volume: hostileText(random, 2),
                      initContainer: hostileText(random, 2),
                    },
                  ],
                  keys: [hostileText(random, 2)],
                  live: pick([true, false, 'eventually'] as const),
                  pods: { total: 2, old: 1 },
                })),
                unreadKeys: [hostileText(random, 2)],
              },
            }
          : {}),
        ...(random() < 0.2
          ? {
              rollsOut: [
                {
                  object: { kind: 'Secret', namespace: hostileText(random, 2), name: hostileText(random, 2) },
                  id: `s:${n}`,
                  time: '2026-11-22T10:30:00Z',
                },
              ],
            }
          : {}),
      });
    }
    const stories: Story[] = [];
    const builder = new StoryBuilder({ windowMs: 60_000 }, { story: (story) => stories.push(story) });
    for (const event of events) builder.add(event);
    builder.flush();
    const batches = [
      ...events.map((event) => digestOf([event])),
      ...Array.from({ length: 100 }, (_, n) => digestOf(events.slice(n * 3, n * 3 + 3))),
      ...Array.from({ length: 20 }, (_, n) => digestOf(events.slice(n * 20, n * 20 + 20))),
    ];
    let checked = 0;
    const problems: string[] = [];
    for (const batch of batches) {
      const slack = renderSlackMessage(batch);
      problems.push(...blockKitProblems(slack).map((p) => `slack: ${p}`));
      for (const name of PLATFORMS)
        problems.push(
          ...payloadProblems(name, JSON.stringify(renderBatch(platform(name), batch).body)).map(
            (p) => `${name}: ${p}`,
          ),
        );
      checked++;
    }
    for (const story of stories) {
      const message = storyMessage(story);
      problems.push(...blockKitProblems(renderSlackChatMessage(message)).map((p) => `slack story: ${p}`));
      for (const name of PLATFORMS)
        problems.push(
          ...payloadProblems(name, JSON.stringify(platform(name).render(message))).map(
            (p) => `${name} story: ${p}`,
          ),
        );
      checked++;
    }
    assert.deepEqual(problems.slice(0, 10), []);
    assert.equal(checked, batches.length + stories.length);
    assert.ok(stories.length >= 7, `${stories.length} stories`);
  });
});

describe('a shortcode split over two spans', () => {
  it('a manager named `:6w` before `: …` is inert: `:6w:` would be an emoji only together', async () => {
    const { inertLine } = await import('../../../../../src/sinks/chat/core/chat-text.ts');
    const emoji = /:[\w+-]*[a-z][\w+-]*:/i;
    assert.deepEqual(inertLine([{ text: ':6w' }, { text: ': x' }], emoji), [
      { text: ':6w', style: 'code' },
      { text: ': x' },
    ]);
    assert.deepEqual(inertLine([{ text: 'alice' }, { text: ': x' }], emoji), [
      { text: 'alice' },
      { text: ': x' },
    ]);
  });
});
