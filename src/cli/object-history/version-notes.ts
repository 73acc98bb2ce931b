// What `show`, `diff` and `blame` say about the version they print: which recorded version it is and who
// made it, that values are redacted where they are, and what the history never holds.

import type { JsonObject } from '../../kube/types.ts';
import { byText } from '../../sinks/who.ts';
import type { ObjectRef } from '../../state/timeline-reader.ts';
import { describeRef, HistoryReach, type Version } from './object-timeline.ts';
import { describePoint, type TimePoint } from './time-point.ts';

/** Where a command writes, and whether it is a terminal. */
export interface CommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  isTTY: boolean;
  now?: () => number;
}

/** `the version recorded at … (UPDATED <id>, by alice (kubectl-edit))`, or the state before the events read. */
export function versionText(version: Version): string {
  const { event } = version;
  if (!event) {
    return version.object
      ? `the state before the oldest change kept, unchanged since ${version.since}`
      : 'not created yet';
  }
  const by = byText(event.by);
  const made = `${event.type} ${event.id}${by ? `, by ${by}` : ''}`;
  if (!version.object) return `deleted at ${event.time} (${made})`;
  return `the version recorded at ${event.time} (${made})`;
}

/** A HistoryReach for a version that is an absence: deleted then, or not created yet. */
export function absence(ref: ObjectRef, point: TimePoint, version: Version): HistoryReach {
  const when = describePoint(point);
  if (version.event?.type === 'DELETED') {
    return new HistoryReach(
      `${describeRef(ref)} did not exist at ${when}: it was deleted at ${version.event.time}.`,
    );
  }
  return new HistoryReach(`${describeRef(ref)} did not exist at ${when}: it was created later.`);
}

/** Whether the object holds a redaction marker (a Secret's values, a `redact:` rule's paths). */
export function holdsRedacted(object: JsonObject | undefined): boolean {
  return object !== undefined && JSON.stringify(object).includes('"<redacted ');
}

/** That values are redacted, when the object is a Secret or holds a redaction marker. */
export function redactionNote(
  ref: ObjectRef,
  objects: readonly (JsonObject | undefined)[],
): string | undefined {
  if (ref.resource !== 'secrets' && !objects.some(holdsRedacted)) return undefined;
  return 'Secret values (and the paths of redact: rules) are redacted: kubediff records a short hash of each value, never the value.';
}

/** What no rebuilt version holds. */
export const IGNORED_PATHS_NOTE =
  'Rebuilt from the history: the paths the watch ignored (by default /status, managedFields, resourceVersion, generation) are not recorded.';

/** The notes that go with a printed version: what is redacted, what is never recorded. */
export function versionNotes(ref: ObjectRef, objects: readonly (JsonObject | undefined)[]): string[] {
  const redaction = redactionNote(ref, objects);
  return [...(redaction ? [redaction] : []), IGNORED_PATHS_NOTE];
}
