// The HTTPS endpoint the API server posts audit batches and admission reviews to (audit-server.ts,
// admission-server.ts keep only their body handlers), and the peers their forwarded records (PEER_PATH,
// which takes only this replica's own serving certificate). Every configured method must authenticate a
// request (client certificate from clientCAFile, optionally by name; bearer token): 401 or 403 otherwise,
// counted and logged once per kind. Certificate files are reloaded when they change (a set that does not
// load keeps the old one), or taken from a `certificate` source when it says so (managed-certificate.ts).
// Bounded: maxRequestBytes per body (413), maxConcurrentRequests read at once; when all are taken a new
// request may take one by read-slots.ts's rules (standing, fair share per address, a slow body), else 503;
// slow bodies cut (408); connections held by listener-guard.ts; close() ends every connection.

import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { formatDuration } from '../../util/duration.ts';
import { errorMessage, UsageError } from '../../util/errors.ts';
import type { FailureReporter } from '../../util/event-failures.ts';
import { globToRegExp } from '../../util/glob.ts';
import { boundAddress, closeServer, listenOn } from '../../util/http-server.ts';
import {
  guardedServerOptions,
  ListenerGuard,
  type ListenerLimits,
  type ListenerName,
} from '../../util/listener-guard.ts';
import type { Logger } from '../../util/log.ts';
import { formatSize } from '../../util/size.ts';
import { type CutReason, type ReadSlot, ReadSlots } from './read-slots.ts';
import type { WebhookEndpoint } from './webhook-endpoint.ts';
import type { WebhookOutcome } from './webhook-outcomes.ts';
import type { BodyPlan, WebhookAnswer, WebhookRoute } from './webhook-route.ts';
import { fingerprintOf, readTlsFiles, secureOptions, stampOf, type TlsFiles } from './webhook-tls-files.ts';

/** Where a replica posts the records it received to the others (src/who/peers/peer-forwarder.ts). */
export const PEER_PATH = '/kubediff/peer-records';

/** A serving certificate and key held in memory, instead of certFile and keyFile. */
export interface CertificateSource {
  readonly current: { cert: Buffer; key: Buffer };
  /** The certificate every replica serves next (a rotation under way): a peer presenting it is one of ours. */
  readonly next?: Buffer | undefined;
  onChange(listener: (served: { cert: Buffer; key: Buffer }) => void): void;
}

export interface WebhookListenerOptions extends WebhookEndpoint {
  /** The serving certificate and key, instead of certFile and keyFile. */
  certificate?: CertificateSource | undefined;
  /** How log lines name it: 'audit webhook'. */
  name: string;
  /** The config block its settings come from, in messages: 'audit' (audit.certFile, …). */
  settingsKey: string;
  /** Its label in kubediff_listener_connections_closed_total. */
  listener: ListenerName;
  /** The flag of its address: '--audit-listen'. */
  flag: string;
  /** The metric that counts its requests by outcome, named in log lines. */
  requestsMetric: string;
  maxConcurrentRequests: number;
  /**
   * A body must arrive within this, from its headers, else 408 and the connection closes: the API
   * server gave up on it long before (the admission webhook's timeoutSeconds), and a slow body holds one
   * of the `maxConcurrentRequests` reads. None: the listener's requestTimeoutMs alone.
   */
  bodyTimeoutMs?: number;
  /**
   * With every read busy, a new request takes the place of the read that has waited longest for its
   * body, if it has waited this long (408; read-slots.ts gives places by standing and fair share first).
   */
  slowBodyMs?: number;
  /**
   * The Retry-After of a 503 (every read taken): the audit webhook's batches are sent again after it. None
   * for the admission webhook: the API server would wait it out, up to the webhook's timeout, before it
   * lets the write through.
   */
  busyRetryAfterSeconds?: number;
  reloadIntervalMs?: number;
  /** Its connections' bounds; default WEBHOOK_LISTENER_LIMITS. */
  limits?: ListenerLimits;
  /** What the API server posts (any path but PEER_PATH). */
  route: WebhookRoute;
  /** What the other replicas post on PEER_PATH, when they are configured. */
  peerRoute?: WebhookRoute | undefined;
  /** Each answer written, with its outcome and the seconds from the request to the answer. */
  onAnswered?: (outcome: WebhookOutcome, seconds: number, peer: boolean) => void;
  /** Where a failure of an answer's `after` (taking its records) is reported; else it is logged. */
  failures?: FailureReporter<'handler'> | undefined;
  log: Logger;
}

