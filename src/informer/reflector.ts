// Keeps one collection (a resource type, across all namespaces or in one)
// in step with the API server: a paged LIST, then a WATCH that resumes from
// the last resourceVersion seen (bookmarks included) for as long as kubediff
// runs. Modelled on client-go's tools/cache Reflector:
// - a WATCH ends every few minutes by design (randomized timeoutSeconds, so
//   that many reflectors do not reconnect together); it simply resumes;
// - 410 Gone (the resourceVersion was compacted away) means relist; the
//   informer then reports what changed in the gap;
// - network and server trouble backs off with jitter, honouring Retry-After;
// - a connection that goes silent for longer than idleTimeoutMs is taken as
//   dead and replaced (the API server sends bookmarks about once a minute);
// - 403 and 404 concern only this resource: reported once, retried slowly.
import type { Readable } from 'node:stream';
import type { KubeClient, Query } from '../kube/client.ts';
import { KubeError } from '../kube/errors.ts';
import { apiVersionOf, collectionPath, type KubeObject, type ResourceType } from '../kube/types.ts';
import { Backoff, type BackoffOptions, sleep } from './backoff.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** What a reflector feeds: the informer. */
export interface ReflectorSink {
  /** A LIST begins; its items follow page by page. */
  listStarted(): void;
  listPage(items: KubeObject[]): void;
  /** The LIST completed at this resourceVersion: anything not seen in it is gone. */
  listCompleted(resourceVersion: string): void;
  watchEvent(type: WatchEventType, object: KubeObject): void;
  /** Health, for progress, logs and readiness. */
  stateChanged(state: ReflectorState): void;
}

export type ReflectorState =
  | { phase: 'listing' }
  | { phase: 'watching' }
  /** Something failed; the reflector retries after `retryInMs`. `slow` for 403/404. */
  | { phase: 'failing'; error: KubeError; retryInMs: number; slow: boolean }
  | { phase: 'stopped' };

export interface ReflectorTiming {
  /** LIST page size. */
  pageSize: number;
  /** Each WATCH asks the server to end it after a random time in [min, 2×min] seconds. */
  minWatchTimeoutSeconds: number;
  /** Silence (no event, no bookmark) after which the connection is taken as dead. */
  idleTimeoutMs: number;
  /** How long to wait before retrying a forbidden or vanished resource. */
  slowRetryMs: number;
  backoff: Partial<BackoffOptions>;
}

export const DEFAULT_TIMING: ReflectorTiming = {
  pageSize: 500,
  minWatchTimeoutSeconds: 300,
  idleTimeoutMs: 90_000,
  slowRetryMs: 300_000,
  backoff: {},
};

export interface ReflectorOptions {
  type: ResourceType;
  /** Watch only this namespace; all namespaces when undefined. */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  timing?: Partial<ReflectorTiming>;
  /**
   * Backpressure from the consumer (stdout piped into a slow reader): a promise to await before reading
   * more, or undefined to go on. While it is pending nothing more is read from the API server, so TCP
   * pushes back on it; a watch the server drops meanwhile resumes (or relists) with no loss.
   */
  flowControl?: (() => Promise<void> | undefined) | undefined;
}

interface WatchLine {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; reason?: string; message?: string };
}

interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

export class Reflector {
  private readonly client: KubeClient;
  private readonly options: ReflectorOptions;
  private readonly sink: ReflectorSink;
  private readonly timing: ReflectorTiming;
  private readonly backoff: Backoff;
  private readonly abort = new AbortController();
  private readonly path: string;
  private readonly apiVersion: string;
  private lastResourceVersion = '';
  private running: Promise<void> | undefined;

  constructor(client: KubeClient, options: ReflectorOptions, sink: ReflectorSink) {
    this.client = client;
    this.options = options;
    this.sink = sink;
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    this.backoff = new Backoff(this.timing.backoff);
    this.path = collectionPath(options.type, options.namespace);
    this.apiVersion = apiVersionOf(options.type);
  }

