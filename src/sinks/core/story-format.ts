// How a story reads (docs/stories.md). storyView() is the platform-neutral structure: who, what the
// owner's own net change was, one line of what was derived, the counts, and the notes; each platform
// renders that structure: storyMessage() makes it a chat message that every chat platform's renderer
// posts (every chat platform), prettyStoryRenderer() the terminal's lines.
import { Chalk } from 'chalk';
import type { Change } from '../../diff/types.ts';
import type { EventType, UsedBy } from '../../events/event.ts';
import type { Story, StoryObject } from '../../events/story.ts';
import { groupedCount } from '../../util/count-text.ts';
import { printable } from '../../util/terminal-text.ts';
import { printedTime } from '../../util/timestamp.ts';
import {
  type ChatFormatOptions,
  type ChatMessage,
  type ChatSection,
  changeLine,
  clusterLine,
  DEFAULT_CHAT_FORMAT,
  elideBy,
  type Line,
  prefix,
  reachLines,
  timeRange,
} from '../chat/core/chat-message.ts';
import { byText } from '../who.ts';
import { type PrettyOptions, renderChange } from './pretty.ts';
import { rollsOutLines, usedByLines } from './used-by-text.ts';

export interface StoryView {
  /** 'Deployment shop/web'. */
  subject: string;
  /** What became of the owner itself: 'created', 'deleted', 'updated', 'no net change', or absent when it had no event. */
  ownerState: 'created' | 'deleted' | 'created and deleted' | 'updated' | 'no net change' | undefined;
  /** The owner's net changes. */
  changes: Change[];
  /** The whole story changed nothing net (the owner and everything derived went back where they were). */
  noNetChange: boolean;
  /** What the controllers derived, one line; '' when only the owner changed. */
  derived: string;
  /** '14 events: 1 Deployment updated, 2 ReplicaSets added…' per kind and type. */
  counts: string;
  /** Notes worth a glance: offline, continued, closed early. */
  notes: string[];
  /** Times of the first and the last event. */
  from: string;
  to: string;
  cluster: string | undefined;
  /** Who made the owner's own change (its events' `by`), when known. */
  by: string | undefined;
}

const VERBS = { ADDED: 'added', UPDATED: 'updated', DELETED: 'deleted' } as const;

export function storyView(story: Story): StoryView {
  const owner = story.owner;
  const subject = `${owner.kind} ${owner.namespace ? `${owner.namespace}/` : ''}${owner.name}`;
  const self = story.ownerChange;
  const ownerState = self ? stateOf(self) : undefined;
  const changes = self?.changes ?? [];
  const noNetChange =
    (ownerState === undefined || ownerState === 'no net change') &&
    story.objects.every(
      (object) => stateOf(object) === 'no net change' || (object.created && object.deleted),
    );
  const parts: string[] = [];
  for (const count of story.counts) {
    for (const type of ['ADDED', 'UPDATED', 'DELETED'] as const) {
      const n = count[type];
      if (n > 0) parts.push(`${groupedCount(n)} ${count.kind}${n === 1 ? '' : 's'} ${VERBS[type]}`);
    }
  }
  const notes = [
    story.offline ? 'happened while kubediff was not watching' : '',
    story.continued ? 'continues the previous story of this owner' : '',
    story.closed === 'max-length' ? 'still going: more follows in the next story' : '',
    story.closed === 'buffer' ? 'closed early: too many changes at once (more may follow)' : '',
  ].filter(Boolean);
  return {
    subject,
    ownerState,
    changes,
    noNetChange,
    derived: story.summary,
    counts: `${groupedCount(story.count)} event${story.count === 1 ? '' : 's'}: ${parts.join(', ')}`,
    notes,
    from: story.from,
    to: story.to,
    cluster: story.cluster,
    by: ownerBy(story),
  };
}

/** Who made the owner's events, as on an event (who.ts); several distinct ones joined. */
function ownerBy(story: Story): string | undefined {
  const names = new Set<string>();
  for (const event of story.events) {
    if (event.object.uid !== story.owner.uid) continue;
    const text = byText(event.by);
    if (text) names.add(text);
  }
  return names.size === 0 ? undefined : [...names].join(', ');
}

function stateOf(object: StoryObject): NonNullable<StoryView['ownerState']> {
  if (object.created && object.deleted) return 'created and deleted';
  if (object.created) return 'created';
  if (object.deleted) return 'deleted';
  return object.changes.length > 0 ? 'updated' : 'no net change';
}

