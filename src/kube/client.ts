// The HTTP side of talking to one API server. One undici Agent (one pool of
// keep-alive connections) per cluster identity, shared by discovery, every
// LIST and every WATCH. Credentials come from @kubernetes/client-node on each
// request, so rotated tokens and exec plugins keep working for months.
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { errorFromResponse, errorFromTransport, KubeError } from './errors.ts';
import type { ClusterIdentity } from './kubeconfig.ts';

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Longest silence allowed between two chunks of the body (ms). */
  bodyTimeoutMs?: number;
}

export type JsonResponse<T> =
  | { notModified: false; body: T; etag: string | undefined }
  | { notModified: true };

interface HttpsOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
  headers?: Record<string, string | number | string[]>;
  auth?: string;
}

const CONNECT_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 30_000;
const DEFAULT_BODY_TIMEOUT_MS = 60_000;

export class KubeClient {
  readonly identity: ClusterIdentity;
  readonly server: string;
  private readonly agent: Agent;

  private constructor(identity: ClusterIdentity, agent: Agent) {
    this.identity = identity;
    this.server = identity.server;
    this.agent = agent;
  }

  /** Reads the TLS material of the identity once and opens the connection pool. */
  static async create(identity: ClusterIdentity): Promise<KubeClient> {
    const tls = await httpsOptionsOf(identity);
    const agent = new Agent({
      connect: {
        timeout: CONNECT_TIMEOUT_MS,
        ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
        ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
        ...(tls.key !== undefined ? { key: tls.key } : {}),
        ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
        ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
        keepAlive: true,
        keepAliveInitialDelay: 30_000,
      },
      keepAliveTimeout: 30_000,
      headersTimeout: HEADERS_TIMEOUT_MS,
      // HTTP/1.1: one connection per watch. Over HTTP/2 (undici's default) all watches share one
      // session, and Node's HTTP/2 session does not reliably notice a connection reset by the
      // server: half the time every watch then sits silent until the idle timeout
      // (90 s), even with PING frames. A reset HTTP/1.1 socket fails its watch at once.
      // (test/integration/watch-faults.test.ts, "cut and refused".)
      allowH2: false,
    });
    return new KubeClient(identity, agent);
  }

  /** GET a JSON document. With `etag`, a 304 answer is returned as `notModified`. */
  async getJSON<T>(
    path: string,
    options: RequestOptions & { etag?: string | undefined } = {},
  ): Promise<JsonResponse<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.etag) headers['if-none-match'] = options.etag;
    const response = await this.send(path, { ...options, headers });
    if (response.statusCode === 304) {
      await response.body.dump();
      return { notModified: true };
    }
    const text = await readText(response.body, this.server, path);
    try {
      const etag = response.headers.etag;
      return {
        notModified: false,
        body: JSON.parse(text) as T,
        etag: typeof etag === 'string' ? etag : undefined,
      };
    } catch (error) {
      throw new KubeError('server', `the API server sent a response that is not JSON for ${path}`, {
        path,
        cause: error,
      });
    }
  }

  /** Opens a streaming GET (a watch) and returns its body once the server answered 200. */
  async openStream(path: string, options: RequestOptions = {}): Promise<Readable> {
    const response = await this.send(path, {
      ...options,
      headers: { accept: 'application/json', ...options.headers },
      // The API server answers a watch at once: waiting longer than the allowed silence for its
      // headers is the same dead connection as a silent body.
      headersTimeoutMs: Math.min(options.bodyTimeoutMs ?? HEADERS_TIMEOUT_MS, HEADERS_TIMEOUT_MS),
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

  private async sendJSON<T>(
    method: 'POST' | 'PUT',
    path: string,
    body: unknown,
    options: RequestOptions,
  ): Promise<T> {
    const response = await this.send(path, {
      ...options,
      method,
      body: JSON.stringify(body),
      headers: { accept: 'application/json', 'content-type': 'application/json', ...options.headers },
    });
    return JSON.parse(await readText(response.body, this.server, path)) as T;
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }

  private async send(
    path: string,
    options: RequestOptions & { method?: 'GET' | 'POST' | 'PUT'; body?: string; headersTimeoutMs?: number },
  ) {
    const url = this.server + path + queryString(options.query);
    const headers = { ...(await authHeaders(this.identity)), ...options.headers };
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, {
        dispatcher: this.agent,
        method: options.method ?? 'GET',
        headers,
        ...(options.body !== undefined ? { body: options.body } : {}),
        signal: options.signal ?? null,
        bodyTimeout: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
        headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      throw errorFromTransport(error, this.server, path);
    }
    if (response.statusCode >= 400) {
      const text = await readText(response.body, this.server, path).catch(() => '');
      const retryAfter = response.headers['retry-after'];
      throw errorFromResponse(
        response.statusCode,
        text,
        typeof retryAfter === 'string' ? retryAfter : undefined,
        path,
      );
    }
    return response;
  }
}

async function readText(
  body: Readable & { text(): Promise<string> },
  server: string,
  path: string,
): Promise<string> {
  try {
    return await body.text();
  } catch (error) {
    throw errorFromTransport(error, server, path);
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

async function httpsOptionsOf(identity: ClusterIdentity): Promise<HttpsOptions> {
  const options: HttpsOptions = {};
  await identity.kubeConfig.applyToHTTPSOptions(options);
  return options;
}

/** The authentication headers for the next request: client-node refreshes tokens as needed. */
async function authHeaders(identity: ClusterIdentity): Promise<Record<string, string>> {
  const options = await httpsOptionsOf(identity);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  if (options.auth && !headers.authorization) {
    headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
  }
  return headers;
}
