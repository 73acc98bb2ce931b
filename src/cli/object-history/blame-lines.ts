// Which event last changed each line of a version, the way `git blame` walks commits: from the version
// asked for back through the older ones, a line stays with the older version while that version has the
// same line under the same key (src/diff/object-yaml.ts: list items by merge key), and is
// given to the event in between as soon as it does not. The lines of a multi-line string are followed
// one by one through a line diff of the string, so an edit of one line of a ConfigMap's file blames that
// line only. Who: the user the audit webhook named, else the field manager of the change that covers
// the line, else the event's first field manager.
import { diffArrays } from 'diff';
import { listItemKey } from '../../diff/list-keys.ts';
import { resolveLinePath, type YamlLine, yamlLines } from '../../diff/object-yaml.ts';
import { parsePointer } from '../../diff/pointer.ts';
import type { Change } from '../../diff/types.ts';
import type { JsonObject, JsonValue } from '../../kube/types.ts';
import { isJsonObject } from '../../kube/types.ts';
import type { RecordedEvent, Version } from './object-timeline.ts';

/** Who made a line what it is, and when. */
export interface LineOrigin {
  /** `history`: an event kubediff recorded; `managedFields`: the owner the API server names now; `unknown`. */
  source: 'history' | 'managedFields' | 'unknown';
  /** When the line last changed; with `atOrBefore`, a bound: it changed then or earlier. */
  time?: string;
  atOrBefore?: true;
  user?: string;
  manager?: string;
  /** The id of the event that changed it. */
  event?: string;
  /** managedFields: the line is its creator's (a map's or list's key, or a field no manager owns). */
  creator?: true;
}

export interface BlamedLine extends YamlLine {
  /** undefined: older than every version read (for the caller to attribute from managedFields). */
  origin: LineOrigin | undefined;
}

/** The `- ` markers that open list items at the start of a line. */
const ITEM_MARKERS = /^( *)((?:- )+)/;

interface Pending {
  /** The line's key in the version being compared (a multi-line string's line moves within it). */
  key: string;
  base: string;
  part: number | undefined;
}

/**
 * Blames the lines of `versions[0]` (newest first; each made by its `event`, the last one possibly the
 * state before the oldest event read). `complete`: the oldest version is the object's creation, so the
 * lines still unattributed at the end are the creation's.
 */
export function blameLines(versions: readonly Version[], complete: boolean): BlamedLine[] {
  const newest = versions[0]?.object;
  if (!newest) return [];
  const lines: BlamedLine[] = yamlLines(newest).map((line) => ({ ...line, origin: undefined }));
  const pending = new Map<number, Pending>();
  lines.forEach((line, index) => {
    pending.set(index, { key: line.key, base: baseKey(line), part: line.part });
  });
  let newer = indexLines(lines);
  for (let step = 0; step + 1 < versions.length && pending.size > 0; step++) {
    const after = versions[step]!;
    const older = versions[step + 1]!.object;
    // A step whose changes reach none of the lines still open leaves them all as they are: the older
    // version need not be rendered (most steps, once the lines that change often are attributed).
    const reached = reachedPaths(after, older);
    if (reached && !someLineReached(lines, pending, reached, after.object!, older!)) continue;
    const before = older ? indexLines(yamlLines(older)) : indexLines([]);
    const moved = new Map<string, Map<number, number>>();
    for (const [index, line] of pending) {
      const text = newer.text.get(line.key);
      let stays: string | undefined;
      if (line.part === undefined) {
        if (text !== undefined && before.text.get(line.key) === text) stays = line.key;
      } else {
        let mapping = moved.get(line.base);
        if (!mapping) {
          mapping = partMapping(before.parts.get(line.base) ?? [], newer.parts.get(line.base) ?? []);
          moved.set(line.base, mapping);
        }
        const part = mapping.get(line.part);
        if (part !== undefined) {
          stays = `${line.base}#${part}`;
          line.part = part;
        }
      }
      if (stays !== undefined) {
        line.key = stays;
        continue;
      }
      pending.delete(index);
      lines[index]!.origin = originOf(after.event, lines[index]!, after.object, older);
    }
    newer = before;
  }
  const oldest = versions.at(-1);
  if (complete && oldest?.event) {
    for (const index of pending.keys()) {
      lines[index]!.origin = originOf(oldest.event, lines[index]!, oldest.object, undefined);
    }
  }
  return lines;
}

/**
 * The line paths an event's changes can have altered: each change's path, cut at its first list item
 * known by position only (inserting there shifts the items after it). Undefined when unknown (no event,
 * or a change whose path does not resolve): then every line is compared.
 */
function reachedPaths(after: Version, older: JsonObject | undefined): string[][] | undefined {
  const changes = after.event?.changes;
  if (!changes || !older || !after.object) return undefined;
  const reached: string[][] = [];
  for (const change of changes) {
    const path = keyedPath(change.op === 'remove' ? older : after.object, change.path);
    if (!path) return undefined;
    const positional = path.findIndex((segment) => segment.startsWith('[#'));
    reached.push(positional < 0 ? path : path.slice(0, positional));
  }
  return reached;
}

