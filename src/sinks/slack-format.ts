// Slack's renderer: the chat message (chat-message.ts: one event in full, a
// few events one by one, or a digest of a burst) in Block Kit and mrkdwn.
// Every message stays within Slack's limits: at most 50 blocks, 150
// characters per header, 3000 per section text, and well under the size at
// which Slack rejects a message; long values are elided in the middle and
// what does not fit is counted ("…and 12 more changes").
import type { EventType } from '../events/event.ts';
import { type ChatMessage, chatMessage, DEFAULT_CHAT_FORMAT, type Line } from './chat-message.ts';
import type { Digest } from './digest.ts';

type SlackBlock =
  | { type: 'header'; text: { type: 'plain_text'; text: string; emoji: boolean } }
  | { type: 'section'; text: { type: 'mrkdwn'; text: string } }
  | { type: 'context'; elements: { type: 'mrkdwn'; text: string }[] }
  | { type: 'divider' };

export interface SlackMessage {
  /** The notification text (and what clients without Block Kit show). */
  text: string;
  blocks: SlackBlock[];
}

const SLACK_LIMITS = {
  blocks: 50,
  headerText: 150,
  sectionText: 3000,
  contextElements: 10,
  /**
   * Slack documents 40,000 characters for `text`, but rejects messages whose blocks hold far less
   * (msg_blocks_too_long at about 13,000): kubediff keeps the whole message under this.
   */
  messageChars: 10_000,
  /** The notification text is kept short. */
  fallbackText: 1_000,
} as const;

const EMOJI: Record<EventType, string> = {
  ADDED: ':heavy_plus_sign:',
  UPDATED: ':pencil2:',
  DELETED: ':wastebasket:',
};

/** The message for everything a batch stands for: its events one by one when few and all kept, else a digest. */
export function renderSlackMessage(batch: Digest): SlackMessage {
  return renderSlackChatMessage(chatMessage(batch, DEFAULT_CHAT_FORMAT, SLACK_PACE));
}

/** How fast Slack takes messages, in words (a digest's note). */
export const SLACK_PACE = 'Slack takes messages (about one a second)';

/** A chat message (an event, a batch, a digest or a story) in Block Kit. */
export function renderSlackChatMessage(message: ChatMessage): SlackMessage {
  const blocks: SlackBlock[] = [
    header(message.icon ? `${EMOJI[message.icon]} ${message.title}` : message.title),
    context(message.context.map(mrkdwn)),
  ];
  for (const section of message.sections) blocks.push(...sections(section.lines.map(mrkdwn)));
  if (message.note) blocks.push(context([escapeMrkdwn(message.note)]));
  return fit({ text: message.summary, blocks });
}

/** A line in Slack's mrkdwn: *bold*, _italic_, `code`, :emoji:, the rest escaped. */
function mrkdwn(line: Line): string {
  return line
    .map((span) => {
      if (span.style === 'icon') return EMOJI[span.text as EventType];
      if (span.style === 'code') return code(span.text);
      if (span.style === 'bold') return `*${escapeMrkdwn(span.text)}*`;
      if (span.style === 'italic') return `_${escapeMrkdwn(span.text)}_`;
      return escapeMrkdwn(span.text);
    })
    .join('');
}

/** Slack's mrkdwn needs &, < and > escaped; everything else is shown as is. */
function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Inline code; a backtick inside would end it early, so it becomes a look-alike. */
function code(text: string): string {
  return `\`${escapeMrkdwn(text.replaceAll('`', 'ˋ'))}\``;
}

function header(text: string): SlackBlock {
  return {
    type: 'header',
    text: { type: 'plain_text', text: truncate(text, SLACK_LIMITS.headerText), emoji: true },
  };
}

function context(texts: string[]): SlackBlock {
  const elements = texts
    .filter((text) => text !== '')
    .slice(0, SLACK_LIMITS.contextElements)
    .map((text) => ({ type: 'mrkdwn' as const, text: truncate(text, SLACK_LIMITS.sectionText) }));
  return { type: 'context', elements };
}

/** Lines packed into as few sections as their 3000-character limit allows. */
function sections(lines: string[]): SlackBlock[] {
  const blocks: SlackBlock[] = [];
  let current = '';
  for (const raw of lines) {
    const line = truncate(raw, SLACK_LIMITS.sectionText - 10);
    if (current !== '' && current.length + 1 + line.length > SLACK_LIMITS.sectionText) {
      blocks.push(section(current));
      current = '';
    }
    current = current === '' ? line : `${current}\n${line}`;
  }
  if (current !== '') blocks.push(section(current));
  return blocks;
}

function section(text: string): SlackBlock {
  return { type: 'section', text: { type: 'mrkdwn', text } };
}

/**
 * Cuts at a character boundary, never inside a surrogate pair, and never leaves a dangling '&'-escape or an
 * unclosed inline code span behind.
 */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  cut = cut.replace(/&[a-z]{0,3}$/, '');
  if ((cut.match(/`/g)?.length ?? 0) % 2 === 1) cut = cut.replace(/`[^`]*$/, '');
  return `${cut}…`;
}

function blockChars(block: SlackBlock): number {
  switch (block.type) {
    case 'header':
    case 'section':
      return block.text.text.length;
    case 'context':
      return block.elements.reduce((sum, element) => sum + element.text.length, 0);
    default:
      return 0;
  }
}

/** Keeps the message within the block count and size limits, saying so when something had to go. */
function fit(message: SlackMessage): SlackMessage {
  const text = truncate(message.text, SLACK_LIMITS.fallbackText);
  const blocks = message.blocks.filter((block) => block.type !== 'context' || block.elements.length > 0);
  const total = () => blocks.reduce((sum, block) => sum + blockChars(block), 0) + text.length;
  if (blocks.length <= SLACK_LIMITS.blocks && total() <= SLACK_LIMITS.messageChars) return { text, blocks };
  const note = context(["…shortened to fit Slack's message limits."]);
  const budget = SLACK_LIMITS.messageChars - blockChars(note);
  while (blocks.length > 1 && (blocks.length > SLACK_LIMITS.blocks - 1 || total() > budget)) blocks.pop();
  blocks.push(note);
  return { text, blocks };
}
