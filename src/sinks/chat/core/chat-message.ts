// What a chat message says, before any platform's markup: a title, a
// context line (cluster, resource, time), sections of lines made of styled
// spans (plain, bold, italic, code, an event type's icon), and a closing
// note. Every platform's renderer (Slack's Block Kit, Teams' Adaptive Card,
// Discord's embed, Mattermost's markdown, Google Chat's card) turns it into
// its own payload and fits it into its own limits; the choice of what to say
// (one event in full, a few events with their first changes, or a digest of
// a burst) is made once, here.
import type { Change } from '../../../diff/types.ts';
import { type ChangeEvent, type EventType, offlineNote, qualifiedResource } from '../../../events/event.ts';
import { objectKey } from '../../../kube/types.ts';
import { groupedCount } from '../../../util/count-text.ts';
import { printable } from '../../../util/terminal-text.ts';
import type { Digest } from '../../core/digest.ts';
import { readablePath, renderValue } from '../../core/pretty.ts';
import { type Piece, type ReachLimits, rollsOutPieces, usedByPieces } from '../../core/used-by-text.ts';
import { byText, changesFromSeveralManagers } from '../../who.ts';

export interface ChatFormatOptions {
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
  /**
   * What a ConfigMap or Secret change reaches (usedBy) and what a rollout brings (rollsOut), named for an
   * event alone in its message; more are counted ("and 497 more"). Default 10 workloads, 20 keys, 10 changes.
   */
  reach: ReachLimits;
  /** The same, per event when a message holds several, and in the notification text. Default 3, 5, 3. */
  reachInGroup: ReachLimits;
}

export const DEFAULT_CHAT_FORMAT: ChatFormatOptions = {
  maxEventsPerMessage: 5,
  maxChangesPerEvent: 20,
  maxChangesPerEventInGroup: 5,
  digestRecent: 5,
  maxValueLength: 80,
  reach: { workloads: 10, keys: 20, rollsOut: 10 },
  reachInGroup: { workloads: 3, keys: 5, rollsOut: 3 },
};

export interface Span {
  text: string;
  /** 'icon': `text` is an EventType, shown as the platform's emoji for it. */
  style?: 'bold' | 'italic' | 'code' | 'icon';
}
export type Line = Span[];

export interface ChatSection {
  lines: Line[];
}

export interface ChatMessage {
  /**
   * The notification text: '[prod-eu] 37 changes in shop: 30 pods added, …', as spans so that each platform
   * writes what came from the cluster (a name, a manager, a value) in its own inert form (chat-text.ts).
   */
  summary: Line;
  /** The headline, plain text: 'UPDATED Deployment shop/web', '37 changes in shop'… */
  title: string;
  /** …after the icon of this event type, for a single event. */
  icon?: EventType;
  /** Cluster, resource, time: shown small under the title. */
  context: Line[];
  sections: ChatSection[];
  /** A closing remark ('…and 12 more changes', why a digest). */
  note?: string;
  /** Whether every event is shown (not a digest). */
  inFull: boolean;
}

/** Whether chatMessage shows this batch event by event (rather than as a digest). */
export function showsEventsInFull(batch: Digest, options: ChatFormatOptions = DEFAULT_CHAT_FORMAT): boolean {
  return batch.complete && batch.count <= options.maxEventsPerMessage;
}

/**
 * The message for everything a batch stands for: its events one by one when few and all kept, else a
 * digest. `pace` says in words how fast the platform takes messages, for the digest's note.
 */
