// `kubediff ui` and `watch --ui`: the change history as a web page (docs/ui.md, its routes there).
// Read-only (GET and HEAD), loopback unless told otherwise, an optional bearer token on the API, strict
// headers on every answer. Every answer, connection and live stream is bounded; no visitor can stop or
// slow the watch beside it: a connection's errors stay with it (listener-guard.ts), a live stream not
// read is closed, and object answers and SQLite queries run in worker threads.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { durationFromEnvironment } from '../config/tuning.ts';
import type { UiObserver } from '../service/metrics/ui-metrics.ts';
import { ReaderBusy } from '../state/reader-busy.ts';
import type { HistoryFilter, TimelineReader } from '../state/timeline-reader.ts';
import { errorMessage } from '../util/errors.ts';
import { boundAddress, closeServer, createServer, listenOn } from '../util/http-server.ts';
import { guardedServerOptions, ListenerGuard, type ListenerLimits } from '../util/listener-guard.ts';
import type { Logger } from '../util/log.ts';
import { formatSize } from '../util/size.ts';
import { monotonicMs } from '../util/timestamp.ts';
import { type Asset, loadAssets } from './assets.ts';
import { checkExposure, type Exposure, isLoopback } from './exposure.ts';
import { type ObjectLimits, ObjectViews, ObjectViewTooSlow } from './object-view.ts';
import { BadRequest, historyFilter, integer, LIMITS, objectRef, rowKey, time } from './query.ts';

/** Documented in docs/ui.md ("Limits"). */
export const SERVER_LIMITS = {
  streams: 16,
  /** Events one stream is sent per query… */
  streamBatch: 500,
  /** …and at most this many queries per poll, while its client keeps up; the rest follow at the next. */
  streamBatchesPerPoll: 20,
  /** A stream whose client reads slower than this much unsent data is closed (it reconnects). */
  streamBufferBytes: 1024 * 1024,
} as const;

