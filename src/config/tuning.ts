// The environment variables for unusual clusters and for tests (docs/watching.md, "Tuning"): how the reflector
// times its LISTs and WATCHes, how kubediff talks HTTP to the API server, and the memory bounds of the
// state backlog and the standby buffer. Parsed with the same duration and size rules as every flag.
import type { ReflectorTiming } from '../informer/reflector.ts';
import type { HttpSettings } from '../kube/client.ts';
import { parseCount } from '../util/count.ts';
import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { invalidSetting } from '../util/errors.ts';
import { parseSize } from '../util/size.ts';

export function durationFromEnvironment(name: string, env: Env = process.env): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  return parseDurationSetting(name, text);
}

export function sizeFromEnvironment(name: string, env: Env = process.env): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  return parseSize(name, text);
}

/** Timing knobs (docs/watching.md, "Tuning"): mostly for tests that must see a dead connection quickly. */
export function timingFromEnvironment(env: Env = process.env): Partial<ReflectorTiming> {
  const timing: Partial<ReflectorTiming> = {};
  const idle = durationFromEnvironment('KUBEDIFF_WATCH_IDLE_TIMEOUT', env);
  if (idle !== undefined) timing.idleTimeoutMs = idle;
  const watchTimeout = durationFromEnvironment('KUBEDIFF_WATCH_TIMEOUT', env);
  if (watchTimeout !== undefined)
    timing.minWatchTimeoutSeconds = Math.max(1, Math.round(watchTimeout / 1000));
  const slowRetry = durationFromEnvironment('KUBEDIFF_SLOW_RETRY', env);
  if (slowRetry !== undefined) timing.slowRetryMs = slowRetry;
  const pageSize = env.KUBEDIFF_LIST_PAGE_SIZE;
  if (pageSize)
    timing.pageSize = parseCount(
      'KUBEDIFF_LIST_PAGE_SIZE',
      pageSize,
      'use a whole number of objects such as 500',
    );
  const initialSync = env.KUBEDIFF_INITIAL_SYNC;
  if (initialSync) {
    if (initialSync !== 'stream' && initialSync !== 'list') {
      throw invalidSetting('KUBEDIFF_INITIAL_SYNC', initialSync, 'use stream or list');
    }
    timing.initialSync = initialSync;
  }
  const maxBackoff = durationFromEnvironment('KUBEDIFF_MAX_BACKOFF', env);
  if (maxBackoff !== undefined) timing.backoff = { maxMs: maxBackoff };
  return timing;
}

/** How kubediff talks to the API server (docs/watching.md, "Tuning"). */
export function httpFromEnvironment(env: Env = process.env): Partial<HttpSettings> {
  const http: Partial<HttpSettings> = {};
  const version = env.KUBEDIFF_HTTP_VERSION;
  if (version) {
    if (version !== '2' && version !== '1.1')
      throw invalidSetting(
        'KUBEDIFF_HTTP_VERSION',
        version,
        'use 2 (HTTP/2 when the server offers it, the default) or 1.1',
      );
    http.protocol = version === '2' ? 'auto' : 'http/1.1';
  }
  // The duration parser refuses 0 (it would switch dead-connection detection off).
  const readIdle = durationFromEnvironment('KUBEDIFF_READ_IDLE_TIMEOUT', env);
  if (readIdle !== undefined) http.readIdleMs = readIdle;
  const pingTimeout = durationFromEnvironment('KUBEDIFF_PING_TIMEOUT', env);
  if (pingTimeout !== undefined) http.pingTimeoutMs = pingTimeout;
  const connections = env.KUBEDIFF_MAX_CONNECTIONS;
  if (connections)
    http.maxConnections = parseCount(
      'KUBEDIFF_MAX_CONNECTIONS',
      connections,
      'use a whole number of connections such as 256',
    );
  const maxReadBytes = sizeFromEnvironment('KUBEDIFF_MAX_READ_SIZE', env);
  if (maxReadBytes !== undefined) http.maxReadBytes = maxReadBytes;
  return http;
}
