// `kubediff blame <type>/<name> [--at T] [-o text|json]`: the object's YAML at T, each line with when it
// last changed and who changed it (src/cli/object-history/blame-lines.ts), from the history; the lines
// older than the history from the live object's managedFields (who owns them now), when the cluster can
// be asked and the line has not changed since T.
import { Chalk } from 'chalk';
import { FieldOwnership } from '../../diff/field-owners.ts';
import { pathText, resolveLinePath, yamlLines } from '../../diff/object-yaml.ts';
import { creatorOf } from '../../events/attribution.ts';
import type { ManagedFieldsEntry } from '../../kube/managed-fields.ts';
import type { JsonObject } from '../../kube/types.ts';
import { andList, plural } from '../../util/count-text.ts';
import { errorMessage } from '../../util/errors.ts';
import { printable } from '../../util/terminal-text.ts';
import { printedTime } from '../../util/timestamp.ts';
import { type BlamedLine, blameLines, type LineOrigin } from './blame-lines.ts';
import { HistorySource, type HistorySourceFlags } from './history-source.ts';
import { type ClusterChoice, liveManagedFields, ownersOf } from './live-owners.ts';
import { describeRef, OBJECT_EVENTS_LIMIT, type ObjectTimeline, type Version } from './object-timeline.ts';
import { describePoint, parseTimePoint, type TimePoint } from './time-point.ts';
import { absence, type CommandIo, versionNotes, versionText } from './version-notes.ts';

export interface BlameFlags extends HistorySourceFlags {
  at?: string;
  output?: 'text' | 'json';
  kubeconfig?: string;
  context?: string;
  /** Do not ask the cluster for the managedFields of the lines older than the history. */
  offline?: boolean;
}

/**
 * The most bytes of versions blame holds at once: it reads as many of the object's versions as fit
 * (at most the UI's 1,000), each the size of the object; lines older than those are "older than the
 * versions read". Documented in docs/history.md.
 */
export const BLAME_MAX_BYTES = 64 * 1024 * 1024;

export async function runBlame(target: string, flags: BlameFlags, io: CommandIo): Promise<void> {
  const now = (io.now ?? Date.now)();
  const point: TimePoint =
    flags.at !== undefined ? parseTimePoint('--at', flags.at, now) : { kind: 'time', ms: now };
  const source = await HistorySource.open(flags, 'blame');
  try {
    const timeline = await source.timeline(target);
    const version = timeline.versionAt(point);
    if (!version.object) throw absence(timeline.ref, point, version);
    const size = Math.max(1, JSON.stringify(version.object).length * 2);
    const max = Math.max(2, Math.min(OBJECT_EVENTS_LIMIT, Math.floor(BLAME_MAX_BYTES / size)));
    const { versions, complete } = timeline.versionsUpTo(version, max);
    const lines = blameLines(versions, complete);
    const notes = [
      `${describeRef(timeline.ref)} at ${describePoint(point)}: ${versionText(version)}.`,
      ...versionNotes(timeline.ref, [version.object]),
    ];
    const reach = versions.at(-1)?.since ?? version.since;
    if (lines.some((line) => line.origin === undefined)) {
      notes.push(...(await attributeOlderLines(lines, timeline, reach, flags)));
    }
    if (flags.output === 'json') {
      for (const note of notes) io.stderr.write(`kubediff: ${printable(note)}\n`);
      lines.forEach((line, index) => {
        io.stdout.write(
          `${JSON.stringify({ line: index + 1, text: line.text, path: pathText(line.path), ...line.origin })}\n`,
        );
      });
      return;
    }
    io.stdout.write(renderBlame(lines, notes, io));
  } finally {
    await source.close();
  }
}

/**
 * The lines older than the versions read: owned, per the live object's managedFields, by whoever owns
 * them now, when they have not changed since; else unknown, older than `reach`. Returns what to say.
 */
async function attributeOlderLines(
  lines: BlamedLine[],
  timeline: ObjectTimeline,
  reach: string,
  flags: BlameFlags,
): Promise<string[]> {
  const older = lines.filter((line) => line.origin === undefined);
  const unknown: LineOrigin = { source: 'unknown', time: reach, atOrBefore: true };
  const current = timeline.latestVersion();
  const notes = [
    `${plural(older.length, 'line')} ${older.length === 1 ? 'is' : 'are'} older than the history read (it reaches back to ${reach}).`,
  ];
  const live = flags.offline ? undefined : await liveOwnership(timeline, current, flags, notes);
  const object = current.object;
  const unchanged = object ? new Map(yamlLines(object).map((line) => [line.key, line.text])) : new Map();
  for (const line of older) {
    if (!live || !object || unchanged.get(line.key) !== line.text) {
      line.origin = unknown;
      continue;
    }
    // The key of a map or list is its creator's; a field, its owners'.
    const value = resolveLinePath(object, line.path)?.value;
    const keyLine =
      line.part === undefined && typeof value === 'object' && value !== null && Object.keys(value).length > 0;
    const owners = keyLine ? [] : live.owners(line.path);
    if (owners.length === 0) {
      line.origin = live.creator
        ? {
            source: 'managedFields',
            time: [reach, ...(live.creator.time ? [live.creator.time] : [])].sort()[0]!,
            atOrBefore: true,
            manager: live.creator.manager,
            creator: true,
          }
        : unknown;
      continue;
    }
    const times = owners.flatMap((owner) => (owner.time ? [owner.time] : []));
    line.origin = {
      source: 'managedFields',
      time: [reach, ...times].sort()[0]!,
      atOrBefore: true,
      manager: [...new Set(owners.map((owner) => owner.manager))].join(', '),
    };
  }
  return notes;
}