/**
 * Whether a change reaches an open line: at or above its path (the line is in the subtree changed), or
 * below it when the line's own text changes with it (a map emptied to `{}`, a list to `[]`).
 */
function someLineReached(
  lines: readonly YamlLine[],
  pending: ReadonlyMap<number, Pending>,
  reached: readonly string[][],
  after: JsonObject,
  older: JsonObject,
): boolean {
  for (const index of pending.keys()) {
    const path = lines[index]!.path;
    for (const changed of reached) {
      const shared = Math.min(changed.length, path.length);
      let same = 0;
      while (same < shared && changed[same] === path[same]) same++;
      if (same < shared) continue;
      if (changed.length <= path.length) return true;
      if (shapeAt(after, path) !== shapeAt(older, path)) return true;
    }
  }
  return false;
}

/** What a key line shows of its value: `{}`, `[]`, a map, a list, or the scalar itself. */
function shapeAt(object: JsonObject, path: readonly string[]): string {
  const value = resolveLinePath(object, path)?.value;
  if (Array.isArray(value)) return value.length === 0 ? '[]' : 'list';
  if (isJsonObject(value)) return Object.keys(value).length === 0 ? '{}' : 'map';
  return JSON.stringify(value ?? null);
}

/**
 * A version's lines by key (their text as compared: a list item's `- ` counts as indentation, so that
 * the item's first line stays the same line when a field sorted before it is added), and its multi-line
 * strings' lines in order.
 */
function indexLines(lines: readonly YamlLine[]) {
  const text = new Map<string, string>();
  const parts = new Map<string, string[]>();
  for (const line of lines) {
    text.set(
      line.key,
      line.text.replace(
        ITEM_MARKERS,
        (_, spaces: string, dashes: string) => spaces + ' '.repeat(dashes.length),
      ),
    );
    if (line.part !== undefined) {
      const base = baseKey(line);
      const list = parts.get(base) ?? [];
      list[line.part] = line.text;
      parts.set(base, list);
    }
  }
  return { text, parts };
}

function baseKey(line: YamlLine): string {
  return line.part === undefined ? line.key : line.key.slice(0, line.key.lastIndexOf('#'));
}

/** Which line of the newer string each unchanged line of the older one is: newer index → older index. */
function partMapping(older: readonly string[], newer: readonly string[]): Map<number, number> {
  const mapping = new Map<number, number>();
  let olderAt = 0;
  let newerAt = 0;
  for (const part of diffArrays([...older], [...newer])) {
    const count = part.count ?? part.value.length;
    if (part.added) newerAt += count;
    else if (part.removed) olderAt += count;
    else for (let offset = 0; offset < count; offset++) mapping.set(newerAt++, olderAt++);
  }
  return mapping;
}

function originOf(
  event: RecordedEvent | undefined,
  line: YamlLine,
  after: JsonObject | undefined,
  before: JsonObject | undefined,
): LineOrigin {
  if (!event) return { source: 'unknown' };
  const origin: LineOrigin = { source: 'history', time: event.time, event: event.id };
  const user = event.by?.user?.username;
  if (user) origin.user = user;
  const manager = coveringChange(event.changes ?? [], line.path, after, before)?.manager;
  const fallback = event.by?.managers?.[0]?.manager;
  if (manager ?? fallback) origin.manager = (manager ?? fallback)!;
  return origin;
}

/** The change whose path is the line's or above or below it, the closest first, with a manager. */
function coveringChange(
  changes: readonly Change[],
  path: readonly string[],
  after: JsonObject | undefined,
  before: JsonObject | undefined,
): Change | undefined {
  let best: { change: Change; distance: number } | undefined;
  for (const change of changes) {
    if (change.manager === undefined) continue;
    const changed = keyedPath(change.op === 'remove' ? before : after, change.path);
    if (!changed) continue;
    const shared = Math.min(changed.length, path.length);
    let same = 0;
    while (same < shared && changed[same] === path[same]) same++;
    if (same < shared) continue;
    const distance = Math.abs(changed.length - path.length);
    if (!best || distance < best.distance) best = { change, distance };
  }
  return best?.change;
}

/** A JSON Pointer into `object` as a line path: list indexes replaced by the items' merge keys. */
function keyedPath(object: JsonObject | undefined, pointer: string): string[] | undefined {
  let segments: string[];
  try {
    segments = parsePointer(pointer);
  } catch {
    return undefined;
  }
  const path: string[] = [];
  let at: JsonValue | undefined = object;
  for (const segment of segments) {
    if (Array.isArray(at)) {
      const index = Number(segment);
      const item: JsonValue | undefined = at[index];
      const key = item === undefined ? undefined : listItemKey(item);
      const unique = key !== undefined && at.filter((other) => listItemKey(other) === key).length === 1;
      path.push(`[${unique ? key : `#${index}`}]`);
      at = item;
    } else {
      path.push(segment);
      at = isJsonObject(at) ? at[segment] : undefined;
    }
  }
  return path;
}
