// A collection (src/kube/lister-watcher.ts) that a test answers by hand, for the reflector's and the
// informer's unit tests: each LIST page and each WATCH is answered by the next answer the test queued,
// and a watch is a stream the test writes watch events into and ends (the server ending the watch) or
// breaks. Everything is in memory: these tests run in milliseconds, with node:test's mock timers
// standing in for the backoff's and the idle timeout's delays. The real API server's behaviour is
// tested in test/integration/.
import { PassThrough, type Readable } from 'node:stream';
import type { ListerWatcher, ListOptions, ListPage, WatchOptions } from '../../src/kube/lister-watcher.ts';
import type { KubeObject } from '../../src/kube/types.ts';

export type ListAnswer = ListPage | Error | ((options: ListOptions) => ListPage | Error);

/** A watch the test drives. */
export class FakeWatch {
  readonly options: WatchOptions;
  readonly body = new PassThrough();

  constructor(options: WatchOptions) {
    this.options = options;
  }

  /** One watch event, as the API server writes it (one JSON line). */
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', object: KubeObject): void {
    this.body.write(`${JSON.stringify({ type, object })}\n`);
  }

  /** The bookmark that ends a streaming list's initial events (sendInitialEvents). */
  endInitialEvents(resourceVersion: string): void {
    this.send('BOOKMARK', {
      metadata: { resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
    } as unknown as KubeObject);
  }

  /** An ERROR event with this HTTP status (410 Gone: the resourceVersion expired). */
  sendError(code: number, message = 'error'): void {
    this.body.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code, message } })}\n`);
  }

  /** The server ends the watch as asked (timeoutSeconds). */
  end(): void {
    this.body.end();
  }

  /** The connection breaks. */
  break(): void {
    this.body.destroy(new Error('socket hang up'));
  }
}

export class FakeCollection implements ListerWatcher {
  readonly server = 'https://api.test.invalid';
  readonly path = '/api/v1/configmaps';
  readonly maxReadBytes: number;
  /** Every LIST and WATCH asked for, in order. */
  readonly lists: ListOptions[] = [];
  readonly watches: FakeWatch[] = [];
  /** Every whole LIST asked for (no limit: after a continue token expired). */
  readonly wholeLists: PassThrough[] = [];
  private readonly listAnswers: ListAnswer[] = [];
  private readonly watchAnswers: (Error | undefined)[] = [];

  constructor(options: { maxReadBytes?: number } = {}) {
    this.maxReadBytes = options.maxReadBytes ?? 16 * 1024 * 1024;
  }

  /** Queues the answer of the next LIST page. */
  answerList(...answers: ListAnswer[]): this {
    this.listAnswers.push(...answers);
    return this;
  }

  /** Queues a failure of the next WATCH request (before any event). */
  failWatch(error: Error): this {
    this.watchAnswers.push(error);
    return this;
  }

  async list(options: ListOptions): Promise<ListPage> {
    this.lists.push(options);
    const next = this.listAnswers.shift();
    if (next === undefined) return new Promise(() => {}); // never answered: the test did not expect it
    const answer = typeof next === 'function' ? next(options) : next;
    if (answer instanceof Error) throw answer;
    return answer;
  }

  /** The whole LIST: a body the test writes (wholeList() writes a List and ends it). */
  async listWhole(options: { signal: AbortSignal }): Promise<Readable> {
    const body = new PassThrough();
    options.signal.addEventListener('abort', () => body.destroy(), { once: true });
    this.wholeLists.push(body);
    return body;
  }

  async watch(options: WatchOptions): Promise<Readable> {
    const failure = this.watchAnswers.shift();
    if (failure) throw failure;
    const watch = new FakeWatch(options);
    options.signal.addEventListener('abort', () => watch.body.destroy(), { once: true });
    this.watches.push(watch);
    return watch.body;
  }
}

/**
 * Writes a whole List into `body`, as the API server does, in chunks of `chunk` characters (so that items
 * and strings are cut across chunks), and ends it.
 */
export function wholeList(body: PassThrough, resourceVersion: string, items: KubeObject[], chunk = 7): void {
  const text = JSON.stringify({
    kind: 'ConfigMapList',
    apiVersion: 'v1',
    metadata: { resourceVersion },
    items: items.map(({ apiVersion: _apiVersion, kind: _kind, ...rest }) => rest),
  });
  for (let start = 0; start < text.length; start += chunk) body.write(text.slice(start, start + chunk));
  body.end();
}

/** A page of a LIST: these objects, at this resourceVersion, maybe with a continue token. */
export function page(resourceVersion: string, items: KubeObject[], next?: string): ListPage {
  return {
    metadata: { resourceVersion, ...(next ? { continue: next } : {}) },
    items,
    bytes: JSON.stringify(items).length,
  };
}

/** A ConfigMap as the API server serves it in a watch event (LIST items carry no apiVersion/kind). */
export function configMap(
  name: string,
  resourceVersion: string,
  data: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'shop', uid: `uid-${name}`, resourceVersion },
    data,
  };
}

/** Lets promise callbacks and stream reads run: the reflector's work between two timer ticks. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}
