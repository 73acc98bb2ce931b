// The versions of an object that its history can rebuild: from the object as last recorded, each
// UPDATED's changes undone in turn, back to its ADDED (or as far as the history reaches). A deleted
// object's last state is not kept, so only the changes of its history are shown, not whole versions.
import { undoChanges } from '../diff/undo.ts';
import type { JsonObject } from '../kube/types.ts';
import type { ObjectHistory } from '../state/timeline-reader.ts';

export interface RebuiltVersions {
  /** The seqs of the events whose version (the object right after them) can be rebuilt. */
  rebuildable: number[];
  /** The versions asked for, by seq; only those are kept (one object at a time is in memory otherwise). */
  versions: Map<number, JsonObject>;
}

export function rebuildVersions(history: ObjectHistory, wanted: ReadonlySet<number>): RebuiltVersions {
  const result: RebuiltVersions = { rebuildable: [], versions: new Map() };
  const { events, current } = history;
  const last = events.at(-1);
  if (!current || !last || last.type === 'DELETED') return result;
  const currentUid = (current.metadata as JsonObject | undefined)?.uid;
  if (currentUid !== undefined && currentUid !== last.object.uid) return result;
  let state: JsonObject | undefined = current;
  for (let index = events.length - 1; index >= 0 && state; index--) {
    const event = events[index]!;
    if (event.object.uid !== last.object.uid) break;
    result.rebuildable.push(event.seq);
    if (wanted.has(event.seq)) result.versions.set(event.seq, state);
    if (event.type !== 'UPDATED') break;
    state = undoChanges(state, event.changes ?? []);
  }
  result.rebuildable.reverse();
  return result;
}
