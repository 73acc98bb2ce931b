// What the history's search (TimelineFilter.search, the UI's search box) looks in, stored beside each
// event (both stores' `search` column) so that a search reads one short text per event instead of its
// whole JSON: the texts people type. That is every value of the event (its object's kind, namespace and
// name, who made the change, the paths of its changes, their old and new values with the keys inside
// them, an OUTCOME's verdict and evidence), one per line, but not what only identifies a record (uids,
// event ids, resourceVersions, audit ids, timestamps): a fragment of hex would match every event by its
// uid. Events recorded before the column existed have none, and are searched in their JSON.
import type { KubediffEvent } from '../events/event.ts';

/** Keys whose values (and everything under them) identify a record or a moment: never searched. */
const IDENTITY_KEYS: ReadonlySet<string> = new Set([
  'uid',
  'id',
  'resourceVersion',
  'auditID',
  'reviewUID',
  'follows',
  'time',
  'readySince',
]);

/** Keys under which objects' keys are searched too (a ConfigMap's key, a label's name): a change's values. */
const VALUE_KEYS: ReadonlySet<string> = new Set(['from', 'to']);

export function searchTextOf(event: KubediffEvent): string {
  const lines: string[] = [];
  collect(event, false, lines);
  return lines.join('\n');
}

function collect(value: unknown, withKeys: boolean, lines: string[]): void {
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
    for (const item of value) collect(item, withKeys, lines);
    return;
  }
  if (typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (IDENTITY_KEYS.has(key)) continue;
    if (withKeys) lines.push(key);
    collect(inner, withKeys || VALUE_KEYS.has(key), lines);
  }
}