interface LiveOwnership {
  /** The managers that own a line path now. */
  owners(path: readonly string[]): ManagedFieldsEntry[];
  /** Who created the object, when that is known (creatorOf); undefined when it is not. */
  creator: { manager: string; time?: string | undefined } | undefined;
}

/** Who owns what now, from the live object's managedFields; undefined (with a note) when unknown. */
async function liveOwnership(
  timeline: ObjectTimeline,
  current: Version,
  flags: BlameFlags,
  notes: string[],
): Promise<LiveOwnership | undefined> {
  const last = timeline.events.at(-1);
  const object = current.object;
  if (!last || !object) return undefined;
  const choice: ClusterChoice = {
    kubeconfig: flags.kubeconfig,
    context: flags.context,
    cluster: timeline.cluster,
  };
  try {
    const { entries, metadata, context } = await liveManagedFields(last.object, choice);
    notes.push(
      `Their owners are the field managers that own them now (managedFields of the object in context "${context}"), with "≤ the time" of their last write; keys of maps and lists, and lines no manager owns, are the creator's.`,
    );
    const ownership = new FieldOwnership(entries, object as JsonObject);
    const creator = creatorFrom(timeline, last.object.uid, entries, metadata, notes);
    return { owners: (path) => ownersOf(ownership, object, path), creator };
  } catch (error) {
    notes.push(
      `Who wrote them is unknown: the cluster's managedFields could not be read (${errorMessage(error).replace(/\.$/, '')}).`,
    );
    return undefined;
  }
}

/**
 * Who created the object: the manager of its ADDED event when the history holds it (the watch saw it
 * created, with the one entry it had then), else the one managedFields entry stamped at its
 * creationTimestamp (events/attribution.ts, as an ADDED seen late is attributed), else the one oldest
 * entry. Entries carry the second only, and the API server orders the entries of one second by name:
 * when several share the second that decides, the creator is not known (a note says so), never the
 * first by name.
 */
function creatorFrom(
  timeline: ObjectTimeline,
  uid: string,
  entries: readonly ManagedFieldsEntry[],
  metadata: JsonObject,
  notes: string[],
): LiveOwnership['creator'] {
  const added = timeline.events.findLast((event) => event.type === 'ADDED' && event.object.uid === uid);
  const recorded = added?.by?.managers?.[0];
  if (recorded) return { manager: recorded.manager, time: recorded.time ?? added.time };
  const creator = creatorOf(entries, { metadata });
  if (creator) return { manager: creator.manager, time: creator.time };
  const main = entries.filter((entry) => entry.subresource === undefined);
  const first = main.map((entry) => entry.time ?? '').sort()[0];
  const oldest = [
    ...new Set(main.filter((entry) => (entry.time ?? '') === first).map((entry) => entry.manager)),
  ];
  if (oldest.length === 1) return { manager: oldest[0]!, time: first || undefined };
  if (oldest.length > 1) {
    notes.push(
      `Who created it is unknown: ${andList(oldest)} wrote in the same second${first ? ` (${first})` : ''}, the first the managedFields tell, and they tell the second only.`,
    );
  }
  return undefined;
}

const WHO_WIDTH = 48;

function renderBlame(lines: readonly BlamedLine[], notes: readonly string[], io: CommandIo): string {
  const chalk = new Chalk({ level: io.isTTY && !process.env.NO_COLOR ? 1 : 0 });
  const cells = lines.map((line) => ({
    when: whenText(line.origin),
    who: whoText(line.origin),
    text: line.text,
  }));
  const whoWidth = Math.min(WHO_WIDTH, Math.max(3, ...cells.map((cell) => cell.who.length)));
  const whenWidth = Math.max(...cells.map((cell) => cell.when.length));
  const out = notes.map((note) => `# ${printable(note)}`);
  for (const cell of cells) {
    const who =
      cell.who.length > whoWidth ? `${cell.who.slice(0, whoWidth - 1)}…` : cell.who.padEnd(whoWidth);
    const text = io.isTTY ? printable(cell.text) : cell.text;
    out.push(`${chalk.dim(cell.when.padEnd(whenWidth))}  ${chalk.magenta(printable(who))}  ${text}`);
  }
  return `${out.join('\n')}\n`;
}

/** `2026-11-27 10:31:07Z`, or `≤2026-11-27 10:31:07Z` for a bound. */
function whenText(origin: LineOrigin | undefined): string {
  if (!origin?.time) return '?';
  const time = printedTime(origin.time, true);
  return origin.atOrBefore ? `≤${time}` : ` ${time}`;
}

/** The user when known, else the field manager; managedFields owners marked as such. */
function whoText(origin: LineOrigin | undefined): string {
  if (!origin || origin.source === 'unknown') return '?';
  const who = origin.user ?? origin.manager ?? '?';
  if (origin.source !== 'managedFields') return who;
  return origin.creator ? `${who} (creator)` : `${who} (now)`;
}
