// What the kube client asks of a connection to the API server, whatever the protocol: send one
// request, get its status, headers and body as a stream. Two implementations: HTTP/2, every
// request of a cluster identity multiplexed over one connection (http2-pool.ts), and HTTP/1.1,
// for servers and proxies that do not offer HTTP/2 (http1-pool.ts). Also here: what both share,
// reading a whole body within a size bound and the counters the metrics show.
import type { Readable } from 'node:stream';
import { formatSize } from '../util/size.ts';
import { KubeError } from './errors.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH';

export interface TransportRequest {
  method: HttpMethod;
  /** Path and query string. */
  path: string;
  /** Lower-case names; the credentials are already in. */
  headers: Record<string, string>;
  body?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Longest wait for the response headers. */
  headersTimeoutMs: number;
  /** A watch: the response body stays open for minutes. */
  longLived: boolean;
}

export interface TransportResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: Readable;
}

type Protocol = 'h2' | 'http/1.1';

/** Why a connection was given up, for the metrics. */
export type ConnectionLoss = 'reset' | 'ping-timeout' | 'closed' | 'goaway';

export interface ConnectionStats {
  protocol: Protocol;
  /** Connections open now. */
  open: number;
  /** Connections opened since the start. */
  opened: number;
  /** Connections lost since the start, by reason. */
  lost: Record<ConnectionLoss, number>;
  /** Requests waiting for a connection because every one allowed is busy. */
  waiting: number;
}

export interface Transport {
  readonly protocol: Protocol;
  request(request: TransportRequest): Promise<TransportResponse>;
  stats(): ConnectionStats;
  /** Closes every connection; requests still open fail. */
  close(): Promise<void>;
}

export function noLosses(): Record<ConnectionLoss, number> {
  return { reset: 0, 'ping-timeout': 0, closed: 0, goaway: 0 };
}

/**
 * Reads a whole response body, refusing more than `maxBytes` (the body is then destroyed: over
 * HTTP/2 that resets only its stream) and a body that goes silent for `idleMs` between two chunks.
 */
export async function readBody(
  body: Readable,
  limits: { maxBytes: number; idleMs: number },
  describe: { server: string; path: string },
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  const timer = setTimeout(() => {
    body.destroy(
      new KubeError('network', `the API server at ${describe.server} went silent while answering`, {
        path: describe.path,
      }),
    );
  }, limits.idleMs);
  try {
    for await (const chunk of readChunks(body) as AsyncGenerator<Buffer>) {
      total += chunk.length;
      if (total > limits.maxBytes) {
        body.destroy();
        throw new ResponseTooLarge(describe.path, limits.maxBytes);
      }
      chunks.push(chunk);
      timer.refresh();
    }
  } finally {
    clearTimeout(timer);
  }
  return chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, total);
}

/** How long a long-lived answer (a watch, a whole LIST) may stay silent, and what its silence is. */
export interface SilenceLimit {
  ms: number;
  error(): Error;
}

/**
 * The chunks of a readable stream as they arrive, ending when it ends and failing when it fails or
 * closes before its end. Not the stream's own async iterator: over node:http2, that one sometimes
 * throws "Premature close" for a response that arrived whole (seen with POSTs answered before their
 * 'response' event is handled, a few in a thousand), and a request that succeeded must not fail.
 * With `silence`: waiting longer than `silence.ms` for the next chunk destroys the stream with its
 * error (the connection is taken as dead). Only time spent waiting for the network counts: while the
 * caller holds a chunk (its consumer asked for a pause) the stream is not read, and not silent.
 */
export async function* readChunks(stream: Readable, silence?: SilenceLimit): AsyncGenerator<Buffer | string> {
  let wake: (() => void) | undefined;
  let failure: unknown;
  let closed = false;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const onError = (error: unknown) => {
    failure ??= error;
    notify();
  };
  const onClose = () => {
    closed = true;
    notify();
  };
  stream.on('readable', notify);
  stream.on('end', notify);
  stream.on('error', onError);
  stream.on('close', onClose);
  let waiting = true;
  const timer =
    silence &&
    setTimeout(() => {
      if (waiting) stream.destroy(silence.error());
    }, silence.ms);
  try {
    for (;;) {
      const chunk: Buffer | string | null = stream.read();
      if (chunk !== null) {
        waiting = false;
        yield chunk;
        waiting = true;
        timer?.refresh();
        continue;
      }
      // The stream may have failed or closed before this reader was attached.
      if (failure !== undefined || stream.errored) throw failure ?? stream.errored;
      if (stream.readableEnded) return;
      if (closed || stream.destroyed)
        throw Object.assign(new Error('the connection closed before the end of the answer'), {
          code: 'ERR_STREAM_PREMATURE_CLOSE',
        });
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    clearTimeout(timer);
    stream.off('readable', notify);
    stream.off('end', notify);
    stream.off('error', onError);
    stream.off('close', onClose);
  }
}

/** A response larger than the read limit: a LIST retries with smaller pages, anything else fails. */
export class ResponseTooLarge extends KubeError {
  readonly limitBytes: number;
  constructor(path: string, limitBytes: number) {
    super('too-large', `the answer to ${path} is larger than ${formatSize(limitBytes)}`, { path });
    this.limitBytes = limitBytes;
  }
}
