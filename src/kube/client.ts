// The HTTP side of talking to one API server: JSON requests and watch streams for one cluster
// identity. Every request goes over one HTTP/2 connection (http2-pool.ts says why node:http2 and how
// a dead connection is found); a server or proxy that does not offer HTTP/2 in ALPN gets HTTP/1.1
// instead, with a bounded number of connections (http1-pool.ts). Credentials come from
// @kubernetes/client-node on each request, so rotated tokens and exec plugins keep working for months.
// Every read is bounded (maxReadBytes): no answer is read whole past it.
import type { Readable } from 'node:stream';
import type { Logger } from '../util/log.ts';
import { authHeaders, tlsSettings } from './credentials.ts';
import { errorFromResponse, errorFromTransport, KubeError } from './errors.ts';
import { Http2Pool, Http2Unavailable } from './http2-pool.ts';
import type { ClusterIdentity } from './kubeconfig.ts';
import { type ConnectionStats, type HttpMethod, readBody, type Transport } from './transport.ts';

export type Query = Record<string, string | number | boolean | undefined>;

/** One operation of a JSON Patch (RFC 6902), as patchJSON sends them. */
export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string };

export interface RequestOptions {
  query?: Query;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

export type JsonResponse<T> =
  | { notModified: false; body: T; etag: string | undefined; bytes: number }
  | { notModified: true };

/** How kubediff talks HTTP to the API server (docs/watching.md, "Tuning"). */
export interface HttpSettings {
  /** 'auto': HTTP/2, or HTTP/1.1 when the server does not offer HTTP/2; 'http/1.1': never HTTP/2. */
  protocol: 'auto' | 'http/1.1';
  /** HTTP/2: a connection that read nothing this long is sent a PING (client-go: 30 s). */
  readIdleMs: number;
  /** HTTP/2: a PING unanswered this long means the connection is dead (client-go: 15 s). */
  pingTimeoutMs: number;
  /** The most connections open to the API server at once. */
  maxConnections: number;
  /** The largest answer (a LIST page, a document) or watch event kubediff reads. */
  maxReadBytes: number;
}

const DEFAULT_HTTP: HttpSettings = {
  protocol: 'auto',
  readIdleMs: 30_000,
  pingTimeoutMs: 15_000,
  maxConnections: 256,
  maxReadBytes: 16 * 1024 * 1024,
};

export interface KubeClientOptions {
  http?: Partial<HttpSettings> | undefined;
  /** Where the one-time notices go (HTTP/1.1 fallback, connection limit reached). */
  log?: Logger | undefined;
}

const CONNECT_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 30_000;
/** Longest silence in the middle of an answer that is read whole. */
const BODY_IDLE_TIMEOUT_MS = 60_000;

export class KubeClient {
  readonly identity: ClusterIdentity;
  readonly server: string;
  readonly http: HttpSettings;
  private readonly log: Logger | undefined;
  private transport: Transport | undefined;
  private http1Fallback: Promise<void> | undefined;

  private constructor(identity: ClusterIdentity, options: KubeClientOptions) {
    this.identity = identity;
    this.server = identity.server;
    this.http = { ...DEFAULT_HTTP, ...options.http };
    this.log = options.log;
    const url = new URL(identity.server);
    // Plain http:// servers (rare, local) get HTTP/1.1: HTTP/2 without TLS is not offered by the API server.
    if (this.http.protocol === 'auto' && url.protocol === 'https:') {
      this.transport = new Http2Pool({
        server: url,
        tls: () => tlsSettings(identity),
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        readIdleMs: this.http.readIdleMs,
        pingTimeoutMs: this.http.pingTimeoutMs,
        maxConnections: this.http.maxConnections,
        log: options.log,
      });
    }
  }

  /** Connections are opened on the first request; TLS material is read for each new connection. */
  static async create(identity: ClusterIdentity, options: KubeClientOptions = {}): Promise<KubeClient> {
    const client = new KubeClient(identity, options);
    client.transport ??= await client.http1();
    return client;
  }

  /** The largest answer or watch event read (docs/watching.md, "Tuning": KUBEDIFF_MAX_READ_SIZE). */
  get maxReadBytes(): number {
    return this.http.maxReadBytes;
  }

  /** Connections to the API server, for the metrics. */
  connectionStats(): ConnectionStats {
    return this.usedTransport().stats();
  }

