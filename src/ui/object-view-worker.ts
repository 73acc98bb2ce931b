// The worker thread of /api/v1/object (object-view.ts): from an object's stored history (JSON text,
// as the reader read it), the whole answer, ready to send: its events parsed, the versions asked for
// rebuilt (versions.ts), all of it serialized. Parsing, undoing and serializing a large object's
// history takes time in proportion to it; here it takes none from the thread that watches and serves.
// The answer is UTF-8 JSON, its buffer moved to the caller rather than copied.
import { objectYaml } from '../diff/object-yaml.ts';
import { unifiedDiff } from '../diff/unified-diff.ts';
import { type ChangeEvent, offlineNote, qualifiedResource } from '../events/event.ts';
import { isJsonObject, type JsonObject } from '../kube/types.ts';
import type { ObjectRecords } from '../state/timeline-reader.ts';
import { errorMessage } from '../util/errors.ts';
import { formatSize } from '../util/size.ts';
import { yieldToMainThread } from '../util/thread-priority.ts';
import { serveRequests } from '../util/worker-thread.ts';
import { rebuildVersions } from './versions.ts';

export interface ObjectViewJob {
  records: ObjectRecords;
  /** The seqs whose versions are asked for (a, b). */
  wanted: number[];
  /** The bound the reader applied, for the notice. */
  maxBytes: number;
}

/** What /api/v1/object answers. */
export interface ObjectAnswer {
  /**
   * Oldest first; `offlineNote`: offlineNote() of an offline event (`while not watching`, or the cause of
   * a change without a write), the words the pretty and chat outputs use.
   */
  events: (ChangeEvent & { seq: number; offlineNote?: string })[];
  /** Older events exist beyond the `limit` asked for or beyond the size bound. */
  truncated: boolean;
  /** The seqs whose version can be rebuilt. */
  rebuildable: number[];
  /** The versions asked for (a, b), by seq. */
  versions: Record<string, JsonObject>;
  /** The versions asked for as YAML (objectYaml: what `kubediff show` prints), by seq. */
  yaml?: Record<string, string>;
  /** A then B as a unified diff of their YAML (unifiedDiff: what `kubediff diff` prints), uncoloured. */
  diff?: string[];
  /** Why part of the history or its versions is left out: a sentence for the page. */
  notice?: string;
}

/** An event as the page shows it: with its seq, and the note on where an offline one came from. */
function withNote(event: ChangeEvent, seq: number): ObjectAnswer['events'][number] {
  const note = offlineNote(event);
  return { ...event, seq, ...(note !== undefined ? { offlineNote: note } : {}) };
}

/** The answer's JSON, built from its parts: the versions are JSON already. */
export function objectAnswer(job: ObjectViewJob): string {
  const { records } = job;
  const events = records.events.map(({ seq, json }) => withNote(JSON.parse(json) as ChangeEvent, seq));
  const parsed: unknown = records.current === undefined ? undefined : JSON.parse(records.current);
  const current = isJsonObject(parsed) ? parsed : undefined;
  const { rebuildable, versions } = rebuildVersions(events, current, new Set(job.wanted));
  const notices: string[] = [];
  const bound = formatSize(job.maxBytes);
  if (records.bytesBound) {
    notices.push(
      `Older events are not shown: this object's history is larger than ${bound}, the most one answer holds (its newest ${events.length} events are).`,
    );
  }
  if (records.currentTooLarge) {
    notices.push(`Versions are not rebuilt: this object is larger than ${bound}, the most one answer holds.`);
  }
  const head = JSON.stringify({
    events,
    truncated: records.truncated,
    rebuildable,
    ...(notices.length > 0 ? { notice: notices.join(' ') } : {}),
    ...versionsAsYaml(events, versions, job.wanted),
  });
  const entries = [...versions].map(([seq, json]) => `${JSON.stringify(String(seq))}:${json}`);
  return `${head.slice(0, -1)},"versions":{${entries.join(',')}}}`;
}

/** The versions as YAML and, when both A and B were asked for, their unified diff (A → B). */
function versionsAsYaml(
  events: readonly (ChangeEvent & { seq: number })[],
  versions: ReadonlyMap<number, string>,
  wanted: readonly number[],
): Pick<ObjectAnswer, 'yaml' | 'diff'> {
  if (versions.size === 0) return {};
  const yaml: Record<string, string> = {};
  for (const [seq, json] of versions) yaml[seq] = objectYaml(JSON.parse(json) as JsonObject);
  const [a, b] = wanted;
  if (a === undefined || b === undefined || yaml[a] === undefined || yaml[b] === undefined) return { yaml };
  const side = (seq: number) => {
    const event = events.find((candidate) => candidate.seq === seq)!;
    const { namespace, name } = event.object;
    const label = `${qualifiedResource(event)}/${namespace ? `${namespace}/` : ''}${name}`;
    return { label, header: `#${seq} ${event.time}` };
  };
  const diff = unifiedDiff(
    { ...side(a), text: yaml[a] },
    { ...side(b), text: yaml[b] },
    { color: false, terminal: false },
  );
  return { yaml, diff };
}

void serveRequests<undefined, ObjectViewJob, Uint8Array, string>(() => {
  yieldToMainThread();
  return {
    handle: (job) => {
      const body = Buffer.from(objectAnswer(job));
      return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    },
    // Its own buffer is moved rather than copied (a small one shares Node's pool, which stays).
    transfer: (bytes) =>
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? [bytes.buffer as ArrayBuffer]
        : [],
  };
}, errorMessage);