export const WEBHOOK_RELOAD_INTERVAL_MS = 10_000;

/** Documented in docs/audit.md and docs/who.md ("Limits"), each bound. */
export const WEBHOOK_LISTENER_LIMITS: ListenerLimits = {
  maxConnections: 64,
  // One remote address cannot hold the port: the API server's own connections stay within it.
  maxConnectionsPerAddress: 16,
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 30_000,
};

interface Refusal {
  status: number;
  outcome: WebhookOutcome;
  why: string;
}

export class WebhookListener {
  private readonly server: Server;
  /** Its connections' guard (limits, contained errors), read by the metrics. */
  readonly guard: ListenerGuard;
  private readonly options: WebhookListenerOptions;
  private readonly counts = new Map<WebhookOutcome, number>();
  private readonly peerCounts = new Map<WebhookOutcome, number>();
  private readonly names: RegExp[] | undefined;
  private readonly token: Buffer | undefined;
  /** The bodies being read, and which gives its place when all are taken. */
  private readonly slots: ReadSlots;
  private readonly sockets = new Set<Socket>();
  private reloadTimer: NodeJS.Timeout | undefined;
  private fileStamp: string;
  /** SHA-256 fingerprints of this replica's serving certificate, the one before a reload included. */
  private ownCertificates: string[];
  /** The source's next certificate and its fingerprint, as last seen (peerFingerprints). */
  private next: { cert: Buffer; fingerprint: string | undefined } | undefined;
  private readonly certificateListeners: ((files: { cert: Buffer; key: Buffer }) => void)[] = [];
  private files: TlsFiles;

  private constructor(server: Server, options: WebhookListenerOptions, files: TlsFiles) {
    this.server = server;
    this.guard = ListenerGuard.attach(
      server,
      options.listener,
      options.limits ?? WEBHOOK_LISTENER_LIMITS,
      options.log,
    );
    this.options = options;
    this.files = files;
    this.fileStamp = stampOf(options);
    this.ownCertificates = [fingerprintOf(files.cert)];
    this.names = options.clientNames?.map(globToRegExp);
    this.token = options.token ? Buffer.from(`Bearer ${options.token}`) : undefined;
    this.slots = new ReadSlots({ limit: options.maxConcurrentRequests, slowBodyMs: options.slowBodyMs });
  }

  /** Listens; rejects with a UsageError when the files cannot be read or the port cannot be had. */
  static async start(options: WebhookListenerOptions): Promise<WebhookListener> {
    const files = readTlsFiles(options);
    let server: Server;
    try {
      // A certificate that does not parse fails here, as one the TLS context refuses does below.
      fingerprintOf(files.cert);
      server = createServer({
        ...guardedServerOptions(options.limits ?? WEBHOOK_LISTENER_LIMITS),
        ...secureOptions(files),
        // Asked for when a CA checks it, and from peers (their certificate is compared with ours).
        requestCert: options.clientCAFile !== undefined || options.peerRoute !== undefined,
        // Checked per request, so that a refusal is an HTTP answer (counted) rather than a broken handshake.
        rejectUnauthorized: false,
        minVersion: 'TLSv1.2',
      });
    } catch (error) {
      const key = options.settingsKey;
      throw new UsageError(
        `the ${options.name}'s certificate, key or client CA does not load (${errorMessage(error)}); check ${key}.certFile, ${key}.keyFile and ${key}.clientCAFile.`,
      );
    }
    const instance = new WebhookListener(server, options, files);
    server.on('request', (request, response) => instance.handle(request, response));
    // Every socket, those still in their TLS handshake too: closeAllConnections() knows only HTTP ones,
    // and one that never completes its handshake would hold close() until it times out.
    server.on('connection', (socket: Socket) => {
      instance.sockets.add(socket);
      socket.once('close', () => instance.sockets.delete(socket));
    });
    await listenOn(server, options.listen, options.flag);
    const interval = options.reloadIntervalMs ?? WEBHOOK_RELOAD_INTERVAL_MS;
    instance.reloadTimer = setInterval(() => instance.reloadIfChanged(), interval);
    instance.reloadTimer.unref();
    options.certificate?.onChange(() => instance.reload());
    return instance;
  }

  /** host:port actually bound. */
  get address(): string {
    return boundAddress(this.server);
  }

  /** The port actually bound. */
  get port(): number {
    const address = this.address;
    return Number(address.slice(address.lastIndexOf(':') + 1));
  }

