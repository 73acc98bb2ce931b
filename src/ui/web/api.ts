/// <reference lib="dom" />
// The page's side of the HTTP API: JSON requests with the token, and the live stream read with fetch
// (EventSource cannot send an Authorization header). The token comes from the address's fragment
// (#token=…, never sent to the server nor kept in the address bar) and lives in sessionStorage.
import type { EventSummary } from '../../state/timeline-reader.ts';

const TOKEN_KEY = 'kubediff-token';

export function takeTokenFromFragment(): void {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]!));
  history.replaceState(null, '', location.pathname + location.search);
}

function headers(): HeadersInit {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

export class ApiError extends Error {}

export async function getJson<T>(path: string, params: URLSearchParams): Promise<T> {
  const response = await fetch(`${path}?${params}`, { headers: headers() });
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new ApiError(body.error ?? `HTTP ${response.status}`);
  return body;
}

/** Follows /api/v1/stream until `signal` aborts, reconnecting after a failure; calls `onEvents` per batch. */
export async function followStream(
  params: URLSearchParams,
  after: number,
  onEvents: (events: EventSummary[]) => void,
  onState: (live: boolean) => void,
  signal: AbortSignal,
): Promise<void> {
  let last = after;
  while (!signal.aborted) {
    try {
      const query = new URLSearchParams(params);
      query.set('after', String(last));
      const response = await fetch(`/api/v1/stream?${query}`, { headers: headers(), signal });
      if (!response.ok || !response.body) throw new ApiError(`HTTP ${response.status}`);
      onState(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
          const data = message
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          const id = /^id: (\d+)$/m.exec(message);
          if (id) last = Number(id[1]);
          if (data) onEvents(JSON.parse(data) as EventSummary[]);
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    onState(false);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  }
}
