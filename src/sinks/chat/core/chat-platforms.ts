// The chat platforms besides Slack, by the name the config file and the flags use: each one's renderer
// and its default pacing (its documented rate limit).

import { DISCORD_MIN_INTERVAL_MS, discordPlatform } from '../discord/discord.ts';
import { GOOGLE_CHAT_MIN_INTERVAL_MS, googleChatPlatform } from '../google-chat/google-chat.ts';
import { MATTERMOST_MIN_INTERVAL_MS, mattermostPlatform } from '../mattermost/mattermost.ts';
import { TEAMS_MIN_INTERVAL_MS, teamsPlatform } from '../teams/teams.ts';
import type { ChatPlatform } from './chat.ts';

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