  /** How the sender is authenticated, in words: 'client certificate and bearer token', or undefined: nobody. */
  get authentication(): string | undefined {
    const methods = [
      this.options.clientCAFile ? 'client certificate' : undefined,
      this.options.token ? 'bearer token' : undefined,
    ].filter(Boolean);
    return methods.length > 0 ? methods.join(' and ') : undefined;
  }

  /** Requests by outcome: the API server's, and the peers'. */
  stats(): {
    requests: ReadonlyMap<WebhookOutcome, number>;
    peerRequests: ReadonlyMap<WebhookOutcome, number>;
  } {
    return { requests: this.counts, peerRequests: this.peerCounts };
  }

  /** The serving certificate and key now, and each time they are reloaded (a peer client presents them). */
  onCertificate(listener: (files: { cert: Buffer; key: Buffer }) => void): void {
    this.certificateListeners.push(listener);
    listener({ cert: this.files.cert, key: this.files.key });
  }

  /**
   * The SHA-256 fingerprints a peer's certificate must have (ours, the one before a reload, and the
   * source's next one: during a rotation the other replica may switch first).
   */
  get peerFingerprints(): readonly string[] {
    const next = this.options.certificate?.next;
    if (!next) return this.ownCertificates;
    if (next !== this.next?.cert) {
      let fingerprint: string | undefined;
      try {
        fingerprint = fingerprintOf(next);
      } catch {
        // Not a certificate: no peer presents it.
      }
      this.next = { cert: next, fingerprint };
    }
    const { fingerprint } = this.next;
    return fingerprint && !this.ownCertificates.includes(fingerprint)
      ? [...this.ownCertificates, fingerprint]
      : this.ownCertificates;
  }

