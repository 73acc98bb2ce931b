// One HTTP POST to a receiver, and what to make of the answer: delivered,
// worth retrying (network trouble, timeouts, 408, 425, 429, 5xx, with the
// server's Retry-After), or refused for good (other 4xx, redirects).
// Receiver URLs are credentials (a chat platform's webhook URL is one): they appear in
// logs and errors only as scheme and host, the path elided. An answer is
// scrubbed of the sink's credentials (util/credentials.ts) as it is read.

import { Agent, type Dispatcher, EnvHttpProxyAgent, request } from 'undici';
import type { Credentials } from '../../util/credentials.ts';
import { formatDuration } from '../../util/duration.ts';
import type { Env } from '../../util/environment.ts';
import { scrubUrl } from '../../util/url.ts';

export type PostOutcome =
  | {
      ok: true;
      status: number;
      body: string /** The same body as bytes (a protobuf answer), not scrubbed: parse, never quote. */;
      bytes: Buffer;
    }
  | {
      ok: false;
      /** Trying again later may work. */
      retryable: boolean;
      /** The request was cut short by the caller (shutdown), not by the receiver. */
      aborted: boolean;
      status?: number;
      retryAfterMs?: number;
      /** One phrase: 'HTTP 500 Internal Server Error: "oops"', 'connection refused', 'no response within 10s'. */
      reason: string;
      /** Without an answer: what went wrong, as a code ('ECONNREFUSED', 'timeout'): see failureKey(). */
      code?: string;
      /** The response body, at most BODY_LIMIT (or options.maxResponseBytes) bytes of it. */
      body?: string;
    };

export interface PostOptions {
  /** content-type is application/json unless given here. */
  headers: Record<string, string>;
  /**
   * The sink's credentials: scrubbed from the answer (and a transport error's message) before anything
   * quotes it, cuts it to an excerpt or parses it, so that a receiver echoing the request leaks none.
   */
  credentials: Credentials;
  timeoutMs: number;
  /** Aborts the request (shutdown). */
  signal?: AbortSignal;
  /** How much of the answer is read; default BODY_LIMIT (an OpenSearch _bulk answer needs more). */
  maxResponseBytes?: number;
  /** Default POST (PUT for an OpenSearch index template). */
  method?: 'POST' | 'PUT';
}

/** How much of a response body is read; the rest is discarded. */
const BODY_LIMIT = 64 * 1024;
const EXCERPT_CHARS = 200;
/** A Retry-After longer than this is taken as this: a receiver should not silence a sink for a day. */
const MAX_RETRY_AFTER_MS = 10 * 60_000;

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];

/** How to check a receiver's certificate and which one to present (PEM texts), beyond the defaults. */
export interface HttpTls {
  /** The CA(s) the receiver's certificate is checked against; default: the system's. */
  ca?: string;
  /** A client certificate and its key, for receivers that ask for one. */
  cert?: string;
  key?: string;
  /** The name the certificate is checked against, when it is not the host dialled. */
  serverName?: string;
}

/**
 * A connection pool for one receiver. When HTTPS_PROXY or HTTP_PROXY is set (clusters whose egress goes
 * through a proxy), requests go through it, except to hosts in NO_PROXY.
 */
