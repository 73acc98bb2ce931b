// Slack's renderer: the chat message (chat-message.ts: one event in full, a few one by one, or a digest)
// in Block Kit and mrkdwn, within Slack's limits (50 blocks, 150 characters per header, 3000 per section,
// well under its message size); long values are elided in the middle, what does not fit is counted.
// Text from the cluster is made inert (chat-text.ts) as docs/security.md's table says for Slack, with
// Slack's references: &, < and > as entities everywhere, every mrkdwn text `verbatim`, text holding a
// formatting character, an emoji code, an '@' or a URL as inline code; the header is plain_text.
import type { EventType } from '../../../events/event.ts';
import type { Digest } from '../../core/digest.ts';
import {
  type ChatMessage,
  chatMessage,
  DEFAULT_CHAT_FORMAT,
  fitLine,
  type Line,
  plainText,
} from '../core/chat-message.ts';
import { codeText, inertLine, visible, wrapped } from '../core/chat-text.ts';

type MrkdwnText = { type: 'mrkdwn'; text: string; verbatim: true };

type SlackBlock =
  | { type: 'header'; text: { type: 'plain_text'; text: string; emoji: boolean } }
  | { type: 'section'; text: MrkdwnText }
  | { type: 'context'; elements: MrkdwnText[] }
  | { type: 'divider' };

export interface SlackMessage {
  /** The notification text (and what clients without Block Kit show), in mrkdwn escaped like the blocks. */
  text: string;
  blocks: SlackBlock[];
}

/** What Slack acts on that no escape stops: formatting characters, an emoji code, a would-be mention, a URL. */
const SLACK_ACTS_ON = /[*_~`@]|:\/\/|\bwww\.|:[\w+-]*[a-z][\w+-]*:/i;

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
  const title = visible(message.title);
  const blocks: SlackBlock[] = [
    header(message.icon ? `${EMOJI[message.icon]} ${title}` : title),
    context(message.context.map(mrkdwn)),
  ];
  for (const section of message.sections) blocks.push(...sections(section.lines.map(mrkdwn)));
  if (message.note) blocks.push(context([mrkdwn([{ text: message.note }])]));
  return fit({ text: mrkdwn(fitLine(message.summary, SLACK_LIMITS.fallbackText)), blocks });
}

/**
 * `message` with its first line (the header, and the notification text) rewritten to `headline`: an
 * OUTCOME's verdict written over the message of its change (docs/outcomes.md). The rest stays as posted.
 */
export function withFirstLine(message: SlackMessage, headline: Line): SlackMessage {
  const rest = message.blocks.filter((block, index) => index > 0 || block.type !== 'header');
  return fit({
    text: mrkdwn(fitLine(headline, SLACK_LIMITS.fallbackText)),
    blocks: [header(visible(plainText(headline))), ...rest],
  });
}

/** A line in Slack's mrkdwn: *bold*, _italic_, `code`, :emoji:, the rest escaped (see the header). */
function mrkdwn(line: Line): string {
  return inertLine(line, SLACK_ACTS_ON)
    .map((span) => {
      if (span.style === 'icon') return EMOJI[span.text as EventType];
      if (span.style === 'code') return code(span.text);
      if (span.style === 'bold') return wrapped(escapeMrkdwn(span.text), '*');
      if (span.style === 'italic') return wrapped(escapeMrkdwn(span.text), '_');
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
  return `\`${escapeMrkdwn(codeText(text))}\``;
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
    .map((text) => mrkdwnText(truncate(text, SLACK_LIMITS.sectionText)));
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
  return { type: 'section', text: mrkdwnText(text) };
}

function mrkdwnText(text: string): MrkdwnText {
  return { type: 'mrkdwn', text, verbatim: true };
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