/** Documented in docs/ui.md ("Limits"). */
export const UI_LISTENER_LIMITS: ListenerLimits = {
  maxConnections: 64,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

/** A comment line this often keeps an idle live stream open through proxies. */
const HEARTBEAT_MS = 15_000;

export const UI_ROUTES = [
  'page',
  'asset',
  'facets',
  'timeline',
  'events',
  'object',
  'stream',
  'healthz',
  'other',
] as const;
export type UiRoute = (typeof UI_ROUTES)[number];

/** The route of a path, for metrics: a fixed set, whatever a client asks for. */
function routeOf(pathname: string, isAsset: boolean): UiRoute {
  if (pathname === '/') return 'page';
  if (isAsset) return 'asset';
  if (pathname === '/healthz') return 'healthz';
  const api = /^\/api\/v1\/(facets|timeline|events|object|stream)$/.exec(pathname)?.[1];
  return (api as UiRoute | undefined) ?? 'other';
}

export interface UiServerOptions extends Exposure {
  reader: TimelineReader;
  log: Logger;
  /** How often live streams look for new events. */
  pollIntervalMs?: number;
  /** The bounds of an object's answer (default OBJECT_LIMITS; tests make them small). */
  objectLimits?: Partial<ObjectLimits>;
  /** Where KUBEDIFF_UI_HEARTBEAT is read (docs/watching.md, "Tuning"); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

interface Stream {
  response: ServerResponse;
  filter: HistoryFilter;
  after: number;
}

export class UiServer {
  private readonly server: Server;
  private readonly options: UiServerOptions;
  private readonly assets: Map<string, Asset>;
  private readonly tokenDigest: Buffer | undefined;
  private readonly loopbackOnly: boolean;
  private readonly streams = new Set<Stream>();
  private readonly views: ObjectViews;
  private readonly heartbeatMs: number;
  /** Its connections' guard (limits, contained errors), read by the metrics. */
  readonly listener: ListenerGuard;
  private poller: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private warnedStreams = false;
  private warnedQueue = false;
  private warnedSlowStream = false;
  private warnedSlowObject = false;
  private polling = false;
  /** Live streams admitted and still looking up where they start (counted against the limit). */
  private openingStreams = 0;
  private observer: UiObserver | undefined;

  private constructor(server: Server, options: UiServerOptions, loopbackOnly: boolean) {
    const env = options.env ?? process.env;
    this.server = server;
    this.options = options;
    this.assets = loadAssets();
    this.tokenDigest = options.token ? digest(options.token) : undefined;
    this.loopbackOnly = loopbackOnly;
    this.views = new ObjectViews({ limits: options.objectLimits });
    this.heartbeatMs = durationFromEnvironment('KUBEDIFF_UI_HEARTBEAT', env) ?? HEARTBEAT_MS;
    this.listener = ListenerGuard.attach(server, 'ui', UI_LISTENER_LIMITS, options.log);
  }

  /** Listens on `address` ([host]:port); a UsageError when it cannot, or when it would expose the history. */
  static async start(address: string, options: UiServerOptions): Promise<UiServer> {
    const flag = options.flag ?? '--listen';
    const loopbackOnly = checkExposure(address, options);
    // The filters' values, computed once before the first page asks (seconds on a million events).
    await options.reader.facets();
    const server = createServer(guardedServerOptions(UI_LISTENER_LIMITS));
    const ui = new UiServer(server, options, loopbackOnly);
    server.on('request', (request, response) => {
      void ui.handle(request, response);
    });
    await listenOn(server, address, flag);
    if (!ui.loopbackOnly && !options.token) {
      options.log.warn(
        `the UI on ${address} is reachable from other machines and has no token (${options.allowNoTokenFlag ?? '--allow-no-token'}): anyone who reaches the port reads the change history.`,
      );
    }
    options.log.info(`serving the change history on http://${ui.address}/`);
    return ui;
  }

  /** host:port actually bound. */
  get address(): string {
    return boundAddress(this.server);
  }

  /** Live streams open now (a gauge of the metrics). */
  get liveStreams(): number {
    return this.streams.size;
  }

  /** Reports every answer to `observer` from now on (the metrics, once they exist). */
  observe(observer: UiObserver): void {
    this.observer = observer;
  }

  async close(): Promise<void> {
    clearInterval(this.poller);
    clearInterval(this.heartbeat);
    for (const stream of this.streams) stream.response.end();
    this.streams.clear();
    await Promise.all([closeServer(this.server), this.views.close()]);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = monotonicMs();
    let route: UiRoute = 'other';
    response.on('finish', () =>
      this.observer?.answered(route, response.statusCode, (monotonicMs() - started) / 1000),
    );
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    const method = request.method ?? 'GET';
    const rawUrl = request.url ?? '/';
    try {
      if (method !== 'GET' && method !== 'HEAD') {
        response.setHeader('allow', 'GET, HEAD');
        sendJson(response, 405, { error: 'the UI is read-only: only GET and HEAD are served.' });
        return;
      }
      if (rawUrl.length > LIMITS.url) {
        sendJson(response, 414, { error: `the URL is longer than ${LIMITS.url} characters.` });
        return;
      }
      // DNS rebinding: a page of another site whose name resolves to 127.0.0.1 must not read loopback.
      if (this.loopbackOnly && !isLoopback(hostnameOf(request.headers.host))) {
        sendJson(response, 421, { error: 'this UI answers only to a loopback host name.' });
        return;
      }
      const url = new URL(rawUrl, 'http://ui.invalid');
      const asset = this.assets.get(url.pathname);
      route = routeOf(url.pathname, asset !== undefined);
      if (asset) {
        sendAsset(request, response, asset);
        return;
      }
      if (url.pathname === '/healthz') {
        sendText(response, 200, 'ok\n');
        return;
      }
      if (url.pathname === '/favicon.ico') {
        response.writeHead(204).end();
        return;
      }
      if (!url.pathname.startsWith('/api/v1/')) {
        sendJson(response, 404, { error: `no such page: ${url.pathname}` });
        return;
      }
      if (!this.authorized(request)) {
        response.setHeader('www-authenticate', 'Bearer realm="kubediff"');
        sendJson(response, 401, {
          error:
            'this UI needs its token: open it as http://host:port/#token=<token>, or send Authorization: Bearer <token>.',
        });
        return;
      }
      await this.api(url, response);
    } catch (error) {
      if (error instanceof BadRequest) {
        sendJson(response, 400, { error: error.message });
        return;
      }
      if (error instanceof ReaderBusy) {
        this.refuseBusy(response, error);
        return;
      }
      if (error instanceof ObjectViewTooSlow) {
        this.refuseSlowObject(response, error);
        return;
      }
      this.options.log.warn(`ui: ${pathOf(rawUrl)}: ${errorMessage(error)}`);
      if (!response.headersSent) sendJson(response, 500, { error: 'internal error (logged by kubediff).' });
      else response.destroy();
    }
  }

  private authorized(request: IncomingMessage): boolean {
    if (!this.tokenDigest) return true;
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    return match !== null && timingSafeEqual(digest(match[1]!), this.tokenDigest);
  }

  /** The reader's queue is full: 503, counted, said once. */
  private refuseBusy(response: ServerResponse, error: ReaderBusy): void {
    this.observer?.rejected('queue');
    if (!this.warnedQueue) {
      this.warnedQueue = true;
      this.options.log.warn(`ui: ${error.message} Further requests are refused with 503 (logged once).`);
    }
    response.setHeader('retry-after', '1');
    sendJson(response, 503, { error: 'the history is busy answering other queries; retry shortly.' });
  }

  /** An object's answer took too long to build: 503, counted, said once. */
  private refuseSlowObject(response: ServerResponse, error: ObjectViewTooSlow): void {
    this.observer?.rejected('time');
    if (!this.warnedSlowObject) {
      this.warnedSlowObject = true;
      this.options.log.warn(`ui: ${error.message} Such requests are answered 503 (logged once).`);
    }
    sendJson(response, 503, { error: error.message });
  }

  private async api(url: URL, response: ServerResponse): Promise<void> {
    const { reader } = this.options;
    const params = url.searchParams;
    switch (url.pathname) {
      case '/api/v1/facets':
        sendJson(response, 200, await reader.facets());
        return;
      case '/api/v1/events': {
        const limit = integer(params, 'limit', { min: 1, max: LIMITS.pageMax, fallback: LIMITS.pageDefault });
        const before = integer(params, 'before', { min: 1, max: Number.MAX_SAFE_INTEGER });
        sendJson(response, 200, await reader.events(historyFilter(params), { limit, before }));
        return;
      }
      case '/api/v1/timeline': {
        const from = time(params, 'from');
        const to = time(params, 'to');
        if (!from || !to || from >= to) throw new BadRequest('a timeline needs from and to, from before to.');
        const timeline = await reader.timeline(historyFilter(params), {
          from,
          to,
          rows: rowKey(params),
          buckets: integer(params, 'buckets', {
            min: 1,
            max: LIMITS.bucketsMax,
            fallback: LIMITS.bucketsDefault,
          }),
          maxMarks: LIMITS.marks,
          maxRows: integer(params, 'maxRows', { min: 1, max: LIMITS.rowsMax, fallback: LIMITS.rowsDefault }),
        });
        sendJson(response, 200, timeline);
        return;
      }
      case '/api/v1/object': {
        const limit = integer(params, 'limit', {
          min: 1,
          max: LIMITS.objectEventsMax,
          fallback: LIMITS.objectEventsDefault,
        });
        const wanted = ['a', 'b'].flatMap((name) => {
          const seq = integer(params, name, { min: 1, max: Number.MAX_SAFE_INTEGER });
          return seq === undefined ? [] : [seq];
        });
        const ref = objectRef(params);
        const read = () => reader.objectRecords(ref, { limit, maxBytes: this.views.maxBytes });
        sendBytes(response, 200, await this.views.render(read, wanted));
        return;
      }
      case '/api/v1/stream':
        await this.openStream(params, response);
        return;
      default:
        sendJson(response, 404, { error: `no such API: ${url.pathname}` });
        return;
    }
  }

  private async openStream(params: URLSearchParams, response: ServerResponse): Promise<void> {
    // Streams still looking up where they start count too: the limit holds while they wait.
    if (this.streams.size + this.openingStreams >= SERVER_LIMITS.streams) {
      this.observer?.rejected('streams');
      if (!this.warnedStreams) {
        this.warnedStreams = true;
        this.options.log.warn(
          `ui: ${SERVER_LIMITS.streams} live streams are open, the most served; further pages get no live updates until one closes.`,
        );
      }
      response.setHeader('retry-after', '10');
      sendJson(response, 503, { error: `at most ${SERVER_LIMITS.streams} live streams are served.` });
      return;
    }
    const filter = historyFilter(params);
    let after = integer(params, 'after', { min: 0, max: Number.MAX_SAFE_INTEGER });
    if (after === undefined) {
      this.openingStreams++;
      try {
        after = await this.options.reader.latestSeq();
      } finally {
        this.openingStreams--;
      }
    }
    // A page that left while the lookup ran: nothing to serve, and no close event to come.
    if (response.destroyed || response.writableEnded) return;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    response.write(': kubediff live\n\n');
    const stream: Stream = { response, filter, after };
    this.streams.add(stream);
    response.on('close', () => this.streams.delete(stream));
    this.poller ??= setInterval(() => {
      void this.poll();
    }, this.options.pollIntervalMs ?? 500);
    this.heartbeat ??= setInterval(() => {
      for (const open of [...this.streams]) this.send(open, ': ping\n\n');
    }, this.heartbeatMs);
  }

  /** Writes to a live stream that is still open (see open()). */
  private send(stream: Stream, text: string): void {
    if (this.open(stream)) stream.response.write(text);
  }

  /**
   * Whether a live stream is still open; one whose client left SERVER_LIMITS.streamBufferBytes unread
   * is closed now (its page reconnects and resumes from its last event) and forgotten here, so that
   * nothing writes to it again.
   */
  private open(stream: Stream): boolean {
    const { response } = stream;
    if (!this.streams.has(stream) || response.writableEnded || response.destroyed) {
      this.streams.delete(stream);
      return false;
    }
    if (response.writableLength > SERVER_LIMITS.streamBufferBytes) {
      this.streams.delete(stream);
      response.destroy();
      this.observer?.rejected('stream_buffer');
      if (!this.warnedSlowStream) {
        this.warnedSlowStream = true;
        this.options.log.warn(
          `ui: a live stream's client left more than ${formatSize(SERVER_LIMITS.streamBufferBytes)} unread; it is closed (its page reconnects and resumes). Counted in kubediff_ui_rejected_total{limit="stream_buffer"}; logged once.`,
        );
      }
      return false;
    }
    return true;
  }

  /**
   * One look at the history for every live stream: a cheap max(seq) first, the filtered queries only
   * then. A stream that is behind (a page resuming) is sent batch after batch, up to
   * streamBatchesPerPoll; one whose client does not read them as fast is closed by open() (the page
   * reconnects and resumes from its last event).
   * One look at a time: a slow store skips the ticks that come while it answers.
   */
  private async poll(): Promise<void> {
    if (this.polling) return;
    if (this.streams.size === 0) {
      clearInterval(this.poller);
      clearInterval(this.heartbeat);
      this.poller = undefined;
      this.heartbeat = undefined;
      return;
    }
    this.polling = true;
    try {
      const latest = await this.options.reader.latestSeq();
      for (const stream of [...this.streams]) {
        for (let batch = 0; batch < SERVER_LIMITS.streamBatchesPerPoll; batch++) {
          if (!this.open(stream) || stream.after >= latest) break;
          const events = await this.options.reader.after(
            stream.after,
            stream.filter,
            SERVER_LIMITS.streamBatch,
          );
          if (!this.streams.has(stream)) break; // closed while the query ran
          const more = events.length === SERVER_LIMITS.streamBatch;
          // Events committed after `latest` was read may be in this batch: never go back before them.
          const last = events.at(-1)?.seq ?? latest;
          stream.after = more ? last : Math.max(latest, last);
          if (events.length > 0)
            this.send(stream, `event: events\nid: ${stream.after}\ndata: ${JSON.stringify(events)}\n\n`);
          if (!more) break;
        }
      }
    } catch (error) {
      // A full queue: the streams wait for the next tick (their `after` is unchanged).
      if (!(error instanceof ReaderBusy)) this.options.log.warn(`ui: live updates: ${errorMessage(error)}`);
    } finally {
      this.polling = false;
    }
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function hostnameOf(host: string | undefined): string | undefined {
  if (!host) return undefined;
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon >= 0 ? host.slice(0, colon) : host;
}

/** The path alone, for logs: filter values can be names a user typed. */
function pathOf(raw: string): string {
  return raw.split('?')[0] ?? raw;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  response.end(text);
}

function sendBytes(response: ServerResponse, status: number, body: Uint8Array): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': body.byteLength,
  });
  response.end(body);
}

function sendText(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  response.end(text);
}

function sendAsset(request: IncomingMessage, response: ServerResponse, asset: Asset): void {
  response.setHeader('etag', asset.etag);
  response.setHeader('cache-control', 'no-cache');
  if (request.headers['if-none-match'] === asset.etag) {
    response.writeHead(304).end();
    return;
  }
  response.writeHead(200, { 'content-type': asset.contentType, 'content-length': asset.body.length });
  response.end(request.method === 'HEAD' ? undefined : asset.body);
}