export function chatMessage(
  batch: Digest,
  options: ChatFormatOptions = DEFAULT_CHAT_FORMAT,
  pace = 'this channel takes messages',
): ChatMessage {
  const events = batch.events;
  const inFull = showsEventsInFull(batch, options);
  if (inFull && events.length === 1) return eventMessage(events[0] as ChangeEvent, options);
  const context: Line[] = [
    ...(batch.cluster ? [clusterLine(batch.cluster)] : []),
    [{ text: timeRange(batch.firstTime, batch.lastTime) }],
  ];
  const title = `${groupedCount(batch.count)} changes ${batch.where()}`;
  const summary: Line = [{ text: `${prefix(batch.cluster)}${batch.summary()}` }];
  if (inFull) {
    const sections = events.map((event) => {
      const changes = event.changes ?? [];
      const shown = changes.slice(0, options.maxChangesPerEventInGroup);
      const perChange = changesFromSeveralManagers(changes);
      const lines = [
        eventTitle(event),
        ...shown.map((change) => changeLine(change, options.maxValueLength, perChange)),
      ];
      if (changes.length > shown.length)
        lines.push([{ text: `…and ${more(changes.length - shown.length)}`, style: 'italic' }]);
      lines.push(...reachLines(event, options.reachInGroup));
      return { lines };
    });
    return { summary, title, context, sections, inFull };
  }
  const parts = batch.parts();
  const kinds: Line[] = parts.slice(0, 10).map((part) => [{ text: `• ${part}` }]);
  if (parts.length > 10) kinds.push([{ text: `• …and ${parts.length - 10} more kinds of change` }]);
  const sections: ChatSection[] = [{ lines: kinds }];
  const namespaces = batch.namespaces();
  if (namespaces.length > 1) {
    const line: Line = [{ text: 'By namespace:', style: 'bold' }];
    namespaces.slice(0, 12).forEach(([name, count], index) => {
      line.push({ text: index === 0 ? ' ' : ' · ' });
      if (name === '') line.push({ text: 'cluster-wide', style: 'italic' });
      else line.push({ text: name });
      line.push({ text: ` ${groupedCount(count)}` });
    });
    if (namespaces.length > 12) line.push({ text: ` · …and ${namespaces.length - 12} more` });
    sections.push({ lines: [line] });
  }
  const recent = events.slice(-options.digestRecent);
  if (recent.length > 0) {
    const heading = recent.length === 1 ? 'Most recent:' : 'Most recent, oldest first:';
    sections.push({
      lines: [
        [{ text: heading, style: 'bold' }],
        ...recent.map((event) => recentLine(event, options.maxValueLength)),
      ],
    });
  }
  return {
    summary,
    title,
    context,
    sections,
    note: `Changes came faster than ${pace}, so kubediff summarized them.`,
    inFull,
  };
}

function eventMessage(event: ChangeEvent, options: ChatFormatOptions): ChatMessage {
  const { object } = event;
  const where = objectKey(object);
  const changes = event.changes ?? [];
  const shown = changes.slice(0, options.maxChangesPerEvent);
  const count =
    changes.length > 0 ? ` (${changes.length === 1 ? '1 change' : `${changes.length} changes`})` : '';
  const by = elideBy(byText(event.by));
  const perChange = changesFromSeveralManagers(changes);
  const reach = reachLines(event, options.reach);
  // The notification says what the change reaches too: `… (1 change) → used by deployment/web (…)`.
  const [firstReach] = reachLines(event, options.reachInGroup);
  return {
    summary: [
      { text: `${prefix(event.cluster)}${event.type} ${object.kind} ${where}` },
      ...(by ? [{ text: ' by ' }, { text: by }] : []),
      ...(count ? [{ text: count }] : []),
      ...(firstReach ? [{ text: ' ' }, ...firstReach] : []),
    ],
    title: `${event.type} ${object.kind} ${where}`,
    icon: event.type,
    context: [
      ...(by ? [[{ text: 'by ' }, { text: by, style: 'bold' }] satisfies Line] : []),
      ...(event.cluster ? [clusterLine(event.cluster)] : []),
      [{ text: `${qualifiedResource(event)} (${object.apiVersion})` }],
      [{ text: clock(event.time) }],
      ...notes(event).map((note): Line => [{ text: note, style: 'italic' }]),
    ],
    sections: [
      ...(shown.length > 0
        ? [{ lines: shown.map((change) => changeLine(change, options.maxValueLength, perChange)) }]
        : []),
      ...(reach.length > 0 ? [{ lines: reach }] : []),
    ],
    ...(changes.length > shown.length ? { note: `…and ${more(changes.length - shown.length)}` } : {}),
    inFull: true,
  };
}

