// An HTTPS reverse proxy on loopback in front of the real API server, for answers the real server
// gives only under load (429 with Retry-After, 503): a test tells it to answer the next request(s)
// matching a predicate itself; everything else, watches included, streams through to the API server.
//
//   const front = await startApiFront();
//   front.answer((r) => r.watch && r.path.endsWith('/configmaps'), { status: 429, headers: { 'retry-after': '86400' } });
//   const kubeconfig = await admin.writeKubeconfig(front.url);   // kubediff now talks to the front
//   const held = front.hold((r) => r.path.endsWith('/configmaps'));  // forwarded only once released
//   held.release();
//
// Holding requests until the test releases them makes what happens between two of them (an etcd
// compaction between two pages of a LIST, say) the test's to decide.
//
// The front presents the API server's own serving certificate (issued for 127.0.0.1 by the cluster's CA,
// which every test kubeconfig trusts), so kubediff verifies TLS as usual; the client's Authorization
// header passes through unchanged. It offers HTTP/2 in ALPN as the API server does, so kubediff takes its
// default path (one HTTP/2 connection); `startApiFront({ http1Only: true })` offers HTTP/1.1 alone, for
// kubediff's fallback.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { testCluster } from './cluster-env.ts';

export interface FrontRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  /** A WATCH (watch=1 or watch=true in the query). */
  watch: boolean;
  /** '2.0' or '1.1': what kubediff spoke to the front. */
  httpVersion: string;
}

interface FrontAnswer {
  /** 'hang': never answer (a server that accepted the request and went quiet). */
  status: number | 'hang';
  headers?: Record<string, string>;
  /** Default: a Kubernetes Status object for `status`. */
  body?: string;
}

export interface ApiFront {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** Every request seen, in order, and whether the front answered it itself. */
  readonly requests: readonly (FrontRequest & { answered: boolean })[];
  /** Answers the next `times` requests matching `match` with `answer` instead of forwarding them. */
  answer(match: (request: FrontRequest) => boolean, answer: FrontAnswer, times?: number): void;
  /**
   * Holds the requests matching `match` (not forwarded, not answered) until `release()`, which forwards
   * them; from then on they pass as any other. `held` resolves with the first one held, once it arrived.
   */
  hold(match: (request: FrontRequest) => boolean): { held: Promise<FrontRequest>; release(): void };
  /** Resolves once at least `n` requests matching `match` have been seen (answered or forwarded). */
  waitForRequests(match: (request: FrontRequest) => boolean, n: number, timeoutMs?: number): Promise<void>;
  /** Resolves once no client connection is open; rejects after `timeoutMs`. */
  waitForIdle(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Headers of one hop that HTTP/2 forbids (and its pseudo-headers, which HTTP/1.1 cannot carry). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

function forwardable(headers: IncomingHttpHeaders | OutgoingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !name.startsWith(':') && !HOP_BY_HOP.has(name)),
  );
}

export async function startApiFront(options: { http1Only?: boolean } = {}): Promise<ApiFront> {
  const cluster = testCluster();
  if (!cluster.dir)
    throw new Error("the API front needs the test run's own cluster (its serving certificate)");
  const certDir = path.join(cluster.dir, 'apiserver-certs');
  const upstream = new URL(cluster.server);
  const agent = new https.Agent({
    keepAlive: true,
    ...(cluster.caPem ? { ca: cluster.caPem } : {}),
    ...(cluster.insecureSkipTLSVerify ? { rejectUnauthorized: false } : {}),
  });
  const rules: { match: (request: FrontRequest) => boolean; answer: FrontAnswer; left: number }[] = [];
  const holds: {
    match: (request: FrontRequest) => boolean;
    held: (() => void)[] | undefined;
    arrived: (request: FrontRequest) => void;
  }[] = [];
  const requests: (FrontRequest & { answered: boolean })[] = [];
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };

  const tls = {
    cert: readFileSync(path.join(certDir, 'apiserver.crt')),
    key: readFileSync(path.join(certDir, 'apiserver.key')),
  };
  const handle = (
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
  ): void => {
    // Both kinds of response take the same writeHead(status, headers).
    const writeHead = (status: number, headers: OutgoingHttpHeaders) =>
      (res as ServerResponse).writeHead(status, headers);
    const url = new URL(req.url ?? '/', 'http://front');
    const seen: FrontRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      watch: ['1', 'true'].includes(url.searchParams.get('watch') ?? ''),
      httpVersion: req.httpVersion,
    };
    const rule = rules.find((candidate) => candidate.left > 0 && candidate.match(seen));
    requests.push({ ...seen, answered: rule !== undefined });
    notify();
    if (rule) {
      rule.left--;
      if (rule.answer.status === 'hang') return;
      const body =
        rule.answer.body ??
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: `answered by the test's API front with ${rule.answer.status}`,
          code: rule.answer.status,
        });
      req.resume();
      writeHead(rule.answer.status, { 'content-type': 'application/json', ...rule.answer.headers });
      res.end(body);
      return;
    }
    const hold = holds.find((candidate) => candidate.held && candidate.match(seen));
    if (hold?.held) {
      hold.arrived(seen);
      hold.held.push(() => forward(req, res, writeHead));
      return;
    }
    forward(req, res, writeHead);
  };
  const forward = (
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
    writeHead: (status: number, headers: OutgoingHttpHeaders) => void,
  ): void => {
    const upstreamRequest = https.request(
      {
        agent,
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...forwardable(req.headers), host: upstream.host },
      },
      (answer) => {
        writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res as NodeJS.WritableStream);
      },
    );
    upstreamRequest.on('error', () => res.destroy());
    res.on('close', () => upstreamRequest.destroy());
    req.pipe(upstreamRequest);
  };
  const server = options.http1Only
    ? https.createServer(tls, handle)
    : http2.createSecureServer({ ...tls, allowHTTP1: true }, handle);
  const sessions = new Set<Http2Session>();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  const sockets = new Set<Socket>();
  server.on('secureConnection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      notify();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  const until = (done: () => boolean, timeoutMs: number, failure: () => string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(failure()));
      }, timeoutMs);
      listeners.add(check);
      check();
    });

  return {
    url: `https://127.0.0.1:${port}`,
    requests,
    answer(match, answer, times = 1) {
      rules.push({ match, answer, left: times });
    },
    hold(match) {
      const arrived = Promise.withResolvers<FrontRequest>();
      const hold: (typeof holds)[number] = { match, held: [], arrived: arrived.resolve };
      holds.push(hold);
      return {
        held: arrived.promise,
        release() {
          const held = hold.held ?? [];
          hold.held = undefined;
          for (const forwardHeld of held) forwardHeld();
        },
      };
    },
    waitForRequests(match, n, timeoutMs = 15_000) {
      return until(
        () => requests.filter(match).length >= n,
        timeoutMs,
        () => `the API front saw ${requests.filter(match).length} of ${n} matching requests`,
      );
    },
    waitForIdle(timeoutMs = 15_000) {
      return until(
        () => sockets.size === 0,
        timeoutMs,
        () => `${sockets.size} connection(s) still open at the API front`,
      );
    },
    async close() {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
