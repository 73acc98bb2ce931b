// New events that arrive while the page is open, merged into the timeline in view: each event once (by
// seq), the end of a live window following them, the rows counted, and a mark added for each while the
// timeline shows single marks. Beyond the window, or with the marks at the server's limit, the timeline
// must be asked for again.
import type { EventSummary, Timeline } from '../../state/timeline-reader.ts';
import { rowKeyOf } from './timeline.ts';
import type { View } from './view.ts';

/** The server's limit of single marks (LIMITS.marks in src/ui/query.ts): beyond, it draws density. */
export const MAX_MARKS = 2_000;

export interface LiveMerge {
  /** The newest seq merged: later batches skip what is at or below it. */
  seen: number;
  /** The events in the window, in the order they came (each goes on top of the table). */
  shown: EventSummary[];
  /** The window moved or the marks are full: ask the server for the timeline again. */
  refetch: boolean;
}

/** Merges `events` into `timeline` (its total, rows and marks) and `view` (a live window's end), in place. */
export function mergeLiveEvents(
  timeline: Timeline,
  view: View,
  seen: number,
  events: readonly EventSummary[],
): LiveMerge {
  const merged: LiveMerge = { seen, shown: [], refetch: false };
  for (const event of events) {
    if (event.seq <= merged.seen) continue;
    merged.seen = event.seq;
    const at = Date.parse(event.time);
    if (view.live && at >= view.to) {
      view.to = at + 60_000;
      merged.refetch = true;
    }
    if (at < view.from || at >= view.to) continue;
    timeline.total += 1;
    merged.shown.push(event);
    const key = rowKeyOf(event, view.rows);
    const row = timeline.rows.find((candidate) => candidate.key === key);
    if (row) row.count += 1;
    else
      timeline.rows.push({
        key,
        label: view.rows === 'kind' ? `${event.kind} (${event.resource})` : key,
        count: 1,
      });
    if (timeline.marks && timeline.marks.length < MAX_MARKS) timeline.marks.push(event);
    else merged.refetch = true;
  }
  return merged;
}
