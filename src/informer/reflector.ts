// Keeps one collection (a resource type, in all namespaces or one) in step with the API server, as
// client-go's Reflector does: its state by streaming list where offered (else paged LISTs,
// kube/list-pager.ts), then a WATCH resumed from the last resourceVersion seen for as long as kubediff
// runs. Relists on 410 Gone and on relist(); backs off with jitter (Retry-After honoured) on network and
// server errors; replaces a watch silent past idleTimeoutMs; reports 403, 404 and an object too large to
// read (KubeClient.maxReadBytes) once and retries them slowly. Only this resource is ever affected.
// Given a replay point (ReflectorOptions.replayFrom), the first watch after the first LIST starts there
// instead, and hands on the events up to that LIST apart (ReflectorSink.replayEvent).
import type { Readable } from 'node:stream';
import { brokenStream, KubeError } from '../kube/errors.ts';
import { ListPager, type ListProgress, type PageHandler } from '../kube/list-pager.ts';
import type { ListerWatcher } from '../kube/lister-watcher.ts';
import {
  apiVersionOf,
  type KubeObject,
  numericResourceVersion as numericVersion,
  type ResourceType,
} from '../kube/types.ts';
import { watchLines } from '../kube/watch-stream.ts';
import { Backoff, type BackoffOptions, sleep } from '../util/backoff.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** What a reflector feeds: the informer. */
export interface ReflectorSink {
  /** A LIST begins; its items follow page by page. */
  listStarted(): void;
  listPage(items: KubeObject[]): void;
  /** The LIST completed at this resourceVersion: anything not seen in it is gone. */
  listCompleted(resourceVersion: string): void;
  watchEvent(type: WatchEventType, object: KubeObject): void;
  /**
   * An event of the replay (ReflectorOptions.replayFrom): made after the replay point and at or before
   * the first LIST, which has already been handed on.
   */
  replayEvent?(type: WatchEventType, object: KubeObject): void;
  /**
   * The replay is over: every event up to the first LIST (at `listedAt`) was handed on (`complete`), or
   * not (the server no longer had them, or a LIST was taken meanwhile).
   */
  replayEnded?(complete: boolean, listedAt: string): void;
  /** Health, for progress, logs and readiness. */
  stateChanged(state: ReflectorState): void;
}

export type ReflectorState =
  | { phase: 'listing' }
  /** Not a change of phase: how far a LIST has come, when it is slow or read whole (for the log). */
  | { phase: 'list-progress'; progress: ListProgress }
  | { phase: 'watching' }
  /**
   * The replay is over: every change it reports is handed on; the state is the first LIST's (`listedAt`).
   * `goneFrom`: the server no longer held the events since this resourceVersion (410 Gone).
   */
  | { phase: 'replayed'; listedAt: string; goneFrom?: string }
  /** Something failed; the reflector retries after `retryInMs`. `slow` for 403/404. */
  | { phase: 'failing'; error: KubeError; retryInMs: number; slow: boolean }
  | { phase: 'stopped' };

export interface ReflectorTiming {
  /** LIST page size, at most: pages shrink when they are large (kube/list-pager.ts). */
  pageSize: number;
  /** Each WATCH asks the server to end it after a random time in [min, 2×min] seconds. */
  minWatchTimeoutSeconds: number;
  /** Silence (no event, no bookmark) after which the connection is taken as dead. */
  idleTimeoutMs: number;
  /** How long to wait before retrying a forbidden or vanished resource. */
  slowRetryMs: number;
  backoff: Partial<BackoffOptions>;
  /**
   * How the state is read: 'stream' (a streaming list where the server offers it, else a paged LIST)
   * or 'list' (a paged LIST always). Initial events are handed on in batches of pageSize.
   */
  initialSync: 'stream' | 'list';
  /** A LIST that has taken this long is reported, with its progress (once per LIST). */
  slowListWarnMs: number;
}

/** The annotation of the bookmark that ends a streaming list's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

const DEFAULT_TIMING: ReflectorTiming = {
  initialSync: 'stream',
  pageSize: 500,
  minWatchTimeoutSeconds: 300,
  idleTimeoutMs: 90_000,
  slowRetryMs: 300_000,
  backoff: {},
  slowListWarnMs: 60_000,
};

export interface ReflectorOptions {
  /** The collection's type: its objects get its apiVersion and kind where the server leaves them out. */
  type: ResourceType;
  timing?: Partial<ReflectorTiming>;
  /** Jitter of the backoff and of the watch timeouts (tests make it predictable). */
  random?: () => number;
  /**
   * Backpressure from the consumer (stdout piped into a slow reader): a promise to await before reading
   * more, or undefined to go on. While it is pending nothing more is read from the API server, so TCP
   * pushes back on it; a watch the server drops meanwhile resumes (or relists) with no loss.
   */
  flowControl?: (() => Promise<void> | undefined) | undefined;
  /**
   * A resourceVersion before the first LIST (a previous run's recorded point, --state): the first watch
   * resumes from it rather than from the LIST, so that the changes between the two are handed on too
   * (replayEvent), what the LIST alone cannot show among them: objects created and deleted meanwhile.
   * Ignored unless both are numeric (as etcd's are) and it is the older.
   */
  replayFrom?: string | undefined;
}

