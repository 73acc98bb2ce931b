// `kubediff diff <type>/<name> [--from T1] [--to T2]` and `kubediff diff [type] [-n ns] --since 1h`: for
// each object, the changes recorded in the window with who made them, then a unified diff of its YAML
// between the two versions (`kubectl diff` style, colored on a terminal). Says whether anything differs:
// the command exits 1 then, 0 when nothing does, 2 on any error (docs/cli.md, "Exit codes").

import { Chalk } from 'chalk';
import { objectYaml } from '../../diff/object-yaml.ts';
import { unifiedDiff } from '../../diff/unified-diff.ts';
import { objectKey } from '../../kube/types.ts';
import { prettyRenderer } from '../../sinks/core/pretty.ts';
import type { EventSummary, HistoryFilter, ObjectRef } from '../../state/timeline-reader.ts';
import { LIMITS } from '../../ui/query.ts';
import { plural } from '../../util/count-text.ts';
import { UsageError } from '../../util/errors.ts';
import { printable } from '../../util/terminal-text.ts';
import { HistorySource, type HistorySourceFlags } from './history-source.ts';
import {
  describeRef,
  HistoryReach,
  ObjectTimeline,
  type RecordedEvent,
  type Version,
  VersionsNotKept,
} from './object-timeline.ts';
import { parseTimePoint, type TimePoint } from './time-point.ts';
import { type CommandIo, IGNORED_PATHS_NOTE, redactionNote, versionText } from './version-notes.ts';

export interface DiffFlags extends HistorySourceFlags {
  from?: string;
  to?: string;
  since?: string;
}

/** The most objects one `diff` over a window shows (the most recently changed); documented in docs/history.md. */
export const MAX_DIFF_OBJECTS = 200;
/** Events read per page while finding the objects changed in a window: the UI's largest page. */
const PAGE = 500;

interface Window {
  from: TimePoint | undefined;
  to: TimePoint | undefined;
}

/** Prints the diff; true when something differs. */
export async function runDiff(target: string | undefined, flags: DiffFlags, io: CommandIo): Promise<boolean> {
  const now = (io.now ?? Date.now)();
  const window = windowOf(flags, now);
  const source = await HistorySource.open(flags, 'diff');
  try {
    const print = sectionPrinter(io);
    if (target?.includes('/')) {
      const timeline = await source.timeline(target);
      let from: Version;
      let to: Version;
      try {
        from = window.from ? timeline.versionAt(window.from) : timeline.oldestVersion();
        to = window.to ? timeline.versionAt(window.to) : timeline.latestVersion();
      } catch (error) {
        // Versions not kept (deleted, too large, a gap): its changes, with why. A point outside the
        // history stays an error (exit 2).
        if (!(error instanceof VersionsNotKept)) throw error;
        const events = eventsWithin(timeline, window);
        return print(describeRef(timeline.ref), timeline, undefined, undefined, events, error.message);
      }
      if (from.event && to.event && from.event.seq > to.event.seq)
        throw new UsageError(`--from (${from.since}) is after --to (${to.since}): swap them.`);
      return print(describeRef(timeline.ref), timeline, from, to, timeline.eventsBetween(from, to));
    }
    if (!window.from) {
      throw new UsageError(
        'diff without type/name compares every object changed in a window: give its start with --since 1h or --from <time>.',
      );
    }
    if (window.from.kind === 'event' || window.to?.kind === 'event')
      throw new UsageError(
        'an event id names a version of one object: use diff type/name with it, or times.',
      );
    return await diffWindow(source, target, window.from.ms, window.to?.ms ?? now, print, io);
  } finally {
    await source.close();
  }
}

function windowOf(flags: DiffFlags, now: number): Window {
  if (flags.since !== undefined && flags.from !== undefined)
    throw new UsageError('--since and --from both say where the window starts: give one.');
  const fromText = flags.from ?? flags.since;
  const fromFlag = flags.from !== undefined ? '--from' : '--since';
  return {
    from: fromText !== undefined ? parseTimePoint(fromFlag, fromText, now) : undefined,
    to: flags.to !== undefined ? parseTimePoint('--to', flags.to, now) : undefined,
  };
}

/** Every object changed in [from, to], the most recently changed first found, each diffed. */
async function diffWindow(
  source: HistorySource,
  typed: string | undefined,
  fromMs: number,
  toMs: number,
  print: SectionPrinter,
  io: CommandIo,
): Promise<boolean> {
  if (fromMs > toMs) throw new UsageError('the window starts after it ends: swap --from and --to.');
  const filter: HistoryFilter = {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs + 1).toISOString(),
    ...(typed !== undefined ? { resources: [(await source.resolveType(typed)).resource] } : {}),
    ...(source.namespace !== undefined ? { namespaces: [source.namespace] } : {}),
    ...(source.cluster !== undefined ? { clusters: [source.cluster] } : {}),
  };
  const { objects, more } = await changedObjects(source, filter);
  if (more) {
    io.stderr.write(
      `kubediff: more than ${MAX_DIFF_OBJECTS} objects changed in the window: the ${MAX_DIFF_OBJECTS} changed most recently are shown; narrow it with a type, -n or --since.\n`,
    );
  }
  let differs = false;
  let noted = false;
  const several = new Set([...objects.values()].map((ref) => ref.cluster)).size > 1;
  const sorted = [...objects.values()].sort((a, b) => compareRefs(a, b));
  const window = { from: { kind: 'time', ms: fromMs }, to: { kind: 'time', ms: toMs } } as const;
  for (const ref of sorted) {
    const timeline = await ObjectTimeline.read(source.reader, ref);
    let from: Version | undefined;
    let to: Version | undefined;
    let reach: string | undefined;
    try {
      // A window that opens before the history's start: from the oldest version the history keeps.
      const beforeStart = timeline.historyStart !== undefined && fromMs < Date.parse(timeline.historyStart);
      if (beforeStart && !noted) {
        io.stderr.write(
          `kubediff: the window opens before the history's start (${timeline.historyStart}): objects are compared from the oldest version it keeps.\n`,
        );
        noted = true;
      }
      const created = timeline.events[0]?.type === 'ADDED';
      from = !beforeStart
        ? timeline.versionAt(window.from)
        : created
          ? { object: undefined, since: timeline.historyStart! }
          : timeline.oldestVersion();
      to = timeline.versionAt(window.to);
    } catch (error) {
      if (!(error instanceof HistoryReach)) throw error;
      reach = error.message;
    }
    const events = eventsWithin(timeline, window);
    // The cluster is named when the window holds several (PostgreSQL), or one was asked for.
    const name = describeRef(several ? ref : { ...ref, cluster: source.cluster });
    if (from && to) differs = print(name, timeline, from, to, timeline.eventsBetween(from, to)) || differs;
    else differs = print(name, timeline, undefined, undefined, events, reach) || differs;
  }
  return differs;
}

