// The worker thread of /api/v1/object (object-view.ts): from an object's stored history (JSON text,
// as the reader read it), the whole answer, ready to send: its events parsed, the versions asked for
// rebuilt (versions.ts), all of it serialized. Parsing, undoing and serializing a large object's
// history takes time in proportion to it; here it takes none from the thread that watches and serves.
// The answer is UTF-8 JSON, its buffer moved to the caller rather than copied.
import type { ChangeEvent } from '../events/event.ts';
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
  /** Oldest first. */
  events: (ChangeEvent & { seq: number })[];
  /** Older events exist beyond the `limit` asked for or beyond the size bound. */
  truncated: boolean;
  /** The seqs whose version can be rebuilt. */
  rebuildable: number[];
  /** The versions asked for (a, b), by seq. */
  versions: Record<string, JsonObject>;
  /** Why part of the history or its versions is left out: a sentence for the page. */
  notice?: string;
}

/** The answer's JSON, built from its parts: the versions are JSON already. */
export function objectAnswer(job: ObjectViewJob): string {
  const { records } = job;
  const events = records.events.map(({ seq, json }) => ({ ...(JSON.parse(json) as ChangeEvent), seq }));
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
  });
  const entries = [...versions].map(([seq, json]) => `${JSON.stringify(String(seq))}:${json}`);
  return `${head.slice(0, -1)},"versions":{${entries.join(',')}}}`;
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
