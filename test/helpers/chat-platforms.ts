// The chat platforms besides Slack, by their type: each one's renderer and its default pacing, for the
// tests that go through all of them (src/ knows each only in its own folder).

import type { ChatPlatform } from '../../src/sinks/chat/core/chat.ts';
import { DISCORD_MIN_INTERVAL_MS, discordPlatform } from '../../src/sinks/chat/discord/discord.ts';
import {
  GOOGLE_CHAT_MIN_INTERVAL_MS,
  googleChatPlatform,
} from '../../src/sinks/chat/google-chat/google-chat.ts';
import {
  MATTERMOST_MIN_INTERVAL_MS,
  mattermostPlatform,
} from '../../src/sinks/chat/mattermost/mattermost.ts';
import { TEAMS_MIN_INTERVAL_MS, teamsPlatform } from '../../src/sinks/chat/teams/teams.ts';

export type ChatPlatformName = 'teams' | 'discord' | 'mattermost' | 'google-chat';

export const CHAT_PLATFORMS: Record<
  ChatPlatformName,
  { create: (url: string) => ChatPlatform; minIntervalMs: number }
> = {
  teams: { create: teamsPlatform, minIntervalMs: TEAMS_MIN_INTERVAL_MS },
  discord: { create: discordPlatform, minIntervalMs: DISCORD_MIN_INTERVAL_MS },
  mattermost: { create: mattermostPlatform, minIntervalMs: MATTERMOST_MIN_INTERVAL_MS },
  'google-chat': { create: googleChatPlatform, minIntervalMs: GOOGLE_CHAT_MIN_INTERVAL_MS },
};
