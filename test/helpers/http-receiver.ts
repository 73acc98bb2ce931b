// A real HTTP server on loopback for testing sinks: it records every request (method, path, headers, body,
// time) and answers as scripted, per request: a status with headers and body (200, 429 with Retry-After,
// 500…), a delay, no answer at all (hang until the client gives up or the receiver closes), or a dropped
// connection (the socket destroyed after the body was read).
//
//   const receiver = await HttpReceiver.start();
//   receiver.script({ status: 429, headers: { 'retry-after': '1' } }, { status: 500 }); // then the default
//   …run kubediff with `--webhook ${receiver.url('/hook')}`…
//   const [request] = await receiver.waitForRequests(3);
//   await receiver.close();

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Reply =
  /** Answer with this status (default body: 'ok' for 2xx, a short text otherwise). */
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  /** Never answer; the connection stays open until the client gives up or the receiver closes. */
  | { hang: true }
  /** Read the request, then destroy the connection without a response. */
  | { close: true };

export interface ReceivedRequest {
  /** 0, 1, 2… in arrival order. */
  index: number;
  method: string;
  /** Path and query, e.g. '/hook'. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the body was complete. */
  at: number;
  /** How it was answered. */
  reply: Reply;
}

export interface ReceiverOptions {
  /** Answer when the script is exhausted. Default 200 'ok'. */
  defaultReply?: Reply;
  /** Decides each answer (overrides the script and the default when it returns a Reply). */
  respond?: (request: Omit<ReceivedRequest, 'reply'>) => Reply | undefined;
  /** Listen on this port (e.g. to bring a receiver back where a closed one was). Default: any free port. */
  port?: number;
}

type Listener = () => void;

export class HttpReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly listeners = new Set<Listener>();
  private readonly queue: Reply[] = [];
  private readonly options: ReceiverOptions;
  private closed = false;

  private constructor(server: Server, options: ReceiverOptions) {
    this.server = server;
    this.options = options;
  }

  static async start(options: ReceiverOptions = {}): Promise<HttpReceiver> {
    const server = createServer();
    const receiver = new HttpReceiver(server, options);
    server.on('connection', (socket) => {
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const base = {
          index: receiver.requests.length,
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        const reply = receiver.options.respond?.(base) ??
          receiver.queue.shift() ??
          receiver.options.defaultReply ?? { status: 200 };
        receiver.requests.push({ ...base, reply });
        receiver.answer(res, reply);
        receiver.notify();
      });
    });
    server.listen(options.port ?? 0, '127.0.0.1');
    await once(server, 'listening');
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** http://127.0.0.1:<port><path> */
  url(path = '/'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Answers for the next requests, in order; then the default answer again. */
  script(...replies: Reply[]): void {
    this.queue.push(...replies);
  }

  /** The bodies parsed as JSON, in arrival order. */
  jsonBodies(): unknown[] {
    return this.requests.map((request) => JSON.parse(request.body) as unknown);
  }

  /** Resolves with the requests once at least `count` have arrived. */
  waitForRequests(count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
    return this.waitUntil(
      () => (this.requests.length >= count ? this.requests.slice() : undefined),
      timeoutMs,
      () => `${count} requests (got ${this.requests.length})`,
    );
  }

  /** Resolves once `check` returns a value (re-checked on every request). */
  waitUntil<T>(check: () => T | undefined, timeoutMs = 15_000, what?: () => string): Promise<T> {
    return new Promise((resolve, reject) => {
      const listener = () => {
        const value = check();
        if (value === undefined) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what?.() ?? 'a condition'} at ${this.url()}`,
          ),
        );
      }, timeoutMs);
      this.listeners.add(listener);
      listener();
    });
  }

  /** Answers every request left hanging so far with `reply`; returns how many. */
  answerHanging(reply: Extract<Reply, { status: number }>): number {
    const hanging = [...this.hanging];
    this.hanging.clear();
    for (const res of hanging) this.answer(res, reply);
    return hanging.length;
  }

  /** Stops listening and drops every connection (hanging ones included). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const res of this.hanging) res.destroy();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private answer(res: ServerResponse, reply: Reply): void {
    if ('hang' in reply) {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if ('close' in reply) {
      res.socket?.destroy();
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      const ok = reply.status >= 200 && reply.status < 300;
      const body = reply.body ?? (ok ? 'ok' : `status ${reply.status} from the test receiver`);
      res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
      res.end(body);
    };
    if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
    else send();
  }
}
