// The baseline client: plain undici against the API server, no kubediff code. Used for the raw
// paged LIST (figure 2), the unpaged LIST (figure 17), the raw watch stream (figures 3 and 1's
// recordings).
import { Agent, request } from 'undici';
import type { ClusterInfo } from '../../test/helpers/cluster.ts';

/** HTTP/1.1, the plainest client: one connection per request in flight, nothing shared between watches. */
export function rawAgent(info: ClusterInfo): Agent {
  return new Agent({
    connect: {
      ...(info.caPem ? { ca: info.caPem } : {}),
      ...(info.insecureSkipTLSVerify ? { rejectUnauthorized: false } : {}),
    },
    allowH2: false,
  });
}

function headers(info: ClusterInfo): Record<string, string> {
  return {
    accept: 'application/json',
    ...(info.adminToken ? { authorization: `Bearer ${info.adminToken}` } : {}),
  };
}

function url(info: ClusterInfo, path: string, query: Record<string, string | number | undefined>): string {
  const target = new URL(path, info.server);
  for (const [key, value] of Object.entries(query))
    if (value !== undefined) target.searchParams.set(key, String(value));
  return target.toString();
}

/** A paged LIST, every page read and parsed (a client needs the continue token); returns the item count. */
export async function rawPagedList(
  info: ClusterInfo,
  agent: Agent,
  path: string,
  pageSize: number,
): Promise<{ items: number; bytes: number }> {
  let continueToken: string | undefined;
  let items = 0;
  let bytes = 0;
  do {
    const response = await request(url(info, path, { limit: pageSize, continue: continueToken }), {
      headers: headers(info),
      dispatcher: agent,
    });
    const text = await response.body.text();
    if (response.statusCode !== 200)
      throw new Error(`LIST ${path}: ${response.statusCode} ${text.slice(0, 200)}`);
    bytes += text.length;
    const page = JSON.parse(text) as { metadata?: { continue?: string }; items?: unknown[] };
    items += page.items?.length ?? 0;
    continueToken = page.metadata?.continue || undefined;
  } while (continueToken);
  return { items, bytes };
}

/** One unpaged LIST, its body read and parsed; returns the item count and the body's size. */
export async function rawList(
  info: ClusterInfo,
  agent: Agent,
  path: string,
): Promise<{ items: number; bytes: number }> {
  const response = await request(url(info, path, {}), { headers: headers(info), dispatcher: agent });
  const text = await response.body.text();
  if (response.statusCode !== 200)
    throw new Error(`LIST ${path}: ${response.statusCode} ${text.slice(0, 200)}`);
  const list = JSON.parse(text) as { items?: unknown[] };
  return { items: list.items?.length ?? 0, bytes: text.length };
}

export interface RawWatch {
  /** Every complete line received so far, as sent. */
  readonly lines: string[];
  /** When the last line arrived (performance.now()). */
  lastLineAt(): number;
  close(): void;
  /** Resolves when the stream ended: closed, or failed (then with the failure). */
  readonly ended: Promise<Error | undefined>;
}

/** A watch from `resourceVersion`, its body split into lines and nothing else. */
export async function rawWatch(
  info: ClusterInfo,
  agent: Agent,
  path: string,
  resourceVersion: string,
  onLine?: (line: string) => void,
): Promise<RawWatch> {
  const controller = new AbortController();
  const response = await request(
    url(info, path, { watch: 1, resourceVersion, allowWatchBookmarks: 'false', timeoutSeconds: 3600 }),
    { headers: headers(info), dispatcher: agent, signal: controller.signal, bodyTimeout: 0 },
  );
  if (response.statusCode !== 200) {
    throw new Error(`WATCH ${path}: ${response.statusCode} ${(await response.body.text()).slice(0, 200)}`);
  }
  const lines: string[] = [];
  let last = performance.now();
  const body = response.body;
  body.setEncoding('utf8');
  const ended = (async () => {
    let pending = '';
    try {
      for await (const chunk of body as AsyncIterable<string>) {
        const text = pending + chunk;
        let start = 0;
        for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', start)) {
          const line = text.slice(start, newline);
          start = newline + 1;
          if (line.length === 0) continue;
          lines.push(line);
          last = performance.now();
          onLine?.(line);
        }
        pending = text.slice(start);
      }
    } catch (error) {
      if (!controller.signal.aborted) return error instanceof Error ? error : new Error(String(error));
    }
    return undefined;
  })();
  return { lines, lastLineAt: () => last, close: () => controller.abort(), ended };
}

/** The collection's current resourceVersion (a one-item LIST). */
export async function currentResourceVersion(info: ClusterInfo, agent: Agent, path: string): Promise<string> {
  const response = await request(url(info, path, { limit: 1 }), {
    headers: headers(info),
    dispatcher: agent,
  });
  const body = (await response.body.json()) as { metadata: { resourceVersion: string } };
  return body.metadata.resourceVersion;
}
