// What the history's search (TimelineFilter.search, the UI's search box) looks in, stored beside each
// event (both stores' `search` column) so that a search reads one short text per event instead of its
// whole JSON: the texts people type. That is every value of the event (its object's kind, namespace and
// name, who made the change, the paths of its changes, their old and new values with the keys inside
// them, an OUTCOME's verdict and evidence), one per line, but not the event's own fields that only
// identify a record (uids, event ids, resourceVersions, audit ids, timestamps): a fragment of hex would
// match every event by its uid. Under a change's values every key and value is searched, whatever its
// name. Events recorded before the column existed have none, and are searched in their JSON.
import type { KubediffEvent } from '../events/event.ts';

/**
 * The event's own fields that identify a record or a moment, never searched: dotted paths from the event,
 * array positions left out (`by.managers.time` is every manager's). Only the event's own: the same keys
 * inside a change's values (a ConfigMap key `id`, a custom resource's `spec.uid`) are what people type.
 */
const IDENTITY_PATHS: ReadonlySet<string> = new Set([
  'id',
  'time',
  'object.uid',
  'object.resourceVersion',
  'owner.uid',
  'by.managers.time',
  'by.user.uid',
  'by.impersonatedUser.uid',
  'by.auditID',
  'by.reviewUID',
  'usedBy.workloads.object.uid',
  'rollsOut.id',
  'rollsOut.time',
  'follows',
  'evidence.pods.readySince',
  'evidence.supersededBy',
]);

/** A change's values: everything under them is searched, the keys of their objects too (a label's name). */
const VALUE_PATHS: ReadonlySet<string> = new Set(['changes.from', 'changes.to']);

export function searchTextOf(event: KubediffEvent): string {
  const lines: string[] = [];
  collect(event, '', lines);
  return lines.join('\n');
}

/** `path`: where `value` is in the event (IDENTITY_PATHS' form), or undefined under a change's value. */
function collect(value: unknown, path: string | undefined, lines: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string') {
    if (value !== '') lines.push(value);
    return;
  }
  if (typeof value === 'number' || typeof value === 'boolean') {
    lines.push(String(value));
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collect(item, path, lines);
    return;
  }
  if (typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (path === undefined) {
      lines.push(key);
      collect(inner, undefined, lines);
      continue;
    }
    const at = path === '' ? key : `${path}.${key}`;
    if (IDENTITY_PATHS.has(at)) continue;
    collect(inner, VALUE_PATHS.has(at) ? undefined : at, lines);
  }
}
