// Which sinks tell stories (docs/stories.md): every chat platform by default, each with its own
// --no-…-stories switch; webhooks and the terminal when asked; Kafka never.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type RawStoryFlags, storySettingsFrom, withStories } from '../../../src/config/story-settings.ts';
import type { SinkSpec } from '../../../src/sinks/core/setup.ts';
import { UsageError } from '../../../src/util/errors.ts';

const settings = storySettingsFrom({}, undefined, 'pretty');
const chat = (type: 'teams' | 'discord' | 'mattermost' | 'google-chat'): SinkSpec => ({
  type,
  webhookUrl: 'https://chat.example.invalid/hook',
});
const tells = (spec: SinkSpec, flags: RawStoryFlags = {}) =>
  typeof withStories(spec, settings, flags).stories === 'object';

describe('stories per sink', () => {
  it('every chat platform tells stories by default, and each has its own switch', () => {
    assert.equal(tells({ type: 'slack', webhookUrl: 'https://hooks.example.invalid/x' }), true);
    for (const type of ['teams', 'discord', 'mattermost', 'google-chat'] as const)
      assert.equal(tells(chat(type)), true, type);
    assert.equal(tells(chat('teams'), { teamsStories: false }), false);
    assert.equal(tells(chat('discord'), { discordStories: false }), false);
    assert.equal(tells(chat('mattermost'), { mattermostStories: false }), false);
    assert.equal(tells(chat('google-chat'), { googleChatStories: false }), false);
    // One platform's switch leaves the others alone.
    assert.equal(tells(chat('discord'), { teamsStories: false, slackStories: false }), true);
    // A sink's own key wins over the flags.
    assert.equal(tells({ ...chat('teams'), stories: true }, { teamsStories: false }), true);
    assert.equal(tells({ ...chat('teams'), stories: false }), false);
  });

  it('webhooks when asked; Kafka never, and says so when a config asks', () => {
    const webhook: SinkSpec = { type: 'webhook', url: 'https://hook.example.invalid/' };
    assert.equal(tells(webhook), false);
    assert.equal(tells(webhook, { webhookStories: true }), true);
    const kafka: SinkSpec = { type: 'kafka', brokers: ['127.0.0.1:9092'], topic: 't' };
    assert.equal(tells(kafka), false);
    assert.throws(
      () => withStories({ ...kafka, stories: true }, settings, {}),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message ===
          'stories do not apply to a Kafka sink: it produces one event per message (remove its stories key).',
    );
  });
});

describe('the bound of open stories', () => {
  it('in events and in bytes (stories.maxOpenSize), 16 MB of them by default', () => {
    assert.equal(settings.options.maxOpenBytes, 16 * 1024 * 1024);
    const set = storySettingsFrom({}, { maxOpenEvents: 500, maxOpenSize: '2MB' }, 'pretty');
    assert.deepEqual([set.options.maxOpenEvents, set.options.maxOpenBytes], [500, 2 * 1024 * 1024]);
    assert.throws(
      () => storySettingsFrom({}, { maxOpenSize: 'lots' }, 'pretty'),
      (error) => error instanceof UsageError && /stories\.maxOpenSize/.test(error.message),
    );
  });
});