interface WatchLine {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; reason?: string; message?: string };
}

export class Reflector {
  private readonly source: ListerWatcher;
  private readonly options: ReflectorOptions;
  private readonly sink: ReflectorSink;
  private readonly timing: ReflectorTiming;
  private readonly backoff: Backoff;
  private readonly abort = new AbortController();
  private readonly path: string;
  private readonly apiVersion: string;
  private readonly random: () => number;
  private lastResourceVersion = '';
  private running: Promise<void> | undefined;
  private readonly pager: ListPager;
  /** What the pager hands a paged LIST's items and progress to. */
  private readonly listHandler: PageHandler;
  /** The server refused or ignored a streaming list: paged LISTs from now on. */
  private streamingRefused = false;
  /** During a streaming list's initial events: those not yet handed on. */
  private initialEvents: KubeObject[] | undefined;
  /** relist() asked for a LIST, not yet begun. */
  private relistRequested = false;
  /** Until then (Date.now()), every watch that ends is followed by a LIST (see relist). */
  private relistUntil = 0;
  /** Ends the WATCH request in progress (relist), not the reflector. */
  private currentWatch: AbortController | undefined;
  /** Where the replay starts, until the first LIST has completed (then cleared). */
  private replayFrom: bigint | undefined;
  /** During the replay: the first LIST's resourceVersion, up to which events are replayed. */
  private replayUntil: bigint | undefined;
  /** 'watching' was said when a streaming list ended into a replay: its watch does not say it again. */
  private watchingSaid = false;

  constructor(source: ListerWatcher, options: ReflectorOptions, sink: ReflectorSink) {
    this.source = source;
    this.options = options;
    this.sink = sink;
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff(this.timing.backoff, this.random);
    this.path = source.path;
    this.apiVersion = apiVersionOf(options.type);
    this.pager = new ListPager(source, this.timing);
    this.replayFrom = numericVersion(options.replayFrom);
    this.listHandler = {
      started: () => this.sink.listStarted(),
      page: (items) => this.handOn(items),
      progress: (progress) => this.sink.stateChanged({ phase: 'list-progress', progress }),
    };
  }

