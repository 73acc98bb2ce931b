// Reads a watch body as the JSON lines it is made of, with the two bounds a long-lived stream needs:
// - silence: waiting longer than `idleMs` for the next chunk means the stream is dead (the API server
//   sends a bookmark about once a minute). Only time spent waiting for the network counts: while the
//   caller holds a line (its consumer asked for a pause) the stream is not read, and not silent;
// - size: a line (one event, so one object) longer than `maxLineLength` characters fails the watch
//   with a 'too-large' error that names the object, instead of growing a string without bound.
import type { Readable } from 'node:stream';
import { formatSize } from '../util/size.ts';
import { KubeError } from './errors.ts';
import { readChunks } from './transport.ts';
import { objectKey } from './types.ts';

export interface WatchLineLimits {
  idleMs: number;
  maxLineLength: number;
  /** For messages: the server and the watched collection's path. */
  server: string;
  path: string;
}

/**
 * Splits a watch body into its JSON lines (a chunk may hold many lines, or part of one). Only the
 * new chunk is searched for a newline: the start of a long line (a large object spans many chunks)
 * is neither copied nor scanned again for each chunk.
 */
export async function* watchLines(body: Readable, limits: WatchLineLimits): AsyncGenerator<string> {
  body.setEncoding('utf8');
  const chunks = readChunks(body, {
    ms: limits.idleMs,
    error: () =>
      new KubeError('network', `the watch connection went silent (${limits.server}${limits.path})`, {
        path: limits.path,
      }),
  }) as AsyncGenerator<string>;
  let pending = '';
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      const chunk = next.value;
      let start = 0;
      for (let newline = chunk.indexOf('\n'); newline >= 0; newline = chunk.indexOf('\n', start)) {
        const line = pending === '' ? chunk.slice(start, newline) : pending + chunk.slice(start, newline);
        pending = '';
        start = newline + 1;
        if (line.length > limits.maxLineLength) throw tooLarge(line, limits);
        if (line !== '') yield line;
      }
      pending = start === 0 ? pending + chunk : chunk.slice(start);
      if (pending.length > limits.maxLineLength) throw tooLarge(pending, limits);
    }
  } finally {
    await chunks.return(undefined);
  }
  if (pending.trim()) yield pending;
}

function tooLarge(line: string, limits: WatchLineLimits): KubeError {
  return objectTooLarge(objectNameIn(line.slice(0, 8192)), limits.maxLineLength, limits.path);
}

/** The error for one object larger than kubediff reads at once, named when the name is known. */
export function objectTooLarge(name: string | undefined, limitBytes: number, path: string): KubeError {
  return new KubeError(
    'too-large',
    `${name ? `the object ${name}` : 'an object'} is larger than ${formatSize(limitBytes)}, the most kubediff reads at once`,
    { path },
  );
}

/**
 * "namespace/name" (or "name") from the start of a watch event too large to parse: the API server
 * writes `metadata` first in every object, and `name` and `namespace` first in `metadata`.
 */
export function objectNameIn(start: string): string | undefined {
  const metadata = start.indexOf('"metadata":{');
  if (metadata < 0) return undefined;
  // Up to the uid, which follows name and namespace: nothing further down (labels…) can be mistaken for them.
  const uid = start.indexOf('"uid":', metadata);
  const head = start.slice(metadata, uid < 0 ? undefined : uid);
  const name = /"name":"((?:[^"\\]|\\.){1,253})"/.exec(head)?.[1];
  if (name === undefined) return undefined;
  const namespace = /"namespace":"((?:[^"\\]|\\.){1,63})"/.exec(head)?.[1];
  return objectKey({ namespace, name });
}