/**
 * What a ConfigMap or Secret change reaches and what a rollout brings (used-by-text.ts), one line each:
 * '→ used by `deployment/web` (env APP_MODE: 3 pods still run the old value), `cronjob/report` (volume
 * cfg: live) and 497 more'; workload and object names as code. None for other events.
 */
export function reachLines(event: Pick<ChangeEvent, 'usedBy' | 'rollsOut'>, limits: ReachLimits): Line[] {
  const span = (piece: Piece): Span =>
    piece.name ? { text: piece.text, style: 'code' } : { text: piece.text };
  return [...usedByPieces(event.usedBy, limits), ...rollsOutPieces(event.rollsOut, limits)].map(
    (pieces): Line => [{ text: '→ ' }, ...pieces.map(span)],
  );
}

export function clusterLine(cluster: string): Line {
  return [{ text: 'cluster ' }, { text: cluster, style: 'bold' }];
}

export function prefix(cluster: string | undefined): string {
  return cluster ? `[${cluster}] ` : '';
}

function notes(event: ChangeEvent): string[] {
  return [
    (event.cause ? offlineNote(event) : event.offline && 'happened while kubediff was not watching') || '',
    event.finalStateUnknown ? 'final state unknown' : '',
  ].filter(Boolean);
}

/** '✏️ *UPDATED* ConfigMap `shop/web`'. */
function eventTitle(event: ChangeEvent): Line {
  const { object } = event;
  const where = objectKey(object);
  const line: Line = [
    { text: event.type, style: 'icon' },
    { text: ' ' },
    { text: event.type, style: 'bold' },
    { text: ` ${object.kind} ` },
    { text: where, style: 'code' },
  ];
  const by = elideBy(byText(event.by));
  if (by) line.push({ text: ' by ' }, { text: by, style: 'bold' });
  for (const note of notes(event)) line.push({ text: ' ' }, { text: `(${note})`, style: 'italic' });
  return line;
}

function recentLine(event: ChangeEvent, maxValueLength: number): Line {
  const first = event.changes?.[0];
  if (!first) return eventTitle(event);
  const rest = (event.changes?.length ?? 1) - 1;
  const change = changeLine(first, Math.min(maxValueLength, 40)).slice(1);
  return [
    ...eventTitle(event),
    { text: ' — ' },
    ...change,
    ...(rest > 0 ? [{ text: ' ' }, { text: `(+${rest} more)`, style: 'italic' as const }] : []),
  ];
}

/**
 * '• `spec.replicas`: `2` → `5`', '• `metadata.labels.tier` added: `"web"`'; with `withManager`, followed
 * by the change's manager (the event's changes come from several).
 */
export function changeLine(change: Change, maxValueLength: number, withManager = false): Line {
  const path: Span = { text: elide(readablePath(change.path), 120), style: 'code' };
  const value = (v: Change['from']): Span => ({
    text: renderValue(v ?? null, maxValueLength),
    style: 'code',
  });
  const owner: Line =
    withManager && change.manager
      ? [{ text: ' ' }, { text: `(${elide(change.manager, 80)})`, style: 'italic' }]
      : [];
  if (change.op === 'add') return [{ text: '• ' }, path, { text: ' added: ' }, value(change.to), ...owner];
  if (change.op === 'remove')
    return [{ text: '• ' }, path, { text: ' removed (was ' }, value(change.from), { text: ')' }, ...owner];
  return [
    { text: '• ' },
    path,
    { text: ': ' },
    value(change.from),
    { text: ' → ' },
    value(change.to),
    ...owner,
  ];
}

/** Who made it, short enough for a context element or a title (up to 128 characters per manager name). */
export function elideBy(by: string | undefined): string | undefined {
  return by === undefined ? undefined : elide(by, 150);
}