  /** The resourceVersion the next WATCH would resume from. */
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops listing and watching; resolves once no request, timer or callback is left. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        await this.watch();
      } catch (error) {
        if (this.stopped) break;
        const failure = error instanceof KubeError ? error : unexpected(error, this.path);
        if (failure.kind === 'gone') {
          // The resume point was compacted away: start over from a fresh LIST.
          needList = true;
          continue;
        }
        const slow = failure.kind === 'forbidden' || failure.kind === 'not-found';
        // After a long pause the watch may be far behind: relisting is cheaper than a 410 later.
        if (slow) needList = true;
        const retryInMs = slow
          ? this.timing.slowRetryMs
          : this.backoff.next(
              failure.retryAfterSeconds !== undefined ? failure.retryAfterSeconds * 1000 : undefined,
            );
        this.sink.stateChanged({ phase: 'failing', error: failure, retryInMs, slow });
        await sleep(retryInMs, this.abort.signal);
      }
    }
    this.sink.stateChanged({ phase: 'stopped' });
  }

  private baseQuery(): Query {
    return { labelSelector: this.options.labelSelector, fieldSelector: this.options.fieldSelector };
  }

  /** A paged LIST. An expired continue token (410) mid-way restarts it from the first page. */
  private async list(): Promise<void> {
    this.sink.stateChanged({ phase: 'listing' });
    this.sink.listStarted();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const response = await this.client.getJSON<ListPage>(this.path, {
        query: { ...this.baseQuery(), limit: this.timing.pageSize, continue: continueToken },
        signal: this.abort.signal,
      });
      if (response.notModified) throw unexpected(new Error('304 answer to a LIST'), this.path);
      const page = response.body;
      const items = page.items ?? [];
      // Items of a List carry no apiVersion/kind of their own; the diff and redaction need them.
      for (const item of items) {
        item.apiVersion ??= this.apiVersion;
        item.kind ??= this.options.type.kind;
      }
      if (this.stopped) return;
      this.sink.listPage(items);
      const pause = this.options.flowControl?.();
      if (pause) await this.waitForConsumer(pause);
      if (this.stopped) return;
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (continueToken);
    this.lastResourceVersion = resourceVersion;
    this.sink.listCompleted(resourceVersion);
  }

  /** One WATCH from the last resourceVersion, until the server ends it or it fails. */
  private async watch(): Promise<void> {
    const min = this.timing.minWatchTimeoutSeconds;
    const timeoutSeconds = Math.floor(min + Math.random() * min);
    const body = await this.client.openStream(this.path, {
      query: {
        ...this.baseQuery(),
        watch: 1,
        allowWatchBookmarks: true,
        resourceVersion: this.lastResourceVersion,
        timeoutSeconds,
      },
      signal: this.abort.signal,
      bodyTimeoutMs: this.timing.idleTimeoutMs,
    });
    this.sink.stateChanged({ phase: 'watching' });
    try {
      for await (const line of jsonLines(body)) {
        this.handleLine(line);
        // Asked for each line, but only awaited when the consumer wants a pause: most lines cost no promise.
        const pause = this.options.flowControl?.();
        if (pause) await this.waitForConsumer(pause);
        if (this.stopped) break;
      }
    } catch (error) {
      if (error instanceof KubeError || this.stopped) throw error;
      throw transportFailure(error, this.client.server, this.path);
    } finally {
      body.destroy();
    }
    // The server ended the watch as asked: things work, forget earlier failures.
    this.backoff.reset();
  }

  /** Waits while the consumer asks for a pause (see ReflectorOptions.flowControl); stop() ends the wait. */
  private async waitForConsumer(pause: Promise<void>): Promise<void> {
    const signal = this.abort.signal;
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      pause.then(done, done);
    });
  }

  private handleLine(text: string): void {
    let line: WatchLine;
    try {
      line = JSON.parse(text) as WatchLine;
    } catch (error) {
      throw new KubeError('server', `the API server sent a watch event that is not JSON for ${this.path}`, {
        path: this.path,
        cause: error,
      });
    }
    const object = line.object;
    switch (line.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED':
        object.apiVersion ??= this.apiVersion;
        object.kind ??= this.options.type.kind;
        this.lastResourceVersion = object.metadata.resourceVersion;
        this.sink.watchEvent(line.type, object);
        return;
      case 'BOOKMARK':
        this.lastResourceVersion = object.metadata.resourceVersion;
        return;
      case 'ERROR': {
        const status = typeof object.code === 'number' ? object.code : 500;
        throw new KubeError(
          status === 410 ? 'gone' : status >= 500 ? 'server' : 'request',
          `${status}${object.reason ? ` ${object.reason}` : ''}: ${object.message ?? 'watch error'}`,
          { status, path: this.path },
        );
      }
      default:
        // An event type from a future API server: skip it rather than fail.
        return;
    }
  }
}

/**
 * Splits a watch body into its JSON lines (a chunk may hold many lines, or part of one). Only the
 * new chunk is searched for a newline: the start of a long line (a large object spans many chunks)
 * is neither copied nor scanned again for each chunk.
 */
async function* jsonLines(body: Readable): AsyncGenerator<string> {
  body.setEncoding('utf8');
  let pending = '';
  for await (const chunk of body as AsyncIterable<string>) {
    let start = 0;
    for (let newline = chunk.indexOf('\n'); newline >= 0; newline = chunk.indexOf('\n', start)) {
      const line = pending === '' ? chunk.slice(start, newline) : pending + chunk.slice(start, newline);
      pending = '';
      start = newline + 1;
      if (line !== '') yield line;
    }
    pending = start === 0 ? pending + chunk : chunk.slice(start);
  }
  if (pending.trim()) yield pending;
}

function transportFailure(error: unknown, server: string, path: string): KubeError {
  const code = (error as { code?: unknown } | undefined)?.code;
  const reason =
    code === 'UND_ERR_BODY_TIMEOUT' ? 'the watch connection went silent' : 'the watch connection broke';
  return new KubeError('network', `${reason} (${server}${path})`, { path, cause: error });
}

function unexpected(error: unknown, path: string): KubeError {
  return new KubeError('server', error instanceof Error ? error.message : String(error), {
    path,
    cause: error,
  });
}