  /**
   * The resourceVersion the next WATCH would resume from. During the replay, how far the replay has
   * read: what the recorder may take as followed (src/state/followed-versions.ts) goes no further.
   */
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }

  start(): void {
    this.running ??= this.run();
  }

  /**
   * Re-reads the collection now: the watch in progress, if any, is ended without handing on any more of
   * its events, and a LIST is taken in its place (a LIST in progress is followed by another one). For
   * `holdMs` after, a watch that ends for any reason is followed by a LIST instead of resuming: after a
   * CRD changed, the API server serves its objects from new storage but ends the watches of the old
   * one only later (a second or more), and a watch resumed there may skip the new form of objects
   * nobody wrote.
   */
  relist(holdMs = 0): void {
    this.relistRequested = true;
    this.relistUntil = Math.max(this.relistUntil, Date.now() + holdMs);
    this.currentWatch?.abort();
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
    /** This (re)list only, a paged LIST: the server could not stream it yet. */
    let listOnce = false;
    while (!this.stopped) {
      if (this.relistRequested || Date.now() < this.relistUntil) {
        this.relistRequested = false;
        needList = true;
        listOnce = false;
      }
      const streaming =
        needList && this.timing.initialSync === 'stream' && !this.streamingRefused && !listOnce;
      try {
        if (streaming) {
          // The state and the watch in one request; a stream that ends before its initial events
          // did (the server's timeout) leaves needList set: the next one starts over.
          await this.watch({
            streamList: true,
            onInitialEventsEnd: () => {
              needList = false;
            },
          });
          continue;
        }
        if (needList) {
          await this.list();
          needList = false;
          listOnce = false;
          // Asked for while this LIST was read: it may predate what was asked for.
          if (this.relistRequested) continue;
        }
        await this.watch();
      } catch (error) {
        this.initialEvents = undefined;
        if (this.stopped) break;
        const failure = error instanceof KubeError ? error : unexpected(error, this.path);
        if (streaming && needList && refusesStreaming(failure)) {
          this.streamingRefused = true;
          continue;
        }
        if (streaming && needList && cacheInitializing(failure)) {
          listOnce = true;
          continue;
        }
        if (failure.kind === 'gone' && this.replayUntil !== undefined) {
          // The replay point is older than what the server keeps: the LIST alone tells what changed.
          this.endReplay('gone');
          continue;
        }
        if (failure.kind === 'gone') {
          // The resume point was compacted away: start over from a fresh LIST.
          needList = true;
          continue;
        }
        const slow =
          failure.kind === 'forbidden' || failure.kind === 'not-found' || failure.kind === 'too-large';
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

  /** A paged LIST (kube/list-pager.ts), then the watch resumes from its resourceVersion. */
  private async list(): Promise<void> {
    this.endReplay('relisted');
    this.sink.stateChanged({ phase: 'listing' });
    const resourceVersion = await this.pager.list(this.listHandler, this.abort.signal);
    if (resourceVersion === undefined) return;
    this.lastResourceVersion = resourceVersion;
    this.sink.listCompleted(resourceVersion);
    this.startReplay(resourceVersion);
  }

  /**
   * After the first LIST completed at `listedAt`: with a replay point before it, the next watch
   * resumes from there. Returns whether it will.
   */
  private startReplay(listedAt: string): boolean {
    const from = this.replayFrom;
    this.replayFrom = undefined;
    const until = numericVersion(listedAt);
    if (from === undefined || until === undefined || from >= until) return false;
    this.replayUntil = until;
    this.lastResourceVersion = from.toString();
    return true;
  }

  /**
   * The replay is over: `complete`; `gone`, the server no longer had its events (the watch goes on from
   * the LIST); or `relisted`, a LIST taken meanwhile (relist()) tells the rest.
   */
  private endReplay(how: 'complete' | 'gone' | 'relisted'): void {
    const until = this.replayUntil;
    if (until === undefined) return;
    this.replayUntil = undefined;
    const listedAt = until.toString();
    const goneFrom = how === 'gone' ? this.lastResourceVersion : undefined;
    if (goneFrom !== undefined) {
      const reached = numericVersion(goneFrom);
      if (reached === undefined || reached < until) this.lastResourceVersion = listedAt;
    }
    this.sink.replayEnded?.(how === 'complete', listedAt);
    this.sink.stateChanged({ phase: 'replayed', listedAt, ...(goneFrom !== undefined ? { goneFrom } : {}) });
  }

  /**
   * Hands a LIST page on: its items get the type's apiVersion and kind (items of a List carry none,
   * watch events do), so that an object seen by a LIST and by a WATCH compare equal. Returns the wait
   * the consumer asks for, if it does.
   */
  private handOn(items: KubeObject[]): Promise<void> | undefined {
    for (const item of items) {
      item.apiVersion ??= this.apiVersion;
      item.kind ??= this.options.type.kind;
    }
    this.sink.listPage(items);
    const pause = this.options.flowControl?.();
    return pause ? this.waitForConsumer(pause) : undefined;
  }

  /**
   * One WATCH from the last resourceVersion, until the server ends it or it fails. With `streamList`,
   * a streaming list: from the current state (resourceVersion '', read consistently), its initial
   * events handed on as a LIST's pages, then a watch like any other.
   */
  private async watch(
    stream: { streamList: true; onInitialEventsEnd: () => void } | undefined = undefined,
  ): Promise<void> {
    const min = this.timing.minWatchTimeoutSeconds;
    const timeoutSeconds = Math.floor(min + this.random() * min);
    if (stream) {
      this.endReplay('relisted');
      this.sink.stateChanged({ phase: 'listing' });
    }
    const request = new AbortController();
    this.currentWatch = request;
    /** relist() ended this watch: it simply ends, and the run loop lists. */
    const endedForRelist = () => request.signal.aborted && !this.stopped;
    let body: Readable;
    try {
      body = await this.source.watch({
        resourceVersion: stream ? '' : this.lastResourceVersion,
        ...(stream ? { sendInitialEvents: true } : {}),
        timeoutSeconds,
        idleTimeoutMs: this.timing.idleTimeoutMs,
        signal: AbortSignal.any([this.abort.signal, request.signal]),
      });
    } catch (error) {
      this.currentWatch = undefined;
      if (endedForRelist()) return;
      throw error;
    }
    if (stream) {
      this.sink.listStarted();
      this.initialEvents = [];
      this.onInitialEventsEnd = stream.onInitialEventsEnd;
    } else if (this.watchingSaid) {
      this.watchingSaid = false;
    } else {
      this.sink.stateChanged({ phase: 'watching' });
    }
    const lines = watchLines(body, {
      idleMs: this.timing.idleTimeoutMs,
      maxLineLength: this.source.maxReadBytes,
      server: this.source.server,
      path: this.path,
    });
    try {
      // Asked before the first line too: a plain watch begins right after a LIST, and the consumer may
      // want to finish with that LIST first (the state recorder commits its baseline).
      const first = stream ? undefined : this.options.flowControl?.();
      if (first) await this.waitForConsumer(first);
      for await (const line of lines) {
        if (request.signal.aborted) break;
        this.handleLine(line);
        // Asked for each line, but only awaited when the consumer wants a pause: most lines cost no promise.
        const pause = this.options.flowControl?.();
        if (pause) await this.waitForConsumer(pause);
        if (this.stopped || request.signal.aborted) break;
      }
    } catch (error) {
      if (endedForRelist()) return;
      if (error instanceof KubeError || this.stopped) throw error;
      throw brokenStream(error, this.source.server, this.path);
    } finally {
      this.currentWatch = undefined;
      body.destroy();
      this.initialEvents = undefined;
    }
    if (endedForRelist()) return;
    // The server ended the watch as asked: things work, forget earlier failures.
    this.backoff.reset();
  }

  /** Set for each streaming list: what to do when its initial events end. */
  private onInitialEventsEnd: () => void = () => {};

  /** Hands on the initial events received so far, as one page of the list. */
  private flushInitialEvents(): void {
    if (!this.initialEvents?.length) return;
    const items = this.initialEvents;
    this.initialEvents = [];
    this.sink.listPage(items);
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
        if (this.initialEvents) {
          // The initial state holds objects that exist: nothing but ADDED comes before its end.
          if (line.type !== 'ADDED') {
            throw new KubeError(
              'server',
              `the API server sent ${line.type} among the initial events of ${this.path}`,
              {
                path: this.path,
              },
            );
          }
          this.initialEvents.push(object);
          if (this.initialEvents.length >= this.timing.pageSize) this.flushInitialEvents();
          return;
        }
        this.lastResourceVersion = object.metadata.resourceVersion;
        if (this.replayUntil !== undefined) {
          const at = numericVersion(object.metadata.resourceVersion);
          if (at !== undefined && at <= this.replayUntil) {
            this.sink.replayEvent?.(line.type, object);
            return;
          }
          this.endReplay('complete');
        }
        this.sink.watchEvent(line.type, object);
        return;
      case 'BOOKMARK':
        if (this.initialEvents) {
          if (object.metadata.annotations?.[INITIAL_EVENTS_END] !== 'true')
            throw new StreamingIgnored(this.path);
          this.flushInitialEvents();
          this.initialEvents = undefined;
          this.lastResourceVersion = object.metadata.resourceVersion;
          this.sink.listCompleted(object.metadata.resourceVersion);
          this.onInitialEventsEnd();
          const replaying = this.startReplay(object.metadata.resourceVersion);
          this.sink.stateChanged({ phase: 'watching' });
          // The replay needs a watch of its own, from the replay point: this one ends here.
          if (replaying) {
            this.watchingSaid = true;
            this.currentWatch?.abort();
          }
          return;
        }
        this.lastResourceVersion = object.metadata.resourceVersion;
        if (this.replayUntil !== undefined) {
          const at = numericVersion(object.metadata.resourceVersion);
          if (at !== undefined && at >= this.replayUntil) this.endReplay('complete');
        }
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

/** A server that took sendInitialEvents for a plain watch (it predates streaming lists). */
class StreamingIgnored extends KubeError {
  constructor(path: string) {
    super(
      'request',
      `the API server does not stream the list of ${path} (a bookmark came before the initial events ended)`,
      {
        path,
      },
    );
  }
}

/**
 * Whether a failure of a streaming list means: read this collection with paged LISTs instead. A
 * refusal (400/422, the WatchList feature off), a server that ignored the request, or an object too
 * large to read (the paged LIST names it).
 */
function refusesStreaming(failure: KubeError): boolean {
  return (
    failure instanceof StreamingIgnored ||
    failure.kind === 'too-large' ||
    (failure.kind === 'request' && (failure.status === 400 || failure.status === 422))
  );
}

/**
 * A streaming list is served by the API server's watch cache, which answers 429 while it fills (for a
 * custom resource just created, or after the API server restarted). A paged LIST is served from etcd
 * meanwhile: this one relist takes it, at once, rather than wait or warn about a type that works.
 */
function cacheInitializing(failure: KubeError): boolean {
  return failure.kind === 'throttled' && /storage is \(re\)initializing/.test(failure.message);
}

function unexpected(error: unknown, path: string): KubeError {
  return new KubeError('server', error instanceof Error ? error.message : String(error), {
    path,
    cause: error,
  });
}