  /** GET a JSON document. With `etag`, a 304 answer is returned as `notModified`. */
  async getJSON<T>(
    path: string,
    options: RequestOptions & { etag?: string | undefined } = {},
  ): Promise<JsonResponse<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.etag) headers['if-none-match'] = options.etag;
    const response = await this.send('GET', path, { ...options, headers });
    if (response.status === 304) {
      response.body.resume();
      return { notModified: true };
    }
    const bytes = await this.read(response.body, path);
    const etag = response.headers.etag;
    return { notModified: false, body: this.parse<T>(bytes, path), etag, bytes: bytes.length };
  }

  /**
   * Opens a streaming GET (a watch) and returns its body once the server answered 200. The caller
   * reads it, and decides when a silence means a dead stream: `idleTimeoutMs` only bounds the wait
   * for the response headers, since the API server answers a watch at once.
   */
  async openStream(
    path: string,
    options: RequestOptions & { idleTimeoutMs?: number } = {},
  ): Promise<Readable> {
    const response = await this.send('GET', path, {
      ...options,
      headers: { accept: 'application/json', ...options.headers },
      headersTimeoutMs: Math.min(options.idleTimeoutMs ?? HEADERS_TIMEOUT_MS, HEADERS_TIMEOUT_MS),
      longLived: true,
    });
    return response.body;
  }

  /** POST a JSON document and read the JSON answer. */
  postJSON<T>(path: string, body: unknown, options: RequestOptions = {}): Promise<T> {
    return this.sendJSON<T>('POST', path, body, options);
  }

  /** PUT (replace) a JSON document and read the JSON answer; a stale resourceVersion is a 409 KubeError. */
  putJSON<T>(path: string, body: unknown, options: RequestOptions = {}): Promise<T> {
    return this.sendJSON<T>('PUT', path, body, options);
  }

  /**
   * PATCH with a JSON Patch (RFC 6902); a `test` of `/metadata/resourceVersion` first makes it conditional
   * (a stale one is a 422 KubeError).
   */
  patchJSON<T>(path: string, patch: readonly JsonPatchOperation[], options: RequestOptions = {}): Promise<T> {
    return this.sendJSON<T>('PATCH', path, patch, {
      ...options,
      headers: { 'content-type': 'application/json-patch+json', ...options.headers },
    });
  }

  /** Asks the server whether this identity may do `verb` on a resource (SelfSubjectAccessReview). */
  async canI(check: {
    verb: string;
    group: string;
    resource: string;
    namespace?: string | undefined;
  }): Promise<boolean> {
    const review = await this.postJSON<{ status?: { allowed?: boolean } }>(
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            verb: check.verb,
            group: check.group,
            resource: check.resource,
            ...(check.namespace ? { namespace: check.namespace } : {}),
          },
        },
      },
    );
    return review.status?.allowed === true;
  }

  async close(): Promise<void> {
    await this.transport?.close();
  }

  private async sendJSON<T>(
    method: 'POST' | 'PUT' | 'PATCH',
    path: string,
    body: unknown,
    options: RequestOptions,
  ): Promise<T> {
    const response = await this.send(method, path, {
      ...options,
      body: JSON.stringify(body),
      headers: { accept: 'application/json', 'content-type': 'application/json', ...options.headers },
    });
    return this.parse<T>(await this.read(response.body, path), path);
  }

  private async send(
    method: HttpMethod,
    path: string,
    options: RequestOptions & { body?: string; headersTimeoutMs?: number; longLived?: boolean },
  ) {
    const request = {
      method,
      path: path + queryString(options.query),
      headers: { ...(await authHeaders(this.identity)), ...options.headers },
      body: options.body,
      signal: options.signal,
      headersTimeoutMs: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      longLived: options.longLived ?? false,
    };
    let response: Awaited<ReturnType<Transport['request']>>;
    try {
      response = await this.usedTransport()
        .request(request)
        .catch(async (error: unknown) => {
          if (!(error instanceof Http2Unavailable)) throw error;
          await this.fallBackToHttp1(error);
          return this.usedTransport().request(request);
        });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw error instanceof KubeError ? error : errorFromTransport(error, this.server, path);
    }
    if (response.status >= 400) {
      const text = await this.read(response.body, path).then(
        (bytes) => bytes.toString('utf8'),
        () => '',
      );
      throw errorFromResponse(response.status, text, response.headers['retry-after'], path);
    }
    return response;
  }

  private read(body: Readable, path: string): Promise<Buffer> {
    return readBody(
      body,
      { maxBytes: this.http.maxReadBytes, idleMs: BODY_IDLE_TIMEOUT_MS },
      { server: this.server, path },
    ).catch((error: unknown) => {
      throw error instanceof KubeError ? error : errorFromTransport(error, this.server, path);
    });
  }

  private parse<T>(bytes: Buffer, path: string): T {
    try {
      return JSON.parse(bytes.toString('utf8')) as T;
    } catch (error) {
      throw new KubeError('server', `the API server sent a response that is not JSON for ${path}`, {
        path,
        cause: error,
      });
    }
  }

  /** Set by the constructor or by create(): there is always one once create() returned. */
  private usedTransport(): Transport {
    if (!this.transport) throw new Error('KubeClient used before create() finished');
    return this.transport;
  }

  /** undici (about 25 MiB) is imported only for a server that needs HTTP/1.1. */
  private async http1(): Promise<Transport> {
    const { Http1Pool } = await import('./http1-pool.ts');
    return new Http1Pool({
      server: new URL(this.identity.server),
      tls: () => tlsSettings(this.identity),
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      maxConnections: this.http.maxConnections,
      onSaturated: (message) => this.log?.warn(`${message}.`),
    });
  }

  /** Once per client: the server answered ALPN without h2. */
  private fallBackToHttp1(reason: Http2Unavailable): Promise<void> {
    this.http1Fallback ??= this.http1().then((http1) => {
      const previous = this.transport;
      this.transport = http1;
      void previous?.close();
      this.log?.info(
        `the API server at ${this.server} does not offer HTTP/2 (ALPN answered ${reason.negotiated}): using HTTP/1.1, one connection per watch, at most ${this.http.maxConnections} (KUBEDIFF_MAX_CONNECTIONS).`,
      );
    });
    return this.http1Fallback;
  }
}

function queryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
