// Slack messages (Block Kit) a person can read at a glance:
// - one event: a header "✏️ UPDATED Deployment shop/web", a context line
//   (cluster, resource, time), then its changes as `path`: `from` → `to`;
// - a few events: one section per event with its first changes;
// - a burst: a digest, "37 changes in shop: 30 pods added, 5 deployments
//   updated …", per namespace, and the most recent changes.
// Every message stays within Slack's limits: at most 50 blocks, 150
// characters per header, 3000 per section text, and well under the size at
// which Slack rejects a message; long values are elided in the middle and
// what does not fit is counted ("…and 12 more changes").
import type { Change } from '../diff/types.ts';
import { type ChangeEvent, type EventType, qualifiedResource } from '../events/event.ts';
import type { Digest } from './digest.ts';
import { formatCount } from './digest.ts';
import { readablePath, renderValue } from './pretty.ts';

export type SlackBlock =
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

export interface SlackFormatOptions {
  /** A batch of up to this many events is shown event by event; more become a digest. Default 5. */
  maxEventsPerMessage: number;
  /** Changes shown for an event alone in its message. Default 20. */
  maxChangesPerEvent: number;
  /** Changes shown per event when a message holds several. Default 5. */
  maxChangesPerEventInGroup: number;
  /** Most recent events shown in a digest. Default 5. */
  digestRecent: number;
  /** Longest rendered value before eliding its middle. Default 80. */
  maxValueLength: number;
}

export const DEFAULT_SLACK_FORMAT: SlackFormatOptions = {
  maxEventsPerMessage: 5,
  maxChangesPerEvent: 20,
  maxChangesPerEventInGroup: 5,
  digestRecent: 5,
  maxValueLength: 80,
};

export const EMOJI: Record<EventType, string> = {
  ADDED: ':heavy_plus_sign:',
  UPDATED: ':pencil2:',
  DELETED: ':wastebasket:',
};

/** The message for everything a batch stands for: its events one by one when few and all kept, else a digest. */
export function renderSlackMessage(
  batch: Digest,
  options: SlackFormatOptions = DEFAULT_SLACK_FORMAT,
): SlackMessage {
  const events = batch.events;
  if (batch.complete && events.length === 1) return renderEventMessage(events[0] as ChangeEvent, options);
  if (batch.complete && events.length <= options.maxEventsPerMessage)
    return renderEventsMessage(batch, options);
  return renderDigestMessage(batch, options);
}

/** Whether renderSlackMessage shows this batch event by event (rather than as a digest). */
export function showsEventsInFull(
  batch: Digest,
  options: SlackFormatOptions = DEFAULT_SLACK_FORMAT,
): boolean {
  return batch.complete && batch.count <= options.maxEventsPerMessage;
}

function renderEventMessage(event: ChangeEvent, options: SlackFormatOptions): SlackMessage {
  const { object } = event;
  const where = object.namespace ? `${object.namespace}/${object.name}` : object.name;
  const blocks: SlackBlock[] = [
    header(`${EMOJI[event.type]} ${event.type} ${object.kind} ${where}`),
    context([
      ...(event.cluster ? [`cluster *${escapeMrkdwn(event.cluster)}*`] : []),
      `${escapeMrkdwn(qualifiedResource(event))} (${escapeMrkdwn(object.apiVersion)})`,
      clock(event.time),
      ...notes(event).map((note) => `_${note}_`),
    ]),
  ];
  const changes = event.changes ?? [];
  const shown = changes.slice(0, options.maxChangesPerEvent);
  blocks.push(...sections(shown.map((change) => changeLine(change, options.maxValueLength))));
  if (changes.length > shown.length) blocks.push(context([`…and ${more(changes.length - shown.length)}`]));
  const count =
    changes.length > 0 ? ` (${changes.length === 1 ? '1 change' : `${changes.length} changes`})` : '';
  return fit({ text: `${prefix(event.cluster)}${event.type} ${object.kind} ${where}${count}`, blocks });
}

function renderEventsMessage(batch: Digest, options: SlackFormatOptions): SlackMessage {
  const blocks: SlackBlock[] = [
    header(`${formatCount(batch.count)} changes ${batch.where()}`),
    context([...(batch.cluster ? [`cluster *${escapeMrkdwn(batch.cluster)}*`] : []), timeRange(batch)]),
  ];
  for (const event of batch.events) {
    const changes = event.changes ?? [];
    const shown = changes.slice(0, options.maxChangesPerEventInGroup);
    const lines = [eventTitle(event), ...shown.map((change) => changeLine(change, options.maxValueLength))];
    if (changes.length > shown.length) lines.push(`_…and ${more(changes.length - shown.length)}_`);
    blocks.push(...sections(lines));
  }
  return fit({ text: `${prefix(batch.cluster)}${batch.summary()}`, blocks });
}

