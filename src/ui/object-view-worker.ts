// The worker thread of /api/v1/object (object-view.ts): from an object's stored history (JSON text,
// as the reader read it), the whole answer, ready to send: its events parsed, the versions asked for
// rebuilt (versions.ts), all of it serialized. Parsing, undoing and serializing a large object's
// history takes time in proportion to it; here it takes none from the thread that watches and serves.
//
// Messages in: ObjectViewJob. Out: { ready: true } once loaded, then per job { id, body } (UTF-8,
// its buffer transferred) or { id, error }.

import { isMainThread, type MessagePort, parentPort } from 'node:worker_threads';
import type { ChangeEvent } from '../events/event.ts';
import { isJsonObject, type JsonObject } from '../kube/types.ts';
import type { ObjectRecords } from '../state/timeline-reader.ts';
import { errorMessage } from '../util/errors.ts';
import { formatSize } from '../util/size.ts';
import { yieldToMainThread } from '../util/thread-priority.ts';
import { rebuildVersions } from './versions.ts';

export interface ObjectViewJob {
  id: number;
  records: ObjectRecords;
  /** The seqs whose versions are asked for (a, b). */
  wanted: number[];
  /** The bound the reader applied, for the notice. */
  maxBytes: number;
}

export type ObjectViewReply = { id: number; body: Uint8Array } | { id: number; error: string };

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

function serve(port: MessagePort): void {
  yieldToMainThread();
  port.postMessage({ ready: true });
  port.on('message', (job: ObjectViewJob) => {
    try {
      const body = Buffer.from(objectAnswer(job));
      // A view of its own buffer, so that the buffer can be transferred rather than copied.
      const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
      const transfer = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
      port.postMessage({ id: job.id, body: bytes } satisfies ObjectViewReply, transfer ? [body.buffer] : []);
    } catch (error) {
      port.postMessage({ id: job.id, error: errorMessage(error) } satisfies ObjectViewReply);
    }
  });
}

// Only in a worker thread: imported elsewhere, it only defines.
if (parentPort && !isMainThread) serve(parentPort);