/** The events in the window, bounds included: each a time, or an event (the window starts after it). */
function eventsWithin(timeline: ObjectTimeline, window: Window): RecordedEvent[] {
  const seqOf = (id: string) => timeline.events.find((event) => event.id === id)?.seq;
  const after = (point: TimePoint | undefined, event: RecordedEvent) => {
    if (point === undefined) return true;
    if (point.kind === 'time') return Date.parse(event.time) >= point.ms;
    return event.seq > (seqOf(point.id) ?? Number.NEGATIVE_INFINITY);
  };
  const upTo = (point: TimePoint | undefined, event: RecordedEvent) => {
    if (point === undefined) return true;
    if (point.kind === 'time') return Date.parse(event.time) <= point.ms;
    return event.seq <= (seqOf(point.id) ?? Number.POSITIVE_INFINITY);
  };
  return timeline.events.filter((event) => after(window.from, event) && upTo(window.to, event));
}

/**
 * The objects changed in the window, the most recently changed first, at most MAX_DIFF_OBJECTS. The
 * timeline's marks first: the time index finds a window's events without reading the others, and it
 * answers with each of them when they are at most the UI's 2,000; a busier window is read page by page,
 * newest first (each page a walk back through the history until it is full).
 */
async function changedObjects(
  source: HistorySource,
  filter: HistoryFilter,
): Promise<{ objects: Map<string, ObjectRef>; more: boolean }> {
  const objects = new Map<string, ObjectRef>();
  const add = (event: EventSummary) => {
    const ref: ObjectRef = {
      resource: event.resource,
      name: event.name,
      ...(event.namespace !== undefined ? { namespace: event.namespace } : {}),
      ...(event.cluster !== undefined ? { cluster: event.cluster } : {}),
    };
    const key = JSON.stringify([ref.cluster, ref.resource, ref.namespace, ref.name]);
    if (objects.has(key)) return true;
    if (objects.size >= MAX_DIFF_OBJECTS) return false;
    objects.set(key, ref);
    return true;
  };
  const timeline = await source.reader.timeline(filter, {
    from: filter.from!,
    to: filter.to!,
    rows: 'namespace',
    buckets: 1,
    maxMarks: LIMITS.marks,
    maxRows: 1,
  });
  if (timeline.marks) {
    for (const event of [...timeline.marks].reverse()) {
      if (!add(event)) return { objects, more: true };
    }
    return { objects, more: false };
  }
  let before: number | undefined;
  do {
    const page = await source.reader.events(filter, { limit: PAGE, before });
    for (const event of page.events) {
      if (!add(event)) return { objects, more: true };
    }
    before = page.next;
  } while (before !== undefined);
  return { objects, more: false };
}

function compareRefs(a: ObjectRef, b: ObjectRef): number {
  const key = (ref: ObjectRef) =>
    [ref.cluster ?? '', ref.resource, ref.namespace ?? '', ref.name].join('\u0000');
  return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
}

/** Prints one object's section; true when its two versions differ (or, unknown, when it changed). */
type SectionPrinter = (
  name: string,
  timeline: ObjectTimeline,
  from: Version | undefined,
  to: Version | undefined,
  events: readonly RecordedEvent[],
  reach?: string,
) => boolean;

function sectionPrinter(io: CommandIo): SectionPrinter {
  const color = io.isTTY && !process.env.NO_COLOR;
  const chalk = new Chalk({ level: color ? 1 : 0 });
  const renderEvent = prettyRenderer({ color });
  const write = (line: string) => io.stdout.write(`${line}\n`);
  let first = true;
  return (name, timeline, from, to, events, reach) => {
    if (first) write(`# ${IGNORED_PATHS_NOTE}`);
    first = false;
    const count = plural(events.length, 'change');
    const span = from && to ? ` from ${from.since} to ${to.since}` : '';
    write(chalk.bold(`# ${printable(name)}: ${count}${span}`));
    for (const event of events) io.stdout.write(renderEvent(event));
    if (!from || !to) {
      write(`# ${printable(reach ?? 'its versions are not known')} (its changes are listed above).`);
      return events.length > 0;
    }
    const redaction = redactionNote(timeline.ref, [from.object, to.object]);
    if (redaction) write(`# ${redaction}`);
    const label = `${timeline.ref.resource}/${objectKey(timeline.ref)}`;
    const lines = unifiedDiff(
      { label, header: versionText(from), text: from.object ? objectYaml(from.object) : undefined },
      { label, header: versionText(to), text: to.object ? objectYaml(to.object) : undefined },
      { color, terminal: io.isTTY },
    );
    for (const line of lines) write(line);
    return lines.length > 0;
  };
}