/** The headline: 'Deployment shop/web updated', or '… no net change'. */
export function storyHeadline(view: StoryView): string {
  if (view.noNetChange) return `${view.subject}: no net change`;
  return `${view.subject} ${view.ownerState ?? 'changed'}`;
}

/** A ConfigMap's or Secret's story: what its last change reaches (its last own event's usedBy). */
function ownerUsedBy(story: Story): UsedBy | undefined {
  return story.events.findLast((event) => event.object.uid === story.owner.uid && event.usedBy)?.usedBy;
}

/**
 * One chat message for one story (chat-message.ts), rendered by each platform's own renderer: the
 * headline, who made the owner's change, the owner's net changes, one line of what was derived, the counts.
 */
export function storyMessage(story: Story, options: ChatFormatOptions = DEFAULT_CHAT_FORMAT): ChatMessage {
  const view = storyView(story);
  const icon: EventType =
    view.ownerState === 'created' ? 'ADDED' : view.ownerState === 'deleted' ? 'DELETED' : 'UPDATED';
  const by = elideBy(view.by);
  const shown = view.changes.slice(0, options.maxChangesPerEvent);
  const sections: ChatSection[] = [];
  if (shown.length > 0)
    sections.push({ lines: shown.map((change) => changeLine(change, options.maxValueLength)) });
  if (view.changes.length > shown.length)
    sections.push({
      lines: [
        [{ text: `…and ${groupedCount(view.changes.length - shown.length)} more changes`, style: 'italic' }],
      ],
    });
  if (view.derived !== '')
    sections.push({ lines: [[{ text: 'Derived:', style: 'bold' }, { text: ` ${view.derived}` }]] });
  const reached = { usedBy: ownerUsedBy(story), rollsOut: story.rollsOut };
  const reach = reachLines(reached, options.reach);
  if (reach.length > 0) sections.push({ lines: reach });
  const [firstReach] = reachLines(reached, options.reachInGroup);
  const first = shown[0];
  return {
    summary: [
      { text: `${prefix(view.cluster)}${storyHeadline(view)}` },
      ...(by ? [{ text: ' by ' }, { text: by }] : []),
      // The first change, without its bullet: ': spec.replicas: 2 → 5'.
      ...(first ? [{ text: ': ' }, ...changeLine(first, 40).slice(1)] : []),
      ...(view.derived ? [{ text: ` (${view.derived})` }] : []),
      ...(firstReach ? [{ text: ' ' }, ...firstReach] : []),
    ],
    title: storyHeadline(view),
    icon,
    context: [
      ...(by ? [[{ text: 'by ' }, { text: by, style: 'bold' }] satisfies Line] : []),
      ...(view.cluster ? [clusterLine(view.cluster)] : []),
      [{ text: timeRange(view.from, view.to) }],
      ...view.notes.map((note): Line => [{ text: note, style: 'italic' }]),
    ],
    sections,
    note: `${view.counts} · story ${story.id}`,
    inFull: true,
  };
}

/**
 * A story in the terminal (--stories): a header like an event's, the owner's net changes, then one
 * indented line of what was derived with the counts.
 */
export function prettyStoryRenderer(options: PrettyOptions): (story: Story) => string {
  const chalk = new Chalk({ level: options.color ? 1 : 0 });
  const maxValueLength = options.maxValueLength ?? 100;
  return (story) => {
    const view = storyView(story);
    const header = [
      chalk.dim(printedTime(story.from)),
      chalk.magenta.bold('STORY  '),
      chalk.bold(printable(storyHeadline(view))),
      view.cluster ? chalk.dim(`[${printable(view.cluster)}]`) : '',
      view.notes.length > 0 ? chalk.dim(`(${printable(view.notes.join(', '))})`) : '',
    ]
      .filter(Boolean)
      .join(' ');
    const lines = [header];
    for (const change of view.changes) lines.push(`  ${renderChange(change, chalk, maxValueLength)}`);
    const derived = view.derived === '' ? view.counts : `${view.derived} (${view.counts})`;
    lines.push(`  ${chalk.dim(`↳ ${printable(derived)}`)}`);
    for (const line of [...usedByLines(ownerUsedBy(story)), ...rollsOutLines(story.rollsOut)])
      lines.push(`  ${chalk.blue(`↳ ${printable(line)}`)}`);
    return `${lines.join('\n')}\n`;
  };
}