  async close(): Promise<void> {
    clearInterval(this.reloadTimer);
    const closed = closeServer(this.server);
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Loads the files again when one changed; a set that does not load keeps the one in use. */
  private reloadIfChanged(): void {
    const stamp = stampOf(this.options);
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    this.reload();
  }

  /** Takes the certificate, key and CA as they are now; a set that does not load keeps the one in use. */
  private reload(): void {
    try {
      const files = readTlsFiles(this.options);
      const fingerprint = fingerprintOf(files.cert);
      this.server.setSecureContext(secureOptions(files));
      this.files = files;
      // The other replica may still present the previous certificate until its kubelet updates the Secret.
      this.ownCertificates = [
        fingerprint,
        ...this.ownCertificates.filter((known) => known !== fingerprint),
      ].slice(0, 2);
      for (const listener of this.certificateListeners) listener({ cert: files.cert, key: files.key });
      this.options.log.info(`${this.options.name}: certificate, key or CA changed; reloaded.`);
    } catch (error) {
      this.options.log.warn(
        `${this.options.name}: the changed certificate, key or CA does not load (${errorMessage(error)}); still using the previous ones.`,
      );
    }
  }

  private count(outcome: WebhookOutcome, peer: boolean): number {
    const counts = peer ? this.peerCounts : this.counts;
    const seen = counts.get(outcome) ?? 0;
    counts.set(outcome, seen + 1);
    return seen;
  }

  private answer(
    response: ServerResponse,
    started: bigint,
    peer: boolean,
    outcome: WebhookOutcome,
    status: number,
    body: string,
    headers: Record<string, string> = {},
  ): void {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(body);
    this.options.onAnswered?.(outcome, Number(process.hrtime.bigint() - started) / 1e9, peer);
  }

  private refuse(
    response: ServerResponse,
    started: bigint,
    peer: boolean,
    refusal: Refusal,
    from: string,
    headers: Record<string, string> = {},
  ): void {
    if (this.count(refusal.outcome, peer) === 0) {
      const metric = peer ? 'kubediff_peer_requests_total' : this.options.requestsMetric;
      this.options.log.warn(
        `${this.options.name}: refused a ${peer ? 'peer ' : ''}request from ${from}: ${refusal.why}. Counted in ${metric}{outcome="${refusal.outcome}"}; logged once.`,
      );
    }
    response.writeHead(refusal.status, {
      'content-type': 'text/plain; charset=utf-8',
      connection: 'close',
      ...headers,
    });
    response.end(`${refusal.why}\n`);
    this.options.onAnswered?.(refusal.outcome, Number(process.hrtime.bigint() - started) / 1e9, peer);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const started = process.hrtime.bigint();
    const socket = request.socket as TLSSocket;
    const from = socket.remoteAddress ?? 'an unknown address';
    const peer = this.options.peerRoute !== undefined && (request.url ?? '').split('?')[0] === PEER_PATH;
    const route = peer ? (this.options.peerRoute as WebhookRoute) : this.options.route;
    const refusal = peer ? this.authenticatePeer(socket) : this.authenticate(request, socket);
    const refuse = (why: Refusal, headers?: Record<string, string>) => {
      request.resume();
      this.refuse(response, started, peer, why, from, headers);
    };
    const tooLarge: Refusal = { status: 413, outcome: 'too_large', why: this.tooLarge() };
    if (refusal) {
      refuse(refusal);
    } else if (request.method !== 'POST') {
      refuse(
        { status: 405, outcome: 'not_allowed', why: `method ${request.method} is not allowed (POST only)` },
        { allow: 'POST' },
      );
    } else if (Number(request.headers['content-length']) > this.options.maxRequestBytes) {
      refuse(tooLarge);
    } else if (!this.read(request, response, { started, peer, route, from, tooLarge })) {
      const retryAfter = this.options.busyRetryAfterSeconds;
      refuse(
        { status: 503, outcome: 'busy', why: `more than ${this.slots.limit} requests at once` },
        retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {},
      );
    }
  }

  /**
   * Reads the body within the bound, then hands it to the route and writes its answer; false when no
   * read can be had (read-slots.ts).
   */
  private read(
    request: IncomingMessage,
    response: ServerResponse,
    context: { started: bigint; peer: boolean; route: WebhookRoute; from: string; tooLarge: Refusal },
  ): boolean {
    const { started, peer, route, from, tooLarge } = context;
    // A body whose length is declared (within the bound: checked before) is copied into a buffer of its
    // own as it arrives, a chunk at a time: no copy of the whole body blocks this thread at its end, and
    // the buffer can be handed to another thread as it is. Of it, only what the route's plan keeps: the rest
    // is read and dropped, so that a large body the route cannot use never takes the memory of its size
    // (and, held on this thread's heap, the garbage collections that memory brings). Otherwise its chunks
    // are joined at the end.
    const declared = Number(request.headers['content-length']);
    const hasLength = Number.isSafeInteger(declared) && declared > 0;
    const plan: BodyPlan = route.plan?.(hasLength ? declared : this.options.maxRequestBytes) ?? {
      keepBytes: Number.POSITIVE_INFINITY,
      receive: (body) => route.receive(body),
    };
    const whole = hasLength ? Buffer.allocUnsafe(Math.min(declared, plan.keepBytes)) : undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    let kept = 0;
    let done = false;
    let deadline: NodeJS.Timeout | undefined;
    let slot: ReadSlot | undefined;
    const finish = () => {
      if (done) return true;
      done = true;
      clearTimeout(deadline);
      return slot?.end() ?? false;
    };
    // The rest of the body is not read: the connection closes once the refusal is sent, not before
    // (destroyed at once, the client could see a reset instead of the answer).
    const cut = (refusal: Refusal) => {
      finish();
      plan.abandon?.();
      chunks.length = 0;
      this.slots.judge(from, false);
      response.once('finish', () => request.destroy());
      this.refuse(response, started, peer, refusal, from);
    };
    slot = this.slots.take(from, (reason) =>
      cut({ status: 408, outcome: 'timeout', why: this.cutWhy(reason, from) }),
    );
    if (!slot) {
      plan.abandon?.();
      return false;
    }
    const timeoutMs = this.options.bodyTimeoutMs;
    if (timeoutMs !== undefined) {
      deadline = setTimeout(() => {
        if (done) return;
        cut({
          status: 408,
          outcome: 'timeout',
          why: `the body did not arrive within ${formatDuration(timeoutMs)}`,
        });
      }, timeoutMs);
    }
    request.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > this.options.maxRequestBytes || (hasLength && size > declared)) {
        cut(tooLarge);
        return;
      }
      const at = size - chunk.length;
      if (whole) {
        if (at < whole.length) chunk.copy(whole, at, 0, Math.min(chunk.length, whole.length - at));
      } else if (kept < plan.keepBytes) {
        const part = chunk.subarray(0, plan.keepBytes - kept);
        chunks.push(part);
        kept += part.length;
      }
    });
    const gone = () => {
      if (done) return;
      finish();
      plan.abandon?.();
      this.slots.judge(from, false);
    };
    request.on('error', gone);
    request.on('close', gone);
    request.on('end', () => {
      if (done) return;
      const prompt = finish();
      const body = whole ? whole.subarray(0, Math.min(size, whole.length)) : Buffer.concat(chunks, kept);
      chunks.length = 0;
      const answered = (answer: WebhookAnswer, outcome: WebhookOutcome = 'bad_request') => {
        this.slots.judge(from, prompt && answer.status < 400);
        if (answer.status >= 400) {
          this.refuse(
            response,
            started,
            peer,
            { status: answer.status, outcome, why: answer.why ?? 'the body cannot be read' },
            from,
          );
          return;
        }
        this.count('accepted', peer);
        this.answer(response, started, peer, 'accepted', answer.status, answer.body);
        if (answer.after) this.takeRecords(answer.after);
      };
      // A route answers every body it can read; anything else is a bug, contained to this request.
      const failed = (error: unknown) => {
        this.options.log.warn(`${this.options.name}: a request failed: ${errorMessage(error)}`);
        answered({ status: 500, body: '{}', why: 'internal error' }, 'internal_error');
      };
      let answer: WebhookAnswer | Promise<WebhookAnswer>;
      try {
        answer = plan.receive(body, size);
      } catch (error) {
        failed(error);
        return;
      }
      if (answer instanceof Promise) {
        answer
          .then((later) => answered(later, later.outcome), failed)
          // An answer that cannot be written any more (the client went away): its connection is closed.
          .catch(() => response.destroy());
      } else {
        answered(answer, answer.outcome);
      }
    });
    return true;
  }

  /** The 408 of a read that gave its place to another request (read-slots.ts). */
  private cutWhy(reason: CutReason, from: string): string {
    switch (reason) {
      case 'slow':
        return `the body was still arriving after ${formatDuration(this.options.slowBodyMs ?? 0)} while other requests waited`;
      case 'share':
        return `the body was still arriving while a request from another address waited, and ${from} held more of the ${this.slots.limit} reads than any other address`;
      case 'standing':
        return 'the body was still arriving while a request from an address whose bodies arrive promptly waited';
    }
  }

  /**
   * Runs `take` (a request's records, to the join and the peers: an answer's `after`, or what a route
   * takes later) where an exception would be unheard and end the process; it costs those records only.
   */
  takeRecords(take: () => void): void {
    try {
      take();
    } catch (error) {
      const what = 'taking the records of a request';
      const object = { resource: `the ${this.options.name}` };
      if (this.options.failures) {
        this.options.failures.report('handler', what, object, error, 'its records are dropped');
      } else {
        this.options.log.warn(
          `${this.options.name}: ${what} failed: ${errorMessage(error)}; its records are dropped.`,
        );
      }
    }
  }

  private tooLarge(): string {
    return `the body is larger than ${formatSize(this.options.maxRequestBytes)} (${this.options.settingsKey}.maxRequestSize)`;
  }

  /** A peer presents this replica's own serving certificate: proof that it holds the same key. */
  private authenticatePeer(socket: TLSSocket): Refusal | undefined {
    const certificate = socket.getPeerCertificate();
    const fingerprint = certificate?.raw ? fingerprintOf(certificate.raw) : undefined;
    if (fingerprint === undefined)
      return { status: 401, outcome: 'unauthorized', why: 'no client certificate' };
    if (!this.peerFingerprints.includes(fingerprint)) {
      return {
        status: 401,
        outcome: 'unauthorized',
        why: "its client certificate is not this replica's serving certificate",
      };
    }
    return undefined;
  }

  private authenticate(request: IncomingMessage, socket: TLSSocket): Refusal | undefined {
    if (this.options.clientCAFile !== undefined) {
      if (!socket.authorized) {
        const certificate = socket.getPeerCertificate();
        const why =
          certificate && Object.keys(certificate).length > 0
            ? `its client certificate is not valid (${String(socket.authorizationError)})`
            : 'no client certificate';
        return { status: 401, outcome: 'unauthorized', why };
      }
      if (this.names) {
        const name = socket.getPeerCertificate().subject?.CN;
        const cn = Array.isArray(name) ? name[0] : name;
        if (!cn || !this.names.some((pattern) => pattern.test(cn))) {
          return {
            status: 403,
            outcome: 'forbidden',
            why: `client certificate name ${JSON.stringify(cn ?? '')} is not in ${this.options.settingsKey}.clientNames`,
          };
        }
      }
    }
    if (this.token) {
      const given = Buffer.from(request.headers.authorization ?? '');
      if (given.length !== this.token.length || !timingSafeEqual(given, this.token)) {
        return {
          status: 401,
          outcome: 'unauthorized',
          why: given.length === 0 ? 'no bearer token' : 'a wrong bearer token',
        };
      }
    }
    return undefined;
  }
}