function renderDigestMessage(batch: Digest, options: SlackFormatOptions): SlackMessage {
  const parts = batch.parts();
  const shownParts = parts.slice(0, 10).map((part) => `• ${escapeMrkdwn(part)}`);
  if (parts.length > 10) shownParts.push(`• …and ${parts.length - 10} more kinds of change`);
  const blocks: SlackBlock[] = [
    header(`${formatCount(batch.count)} changes ${batch.where()}`),
    context([...(batch.cluster ? [`cluster *${escapeMrkdwn(batch.cluster)}*`] : []), timeRange(batch)]),
    ...sections(shownParts),
  ];
  const namespaces = batch.namespaces();
  if (namespaces.length > 1) {
    const shown = namespaces
      .slice(0, 12)
      .map(([name, count]) => `${name === '' ? '_cluster-wide_' : escapeMrkdwn(name)} ${formatCount(count)}`);
    if (namespaces.length > 12) shown.push(`…and ${namespaces.length - 12} more`);
    blocks.push(...sections([`*By namespace:* ${shown.join(' · ')}`]));
  }
  const recent = batch.events.slice(-options.digestRecent);
  if (recent.length > 0) {
    const lines = recent.map((event) => recentLine(event, options.maxValueLength));
    blocks.push(
      ...sections([recent.length === 1 ? '*Most recent:*' : '*Most recent, oldest first:*', ...lines]),
    );
  }
  blocks.push(
    context([
      'Changes came faster than Slack takes messages (about one a second), so kubediff summarized them.',
    ]),
  );
  return fit({ text: `${prefix(batch.cluster)}${batch.summary()}`, blocks });
}

export function prefix(cluster: string | undefined): string {
  return cluster ? `[${cluster}] ` : '';
}

function notes(event: ChangeEvent): string[] {
  return [
    event.offline ? 'happened while kubediff was not watching' : '',
    event.finalStateUnknown ? 'final state unknown' : '',
  ].filter(Boolean);
}

function eventTitle(event: ChangeEvent): string {
  const { object } = event;
  const where = object.namespace ? `${object.namespace}/${object.name}` : object.name;
  const extra = notes(event).map((note) => ` _(${note})_`);
  return `${EMOJI[event.type]} *${event.type}* ${escapeMrkdwn(object.kind)} ${code(where)}${extra.join('')}`;
}

function recentLine(event: ChangeEvent, maxValueLength: number): string {
  const first = event.changes?.[0];
  if (!first) return eventTitle(event);
  const rest = (event.changes?.length ?? 1) - 1;
  const change = changeLine(first, Math.min(maxValueLength, 40)).replace(/^• /, '');
  return `${eventTitle(event)} — ${change}${rest > 0 ? ` _(+${rest} more)_` : ''}`;
}

/** '• `spec.replicas`: `2` → `5`', '• `metadata.labels.tier` added: `"web"`'. */
export function changeLine(change: Change, maxValueLength: number): string {
  const path = code(elide(readablePath(change.path), 120));
  const value = (v: Change['from']) => code(renderValue(v ?? null, maxValueLength));
  if (change.op === 'add') return `• ${path} added: ${value(change.to)}`;
  if (change.op === 'remove') return `• ${path} removed (was ${value(change.from)})`;
  return `• ${path}: ${value(change.from)} → ${value(change.to)}`;
}

function more(count: number): string {
  return count === 1 ? '1 more change' : `${formatCount(count)} more changes`;
}

/** Slack's mrkdwn needs &, < and > escaped; everything else is shown as is. */
export function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Inline code; a backtick inside would end it early, so it becomes a look-alike. */
export function code(text: string): string {
  return `\`${escapeMrkdwn(text.replaceAll('`', 'ˋ'))}\``;
}

function elide(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.floor((max - 1) / 2);
  return `${text.slice(0, keep)}…${text.slice(-keep)}`;
}

export function clock(time: string): string {
  return `${time.slice(11, 19)} UTC`;
}

function timeRange(batch: Digest): string {
  const first = batch.firstTime;
  const last = batch.lastTime;
  if (!first || !last) return '';
  if (first.slice(0, 19) === last.slice(0, 19)) return clock(first);
  const sameDay = first.slice(0, 10) === last.slice(0, 10);
  return `${sameDay ? first.slice(11, 19) : `${first.slice(0, 10)} ${first.slice(11, 19)}`}–${last.slice(11, 19)} UTC`;
}

export function header(text: string): SlackBlock {
  return {
    type: 'header',
    text: { type: 'plain_text', text: truncate(text, SLACK_LIMITS.headerText), emoji: true },
  };
}

export function context(texts: string[]): SlackBlock {
  const elements = texts
    .filter((text) => text !== '')
    .slice(0, SLACK_LIMITS.contextElements)
    .map((text) => ({ type: 'mrkdwn' as const, text: truncate(text, SLACK_LIMITS.sectionText) }));
  return { type: 'context', elements };
}

/** Lines packed into as few sections as their 3000-character limit allows. */
export function sections(lines: string[]): SlackBlock[] {
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
export function fit(message: SlackMessage): SlackMessage {
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