function more(count: number): string {
  return count === 1 ? '1 more change' : `${groupedCount(count)} more changes`;
}

function elide(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.floor((max - 1) / 2);
  return `${text.slice(0, keep)}…${text.slice(-keep)}`;
}

function clock(time: string): string {
  return `${time.slice(11, 19)} UTC`;
}

/** '10:31:07 UTC', '10:31:07–10:33:40 UTC', or with the first date when the range crosses midnight. */
export function timeRange(first: string | undefined, last: string | undefined): string {
  if (!first || !last) return '';
  if (first.slice(0, 19) === last.slice(0, 19)) return clock(first);
  const sameDay = first.slice(0, 10) === last.slice(0, 10);
  return `${sameDay ? first.slice(11, 19) : `${first.slice(0, 10)} ${first.slice(11, 19)}`}–${last.slice(11, 19)} UTC`;
}

/** The emoji of an event type, for platforms that take Unicode emoji. */
export const EVENT_EMOJI: Record<EventType, string> = { ADDED: '➕', UPDATED: '✏️', DELETED: '🗑️' };

/** The title with its icon, as plain text (every character visible: chat-text.ts). */
export function titleText(message: ChatMessage, icons: Record<EventType, string> = EVENT_EMOJI): string {
  const title = printable(message.title);
  return message.icon ? `${icons[message.icon]} ${title}` : title;
}

/** The context lines (cluster, resource, time) as one plain line, for a footer or a subtitle. */
export function contextText(message: ChatMessage): string {
  return message.context.map(plainText).join(' · ');
}

/**
 * A line cut to `max` characters of text in all (its last kept span elided with '…'), so that a platform's
 * markup around each span stays whole.
 */
export function fitLine(line: Line, max: number): Line {
  const kept: Line = [];
  let left = max;
  for (const span of line) {
    const length = span.style === 'icon' ? 2 : span.text.length;
    if (length <= left) {
      kept.push(span);
      left -= length;
      continue;
    }
    if (span.style !== 'icon' && left > 1) kept.push({ ...span, text: truncateText(span.text, left) });
    else kept.push({ text: '…' });
    break;
  }
  return kept;
}

/** The plain text of a line, icons as emoji, every other character visible (chat-text.ts). */
export function plainText(line: Line): string {
  return line
    .map((span) => (span.style === 'icon' ? EVENT_EMOJI[span.text as EventType] : printable(span.text)))
    .join('');
}

/**
 * Rendered lines kept within `budget` characters in all: whole lines while they fit, then a count of what
 * was left out, so a message is shortened visibly, never cut inside its markup. (Each line is short by
 * construction: names, paths and values are elided before they get here.)
 */
export function fitLines(rendered: string[], budget: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const [index, line] of rendered.entries()) {
    if (used + line.length + 1 > budget - 80) {
      kept.push(`…and ${rendered.length - index} more lines (shortened to fit the platform's limits)`);
      break;
    }
    kept.push(line);
    used += line.length + 1;
  }
  return kept;
}

/**
 * One text per section (its lines rendered and joined by `separator`) for the card platforms, while they
 * fit: at most `maxSections` of them, each within `maxChars`, together within `budgetBytes` of payload
 * (counted ×1.3 for the escapes JSON adds).
 */
export function fitSections(
  sections: readonly ChatSection[],
  render: (line: Line) => string,
  separator: string,
  limits: { budgetBytes: number; maxSections: number; maxChars?: number },
): string[] {
  let budget = limits.budgetBytes;
  const texts: string[] = [];
  for (const section of sections) {
    if (texts.length >= limits.maxSections || budget < 200) break;
    const lines = fitLines(section.lines.map(render), Math.min(budget / 1.3, limits.maxChars ?? Infinity));
    const text = lines.join(separator);
    budget -= Buffer.byteLength(text) * 1.3;
    texts.push(text);
  }
  return texts;
}

/** Cuts plain text to `max` characters, never inside a surrogate pair. */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}
