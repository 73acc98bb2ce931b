// Reads a whole collection with a paged LIST, as client-go's pager does, handing on one page at a time
// (never the whole collection in memory). Pages stay near a quarter of the read limit (a page over it is
// asked again smaller; one object over it alone fails the LIST, by name). An expired continue token (410
// after the first page) reads the list whole in one streamed request, item by item (each item bounded),
// as client-go's FullListIfExpired does. That and a LIST slower than slowListWarnMs report their progress.
import { brokenStream, KubeError } from './errors.ts';
import { listItems } from './list-stream.ts';
import type { ListerWatcher, ListPage } from './lister-watcher.ts';
import { ResponseTooLarge } from './transport.ts';
import { type KubeObject, objectKey } from './types.ts';
import { objectTooLarge } from './watch-stream.ts';

/** How far a LIST has come, when it is slow or read whole (for the log). */
export interface ListProgress {
  /**
   * 'expired': its continue token expired (etcd compacted past the list's resourceVersion), so it is
   * read whole from now on; 'slow': it has been listing for slowListWarnMs.
   */
  reason: 'expired' | 'slow';
  pages: number;
  objects: number;
  elapsedMs: number;
  /** Being read whole, in one request (after its continue token expired). */
  whole: boolean;
}

export interface ListPagerOptions {
  /** Objects per page, at most (pages shrink when they are large); a whole list is handed on in pages of it. */
  pageSize: number;
  /** Silence after which the connection of a whole list is taken as dead. */
  idleTimeoutMs: number;
  /** A LIST that has taken this long is reported, with its progress (once per LIST). */
  slowListWarnMs: number;
}

/**
 * Who receives a LIST: its items in order, page by page. Pages handed on before `started()` is called
 * again are superseded (an expired continue token: the list is read anew, whole).
 */
export interface PageHandler {
  /** The LIST begins, or begins anew. */
  started(): void;
  /** One page of items; a promise: the pager reads nothing more until it settles (backpressure). */
  page(items: KubeObject[]): Promise<void> | undefined;
  /** How far a slow or expired LIST has come. */
  progress(progress: ListProgress): void;
}

export class ListPager {
  private readonly source: ListerWatcher;
  private readonly options: ListPagerOptions;
  /** Objects asked per page: pageSize, less while this collection's pages are large. */
  private pageLimit: number;

  constructor(source: ListerWatcher, options: ListPagerOptions) {
    this.source = source;
    this.options = options;
    this.pageLimit = options.pageSize;
  }

  /**
   * Lists the collection into `handler`; resolves with the list's resourceVersion, or undefined when
   * `signal` aborted it (no further page is handed on then). Rejects with a KubeError when it fails.
   */
  async list(handler: PageHandler, signal: AbortSignal): Promise<string | undefined> {
    handler.started();
    const progress = new ListTracker(handler, this.options.slowListWarnMs);
    const targetBytes = this.source.maxReadBytes / 4;
    let continueToken: string | undefined;
    let resourceVersion = '';
    for (;;) {
      let page: ListPage;
      try {
        page = await this.source.list({ limit: this.pageLimit, continue: continueToken, signal });
      } catch (error) {
        if (continueToken !== undefined && error instanceof KubeError && error.kind === 'gone') {
          progress.report('expired');
          return this.listWhole(handler, progress, signal);
        }
        if (!(error instanceof ResponseTooLarge)) throw error;
        if (this.pageLimit === 1) throw await this.tooLarge(continueToken, error.limitBytes, signal);
        this.pageLimit = Math.max(1, Math.floor(this.pageLimit / 8));
        continue;
      }
      const items = page.items ?? [];
      this.adaptPageLimit(items.length, page.bytes, targetBytes);
      if (signal.aborted) return undefined;
      progress.pages++;
      await handOn(items, handler, progress);
      if (signal.aborted) return undefined;
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      if (!continueToken) return resourceVersion;
    }
  }

  /** The whole LIST in one request, read item by item as it streams, handed on pageSize at a time. */
  private async listWhole(
    handler: PageHandler,
    progress: ListTracker,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    progress.whole = true;
    handler.started();
    const { source } = this;
    const body = await source.listWhole({ signal, idleTimeoutMs: this.options.idleTimeoutMs });
    const items = listItems(body, {
      idleMs: this.options.idleTimeoutMs,
      maxItemLength: source.maxReadBytes,
      server: source.server,
      path: source.path,
    });
    let batch: KubeObject[] = [];
    let resourceVersion: string;
    try {
      for (;;) {
        const next = await items.next();
        if (next.done) {
          resourceVersion = next.value.resourceVersion;
          break;
        }
        batch.push(next.value);
        if (batch.length < this.options.pageSize) continue;
        await handOn(batch, handler, progress);
        batch = [];
        if (signal.aborted) return undefined;
      }
    } catch (error) {
      if (error instanceof KubeError || signal.aborted) throw error;
      throw brokenStream(error, source.server, source.path);
    } finally {
      body.destroy();
    }
    if (signal.aborted) return undefined;
    if (batch.length > 0) await handOn(batch, handler, progress);
    return resourceVersion;
  }

  private adaptPageLimit(count: number, bytes: number, targetBytes: number): void {
    if (bytes > targetBytes && count > 1) {
      this.pageLimit = Math.max(1, Math.floor((count * targetBytes) / bytes));
    } else if (bytes < targetBytes / 4 && count >= this.pageLimit) {
      this.pageLimit = Math.min(this.options.pageSize, this.pageLimit * 2);
    }
  }

  /** The error for one object too large to read: its name comes from a metadata-only LIST of it. */
  private async tooLarge(
    continueToken: string | undefined,
    limitBytes: number,
    signal: AbortSignal,
  ): Promise<KubeError> {
    let name: string | undefined;
    try {
      const page = await this.source.list({ limit: 1, continue: continueToken, metadataOnly: true, signal });
      const metadata = page.items?.[0]?.metadata;
      if (metadata) name = objectKey(metadata);
    } catch {
      // The error below says enough without the name.
    }
    return objectTooLarge(name, limitBytes, this.source.path);
  }
}

/** Hands a page on, waits while the handler asks, notes the progress. */
async function handOn(items: KubeObject[], handler: PageHandler, progress: ListTracker): Promise<void> {
  const pause = handler.page(items);
  progress.objects += items.length;
  if (pause) await pause;
  progress.noteTime();
}

/** One LIST's progress: reported when it expires, and once when it has been slow. */
class ListTracker {
  pages = 0;
  objects = 0;
  whole = false;
  private readonly handler: PageHandler;
  private readonly slowMs: number;
  private readonly started = Date.now();
  private warned = false;

  constructor(handler: PageHandler, slowMs: number) {
    this.handler = handler;
    this.slowMs = slowMs;
  }

  report(reason: ListProgress['reason']): void {
    this.handler.progress({
      reason,
      pages: this.pages,
      objects: this.objects,
      elapsedMs: Date.now() - this.started,
      whole: this.whole,
    });
  }

  /** Reports 'slow' once the LIST has taken slowMs. */
  noteTime(): void {
    if (this.warned || Date.now() - this.started < this.slowMs) return;
    this.warned = true;
    this.report('slow');
  }
}
