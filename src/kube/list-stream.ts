// Reads a whole LIST answer (`{"kind":…,"metadata":{…},"items":[{…},{…},…]}`) as it streams, one item
// at a time, so that a collection larger than what kubediff reads at once (maxReadBytes) can still be
// listed in one request: each item is bounded, not the answer. The pager needs this when a paged LIST
// outlives etcd's compaction (its continue token expires): then, as client-go's pager does, the list is
// read whole, in one request, and it may be far larger than one page.
//
// The answer is scanned character by character for its structure only (strings skipped in one search):
// the text of each item, and of the list's `metadata`, is cut out and handed to JSON.parse. The API
// server writes `metadata` before `items`; read either way, the resourceVersion is known at the end.
import type { Readable } from 'node:stream';
import { KubeError } from './errors.ts';
import { readChunks } from './transport.ts';
import type { KubeObject } from './types.ts';
import { objectNameIn, objectTooLarge } from './watch-stream.ts';

export interface ListStreamLimits {
  /** Silence longer than this (waiting for the next chunk) means the connection is dead. */
  idleMs: number;
  /** Characters of one item at most. */
  maxItemLength: number;
  server: string;
  path: string;
}

const STRING_SPECIAL = /["\\]/g;

/** Yields the list's items in order; returns its resourceVersion ('' when it had none). */
export async function* listItems(
  body: Readable,
  limits: ListStreamLimits,
): AsyncGenerator<KubeObject, { resourceVersion: string }> {
  body.setEncoding('utf8');
  const chunks = readChunks(body, {
    ms: limits.idleMs,
    error: () =>
      new KubeError('network', `the LIST connection went silent (${limits.server}${limits.path})`, {
        path: limits.path,
      }),
  }) as AsyncGenerator<string>;
  const scanner = new ListScanner(limits);
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      yield* scanner.scan(next.value);
    }
  } finally {
    await chunks.return(undefined);
  }
  return { resourceVersion: scanner.finish() };
}

/** The structure of a List document, followed across chunks. */
class ListScanner {
  private readonly limits: ListStreamLimits;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** At depth 1: the next string is a key (after `{` or `,`), not a value (after `:`). */
  private expectKey = false;
  /** The key being read, and the last one read at depth 1. */
  private keyParts: string[] | undefined;
  private key = '';
  /** The value of the top-level key being read (`items`, `metadata`…). */
  private topKey = '';
  /** The text of the item or metadata being cut out, across chunks. */
  private captured: string[] | undefined;
  private capturedLength = 0;
  private resourceVersion = '';
  private started = false;

  constructor(limits: ListStreamLimits) {
    this.limits = limits;
  }

  *scan(chunk: string): Generator<KubeObject> {
    let keyFrom = 0;
    let captureFrom = 0;
    for (let i = 0; i < chunk.length; i++) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          continue;
        }
        STRING_SPECIAL.lastIndex = i;
        const special = STRING_SPECIAL.exec(chunk);
        if (!special) {
          i = chunk.length;
          break;
        }
        i = special.index;
        if (chunk[i] === '\\') {
          this.escaped = true;
          continue;
        }
        this.inString = false;
        if (this.keyParts) {
          this.key = this.keyParts.join('') + chunk.slice(keyFrom, i);
          this.keyParts = undefined;
        }
        continue;
      }
      const c = chunk[i];
      if (c === '"') {
        this.inString = true;
        if (this.depth === 1 && this.expectKey) {
          this.keyParts = [];
          keyFrom = i + 1;
        }
      } else if (c === '{' || c === '[') {
        if (this.depth === 0) {
          if (c !== '{') throw this.notAList();
          this.started = true;
          this.expectKey = true;
        }
        this.depth++;
        if (this.startsCapture(c)) {
          this.captured = [];
          this.capturedLength = 0;
          captureFrom = i;
        }
      } else if (c === '}' || c === ']') {
        if (this.captured && this.endsCapture()) {
          const text = this.captured.join('') + chunk.slice(captureFrom, i + 1);
          this.captured = undefined;
          this.checkLength(text.length, text);
          if (this.topKey === 'items') yield JSON.parse(text) as KubeObject;
          else this.resourceVersion = listResourceVersion(text);
        }
        this.depth--;
      } else if (this.depth === 1) {
        if (c === ':') {
          this.expectKey = false;
          this.topKey = this.key;
        } else if (c === ',') {
          this.expectKey = true;
        }
      }
    }
    if (this.keyParts && this.inString) {
      this.keyParts.push(chunk.slice(keyFrom));
    }
    if (this.captured) {
      const rest = chunk.slice(captureFrom);
      this.captured.push(rest);
      this.capturedLength += rest.length;
      this.checkLength(this.capturedLength, this.captured[0] ?? '');
    }
  }

  /** The end of the document: its resourceVersion; an error when it was cut short. */
  finish(): string {
    if (!this.started || this.depth !== 0 || this.inString) throw this.notAList();
    return this.resourceVersion;
  }

  /** An item of `items` (depth 3) or the list's `metadata` (depth 2) starts here. */
  private startsCapture(c: string): boolean {
    return (
      (this.topKey === 'items' && this.depth === 3 && c === '{') ||
      (this.topKey === 'metadata' && this.depth === 2 && c === '{')
    );
  }

  private endsCapture(): boolean {
    return this.depth === (this.topKey === 'items' ? 3 : 2);
  }

  private checkLength(length: number, start: string): void {
    if (length > this.limits.maxItemLength) {
      throw objectTooLarge(objectNameIn(start.slice(0, 8192)), this.limits.maxItemLength, this.limits.path);
    }
  }

  private notAList(): KubeError {
    return new KubeError(
      'server',
      `the API server's answer to a LIST of ${this.limits.path} is not a whole list`,
      {
        path: this.limits.path,
      },
    );
  }
}

/** The resourceVersion of a list's `metadata` text. */
function listResourceVersion(metadata: string): string {
  return (JSON.parse(metadata) as { resourceVersion?: string }).resourceVersion ?? '';
}
