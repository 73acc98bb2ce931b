// The versions of an object that its history can rebuild: from the object as last recorded, each
// UPDATED's changes undone in turn, back to its ADDED (or as far as the history reaches). A deleted
// object's last state is not kept, so only the changes of its history are shown, not whole versions.
//
// Linear in the history: one copy of the object is undone in place, step by step, and a version is
// written out (as JSON) only when it was asked for. This runs in the UI's worker thread
// (object-view-worker.ts), never on the thread that watches.
import { undoChangesInPlace } from '../diff/undo.ts';
import type { ChangeEvent } from '../events/event.ts';
import type { JsonObject } from '../kube/types.ts';

export interface RebuiltVersions {
  /** The seqs of the events whose version (the object right after them) can be rebuilt. */
  rebuildable: number[];
  /** The versions asked for, by seq, as JSON. */
  versions: Map<number, string>;
}

/**
 * `events` oldest first; `current` the object as last recorded, which this changes (pass a copy of
 * your own, e.g. freshly parsed).
 */
export function rebuildVersions(
  events: readonly (ChangeEvent & { seq: number })[],
  current: JsonObject | undefined,
  wanted: ReadonlySet<number>,
): RebuiltVersions {
  const result: RebuiltVersions = { rebuildable: [], versions: new Map() };
  const last = events.at(-1);
  if (!current || !last || last.type === 'DELETED') return result;
  const currentUid = (current.metadata as JsonObject | undefined)?.uid;
  if (currentUid !== undefined && currentUid !== last.object.uid) return result;
  let state: JsonObject | undefined = current;
  for (let index = events.length - 1; index >= 0 && state; index--) {
    const event = events[index]!;
    if (event.object.uid !== last.object.uid) break;
    result.rebuildable.push(event.seq);
    if (wanted.has(event.seq)) result.versions.set(event.seq, JSON.stringify(state));
    if (event.type !== 'UPDATED') break;
    state = undoChangesInPlace(state, event.changes ?? []);
  }
  result.rebuildable.reverse();
  return result;
}
