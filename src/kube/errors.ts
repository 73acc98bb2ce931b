// What can go wrong talking to an API server, classified so that callers can
// decide (retry, relist, give up on one resource) and users read one sentence.

export type KubeFailureKind =
  /** Could not connect or the connection broke: retry with backoff. */
  | 'network'
  /** The TLS handshake failed: the CA or server name is wrong. Retrying will not help. */
  | 'tls'
  /** 401: the credentials were rejected (expired token, revoked certificate). */
  | 'unauthorized'
  /** 403: the identity may not do this. */
  | 'forbidden'
  /** 404: the resource type or object does not exist (any more). */
  | 'not-found'
  /** 410: the resourceVersion (or continue token) is too old: relist. */
  | 'gone'
  /** 429: too many requests: wait for Retry-After. */
  | 'throttled'
  /** 5xx and other server trouble: retry with backoff. */
  | 'server'
  /** Any other 4xx: the request itself is wrong. */
  | 'request'
  /** An answer (or one object) larger than kubediff reads at once (KUBEDIFF_MAX_READ_SIZE). */
  | 'too-large';

export class KubeError extends Error {
  readonly kind: KubeFailureKind;
  /** HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** Seconds the server asked us to wait (Retry-After or Status details). */
  readonly retryAfterSeconds: number | undefined;
  /** The request path, for messages. */
  readonly path: string;

  constructor(
    kind: KubeFailureKind,
    message: string,
    details: { status?: number; retryAfterSeconds?: number; path: string; cause?: unknown },
  ) {
    super(message, { cause: details.cause });
    this.name = 'KubeError';
    this.kind = kind;
    this.status = details.status;
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.path = details.path;
  }
}

interface StatusBody {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { retryAfterSeconds?: number };
}

function kindForStatus(status: number): KubeFailureKind {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not-found';
  if (status === 410) return 'gone';
  if (status === 429) return 'throttled';
  if (status >= 500) return 'server';
  return 'request';
}

/** Builds the error for a non-2xx answer, from its status and (if any) its Status body. */
export function errorFromResponse(
  status: number,
  bodyText: string,
  retryAfterHeader: string | undefined,
  path: string,
): KubeError {
  let statusBody: StatusBody | undefined;
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object') statusBody = parsed as StatusBody;
  } catch {
    // Not JSON (a proxy's HTML page, say): the excerpt below says enough.
  }
  const retryAfterSeconds = parseRetryAfter(retryAfterHeader) ?? statusBody?.details?.retryAfterSeconds;
  const serverMessage = statusBody?.message ?? bodyText.slice(0, 200).replace(/\s+/g, ' ').trim();
  const message = `${status}${statusBody?.reason ? ` ${statusBody.reason}` : ''}: ${serverMessage || 'no message'}`;
  return new KubeError(kindForStatus(status), message, {
    status,
    path,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  });
}

/** Retry-After is seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - Date.now()) / 1000);
}

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/** A long-lived answer (a watch, a whole LIST) that broke while it was being read. */
export function brokenStream(error: unknown, server: string, path: string): KubeError {
  return new KubeError('network', `the watch connection broke (${server}${path})`, { path, cause: error });
}

/** Classifies an error thrown by undici, node:http2 or a socket while talking to `server`. */
export function errorFromTransport(error: unknown, server: string, path: string): KubeError {
  const code = transportCode(error);
  if (code && TLS_CODES.has(code)) {
    return new KubeError('tls', `TLS handshake with ${server} failed (${code})`, { path, cause: error });
  }
  const reason = code ? describeNetworkCode(code) : error instanceof Error ? error.message : String(error);
  return new KubeError('network', `cannot reach the API server at ${server}: ${reason}`, {
    path,
    cause: error,
  });
}

function transportCode(error: unknown): string | undefined {
  let current: unknown = error;
  // undici wraps socket errors; the useful code is often on the cause.
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    current = (current as { cause?: unknown }).cause;
  }
  if (error && typeof error === 'object' && (error as { code?: unknown }).code === 'UND_ERR_SOCKET') {
    return 'UND_ERR_SOCKET';
  }
  return undefined;
}

function describeNetworkCode(code: string): string {
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connection timed out';
    case 'UND_ERR_HEADERS_TIMEOUT':
      return 'no response within the timeout';
    case 'UND_ERR_BODY_TIMEOUT':
      return 'connection went silent';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'network unreachable';
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return 'the connection closed before the end of the answer';
    case 'ERR_HTTP2_STREAM_ERROR':
      return 'the server reset the request (HTTP/2 stream error)';
    case 'ERR_HTTP2_GOAWAY_SESSION':
    case 'ERR_HTTP2_INVALID_SESSION':
    case 'ERR_HTTP2_STREAM_CANCEL':
      return 'the connection was closing';
    default:
      return code;
  }
}