export function createAgent(timeoutMs: number, env: Env = process.env, tls?: HttpTls): Dispatcher {
  const options = {
    connect: {
      timeout: timeoutMs,
      ...(tls?.ca ? { ca: tls.ca } : {}),
      ...(tls?.cert ? { cert: tls.cert } : {}),
      ...(tls?.key ? { key: tls.key } : {}),
      ...(tls?.serverName ? { servername: tls.serverName } : {}),
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4_000,
    connections: 4,
  };
  return PROXY_VARIABLES.some((name) => env[name]) ? new EnvHttpProxyAgent(options) : new Agent(options);
}

/** POSTs `body` (JSON unless options.headers name another content-type) and judges the answer. */
export async function post(
  agent: Dispatcher,
  url: URL,
  body: string | Uint8Array,
  options: PostOptions,
): Promise<PostOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  try {
    const response = await request(url, {
      method: options.method ?? 'POST',
      headers: { 'content-type': 'application/json', ...options.headers },
      body,
      dispatcher: agent,
      signal,
    });
    const bytes = await readLimited(response.body, options.maxResponseBytes ?? BODY_LIMIT);
    const text = options.credentials.scrub(bytes.toString('utf8'));
    const status = response.statusCode;
    if (status >= 200 && status < 300) return { ok: true, status, body: text, bytes };
    const retryAfterMs =
      retryAfterOf(response.headers['retry-after']) ??
      rateLimitResetOf(response.headers['x-ratelimit-reset']);
    const retryable = status === 408 || status === 425 || status === 429 || status >= 500;
    let reason = `HTTP ${status}${statusText(status)}`;
    const excerpt = bodyExcerpt(text);
    if (status >= 300 && status < 400) reason += ' (redirects are not followed: configure the final URL)';
    else if (excerpt) reason += `: ${excerpt}`;
    return {
      ok: false,
      retryable,
      aborted: false,
      status,
      reason,
      body: text,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  } catch (error) {
    if (options.signal?.aborted) {
      return {
        ok: false,
        retryable: false,
        aborted: true,
        reason: 'cut short by shutdown',
        code: 'shutdown',
      };
    }
    if (timeout.aborted) {
      const reason = `no response within ${formatDuration(options.timeoutMs)}`;
      return { ok: false, retryable: true, aborted: false, reason, code: 'timeout' };
    }
    const reason = options.credentials.scrub(describeTransportError(error, url));
    return { ok: false, retryable: true, aborted: false, reason, code: transportCode(error) };
  }
}

/**
 * What makes two failed requests the same kind, for saying each kind once: the status ('HTTP 503'), or
 * without an answer the failure's code ('ECONNREFUSED', 'timeout'). Never text the receiver chooses
 * (an error body may carry a new request id in every answer).
 */
export function failureKey(outcome: Extract<PostOutcome, { ok: false }>): string {
  if (outcome.status !== undefined) return `HTTP ${outcome.status}`;
  return outcome.code ?? 'network error';
}

/** The first code along the error's causes (Node's, undici's, OpenSSL's: a fixed set), or 'network error'. */
function transportCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,60}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return 'network error';
}

async function readLimited(
  body: AsyncIterable<Buffer | string> & { destroy(): void },
  limit: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(buffer);
      size += buffer.length;
      if (size >= limit) break;
    }
  } catch {
    // A body cut short still has a useful beginning.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, limit);
}

/** Retry-After as seconds or an HTTP date, in ms, capped. */
function retryAfterOf(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  let ms: number;
  const seconds = Number(text);
  if (Number.isFinite(seconds) && seconds >= 0) ms = seconds * 1000;
  else {
    const date = Date.parse(text);
    if (Number.isNaN(date)) return undefined;
    ms = Math.max(0, date - Date.now());
  }
  return Math.min(Math.round(ms), MAX_RETRY_AFTER_MS);
}

/**
 * A rate limiter may say when to come back in X-Ratelimit-Reset, seconds until the reset, when it sends no
 * Retry-After; a value that large is an epoch time (another platform's header of that name) and is read so.
 */
function rateLimitResetOf(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  const seconds = Number(text);
  if (!text || !Number.isFinite(seconds) || seconds < 0) return undefined;
  const ms = seconds > 1e9 ? seconds * 1000 - Date.now() : seconds * 1000;
  return Math.min(Math.max(0, Math.round(ms)), MAX_RETRY_AFTER_MS);
}

/** The first 200 characters of a body on one line, quoted; '' for an empty body. */
export function bodyExcerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line === '') return '';
  return JSON.stringify(line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}…` : line);
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  425: 'Too Early',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

function statusText(status: number): string {
  const text = STATUS_TEXT[status];
  return text ? ` ${text}` : '';
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed by the receiver',
  UND_ERR_CLOSED: 'connection closed',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no response within the timeout',
  UND_ERR_BODY_TIMEOUT: 'the response went silent',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** One phrase for a failed request; never contains the URL's path or query. */
function describeTransportError(error: unknown, url: URL): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code in NETWORK_CODES && code !== 'UND_ERR_SOCKET')
      return NETWORK_CODES[code] as string;
    current = (current as { cause?: unknown }).cause;
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code in NETWORK_CODES) return NETWORK_CODES[code] as string;
  const message = error instanceof Error ? error.message : String(error);
  return scrubUrl(message, url);
}

/** A failure's reason, with the receiver's Retry-After when it gave one. */
export function reasonWithRetryAfter(outcome: Extract<PostOutcome, { ok: false }>): string {
  return outcome.retryAfterMs !== undefined
    ? `${outcome.reason} (Retry-After ${formatDuration(outcome.retryAfterMs)})`
    : outcome.reason;
}
