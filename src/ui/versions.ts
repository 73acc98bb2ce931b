// The versions of an object that its history can rebuild: from the object as last recorded, each
// UPDATED's changes undone in turn, back to its ADDED (or as far as the history reaches). A deleted
// object's last state is not kept, so only the changes of its history are shown, not whole versions.
import { undoChanges } from '../diff/undo.ts';
import type { JsonObject } from '../kube/types.ts';
import type { ObjectHistory } from '../state/history-reader.ts';

/** The object after each event, by the event's seq, for the events whose version can be rebuilt. */
export function rebuildVersions(history: ObjectHistory): Map<number, JsonObject> {
  const versions = new Map<number, JsonObject>();
  const { events, current } = history;
  const last = events.at(-1);
  if (!current || !last || last.type === 'DELETED') return versions;
  const currentUid = (current.metadata as JsonObject | undefined)?.uid;
  if (currentUid !== undefined && currentUid !== last.object.uid) return versions;
  let state: JsonObject | undefined = current;
  for (let index = events.length - 1; index >= 0 && state; index--) {
    const event = events[index]!;
    if (event.object.uid !== last.object.uid) break;
    versions.set(event.seq, state);
    if (event.type !== 'UPDATED') break;
    state = undoChanges(state, event.changes ?? []);
  }
  return versions;
}
