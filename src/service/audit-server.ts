// `--audit-listen`: the HTTPS endpoint the API server's audit webhook backend posts to (docs/audit.md).
//
// Nobody may inject a fake "who": every request must authenticate, with a client certificate signed by
// `clientCAFile` (and, with `clientNames`, one of those names) and/or the bearer `token`: every method
// configured must pass. Anything else is refused, 401 without valid credentials, 403 for a certificate
// whose name is not allowed, counted in kubediff_audit_requests_total{outcome} and logged once per kind.
// The certificate, key and CA files are read again when they change (a cert-manager renewal, a
// rotated Secret), checked every `reloadIntervalMs`; a new set that does not load keeps the old one.
//
// Bounded: a body larger than `maxRequestBytes` is refused (413) without being read further, and at most
// MAX_CONCURRENT_REQUESTS bodies are read at once (503 beyond it: the API server's batch mode retries),
// so what audit requests hold in memory is at most their product. A body is parsed, its records taken
// (src/service/audit-records.ts) and dropped before the answer goes out.
//
// Whoever reaches the port cannot hold it (src/service/listener-guard.ts, AUDIT_LISTENER_LIMITS): a
// TLS handshake must end within 5 s, connections are capped, and at the cap a new connection replaces
// the oldest that has sent no request, so a flood of idle sockets never keeps the API server out.
// A refused request closes its connection.

import { timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AuditRecord } from '../events/audit-join.ts';
import { errorMessage, UsageError } from '../util/errors.ts';
import { globToRegExp } from '../util/glob.ts';
import type { Logger } from '../util/log.ts';
import { formatSize } from '../util/size.ts';
import { AuditBodyError, auditRecordsOf } from './audit-records.ts';
import { boundAddress, closeServer, listenOn } from './health-server.ts';
import { guardedServerOptions, ListenerGuard, type ListenerLimits } from './listener-guard.ts';

export interface AuditServerOptions {
  listen: string;
  certFile: string;
  keyFile: string;
  /** Client certificates must be signed by this CA. */
  clientCAFile?: string | undefined;
  /** …and have one of these subject common names (globs). */
  clientNames?: readonly string[] | undefined;
  /** Requests must carry `Authorization: Bearer <token>`. */
  token?: string | undefined;
  maxRequestBytes: number;
  reloadIntervalMs?: number;
  /** Where the records go (the audit join). */
  onRecords: (records: AuditRecord[]) => void;
  log: Logger;
}

export const AUDIT_SERVER_DEFAULTS = { maxRequestBytes: 16 * 1024 * 1024, reloadIntervalMs: 10_000 } as const;
const MAX_CONCURRENT_REQUESTS = 4;

/** Documented in docs/audit.md ("Limits"). */
export const AUDIT_LISTENER_LIMITS: ListenerLimits = {
  maxConnections: 64,
  handshakeTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 30_000,
};

export const AUDIT_REQUEST_OUTCOMES = [
  'accepted',
  'unauthorized',
  'forbidden',
  'bad_request',
  'too_large',
  'busy',
  'not_allowed',
] as const;

export type AuditRequestOutcome = (typeof AUDIT_REQUEST_OUTCOMES)[number];

interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

export class AuditServer {
  private readonly server: Server;
  /** Its connections' guard (limits, contained errors), read by the metrics. */
  readonly listener: ListenerGuard;
  private readonly options: AuditServerOptions;
  private readonly counts = new Map<AuditRequestOutcome, number>();
  private readonly names: RegExp[] | undefined;
  private readonly token: Buffer | undefined;
  private reading = 0;
  private records = 0;
  private reloadTimer: NodeJS.Timeout | undefined;
  private fileStamp: string;

  private constructor(server: Server, options: AuditServerOptions, stamp: string) {
    this.server = server;
    this.listener = ListenerGuard.attach(server, 'audit', AUDIT_LISTENER_LIMITS, options.log);
    this.options = options;
    this.fileStamp = stamp;
    this.names = options.clientNames?.map(globToRegExp);
    this.token = options.token ? Buffer.from(`Bearer ${options.token}`) : undefined;
  }

  /** Listens; rejects with a UsageError when the files cannot be read or the port cannot be had. */
  static async start(options: AuditServerOptions): Promise<AuditServer> {
    const files = readTlsFiles(options);
    let server: Server;
    try {
      server = createServer({
        ...guardedServerOptions(AUDIT_LISTENER_LIMITS),
        ...secureOptions(files),
        requestCert: options.clientCAFile !== undefined,
        // Checked per request, so that a refusal is an HTTP answer (counted) rather than a broken handshake.
        rejectUnauthorized: false,
        minVersion: 'TLSv1.2',
      });
    } catch (error) {
      throw new UsageError(
        `the audit webhook's certificate, key or client CA does not load (${errorMessage(error)}); check audit.certFile, audit.keyFile and audit.clientCAFile.`,
      );
    }
    const instance = new AuditServer(server, options, stampOf(options));
    server.on('request', (request, response) => instance.handle(request, response));
    await listenOn(server, options.listen, '--audit-listen');
    const interval = options.reloadIntervalMs ?? AUDIT_SERVER_DEFAULTS.reloadIntervalMs;
    instance.reloadTimer = setInterval(() => instance.reloadIfChanged(), interval);
    instance.reloadTimer.unref();
    const methods = [
      options.clientCAFile ? 'client certificate' : undefined,
      options.token ? 'bearer token' : undefined,
    ].filter(Boolean);
    options.log.info(
      `receiving audit events on https://${instance.address} (authenticated by ${methods.join(' and ')})`,
    );
    return instance;
  }

  /** host:port actually bound. */
  get address(): string {
    return boundAddress(this.server);
  }

  /** Requests by outcome, and records taken (for /metrics). */
  stats(): { requests: ReadonlyMap<AuditRequestOutcome, number>; records: number } {
    return { requests: this.counts, records: this.records };
  }

  async close(): Promise<void> {
    clearInterval(this.reloadTimer);
    await closeServer(this.server);
  }

  /** Loads the files again when one changed; a set that does not load keeps the one in use. */
  private reloadIfChanged(): void {
    const stamp = stampOf(this.options);
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    try {
      this.server.setSecureContext(secureOptions(readTlsFiles(this.options)));
      this.options.log.info('audit webhook: certificate, key or CA changed; reloaded.');
    } catch (error) {
      this.options.log.warn(
        `audit webhook: the changed certificate, key or CA does not load (${errorMessage(error)}); still using the previous ones.`,
      );
    }
  }

  private count(outcome: AuditRequestOutcome): number {
    const seen = this.counts.get(outcome) ?? 0;
    this.counts.set(outcome, seen + 1);
    return seen;
  }

  private refuse(
    response: ServerResponse,
    status: number,
    outcome: AuditRequestOutcome,
    why: string,
    from: string,
  ): void {
    if (this.count(outcome) === 0) {
      this.options.log.warn(
        `audit webhook: refused a request from ${from}: ${why}. Counted in kubediff_audit_requests_total{outcome="${outcome}"}; logged once.`,
      );
    }
    response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
    response.end(`${why}\n`);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const socket = request.socket as TLSSocket;
    const from = socket.remoteAddress ?? 'an unknown address';
    const refusal = this.authenticate(request, socket);
    if (refusal) {
      request.resume();
      this.refuse(response, refusal.status, refusal.outcome, refusal.why, from);
      return;
    }
    if (request.method !== 'POST') {
      request.resume();
      response.setHeader('allow', 'POST');
      this.refuse(response, 405, 'not_allowed', `method ${request.method} is not allowed (POST only)`, from);
      return;
    }
    const declared = Number(request.headers['content-length']);
    if (declared > this.options.maxRequestBytes) {
      request.resume();
      this.refuse(response, 413, 'too_large', this.tooLarge(), from);
      return;
    }
    if (this.reading >= MAX_CONCURRENT_REQUESTS) {
      request.resume();
      response.setHeader('retry-after', '1');
      this.refuse(response, 503, 'busy', `more than ${MAX_CONCURRENT_REQUESTS} requests at once`, from);
      return;
    }
    this.reading++;
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        this.reading--;
      }
    };
    request.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > this.options.maxRequestBytes) {
        finish();
        chunks.length = 0;
        this.refuse(response, 413, 'too_large', this.tooLarge(), from);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('error', finish);
    request.on('close', finish);
    request.on('end', () => {
      if (done) return;
      finish();
      let records: AuditRecord[];
      try {
        records = auditRecordsOf(Buffer.concat(chunks, size).toString('utf8'));
      } catch (error) {
        const why = error instanceof AuditBodyError ? error.message : 'the body cannot be read';
        this.refuse(response, 400, 'bad_request', why, from);
        return;
      } finally {
        chunks.length = 0;
      }
      this.count('accepted');
      this.records += records.length;
      this.options.onRecords(records);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  }

  private tooLarge(): string {
    return `the body is larger than ${formatSize(this.options.maxRequestBytes)} (audit.maxRequestSize)`;
  }

  private authenticate(
    request: IncomingMessage,
    socket: TLSSocket,
  ): { status: number; outcome: AuditRequestOutcome; why: string } | undefined {
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
            why: `client certificate name ${JSON.stringify(cn ?? '')} is not in audit.clientNames`,
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

function readTlsFiles(options: AuditServerOptions): TlsFiles {
  const read = (file: string, key: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new UsageError(`cannot read audit.${key} ${file}: ${errorMessage(error)}; check the path.`);
    }
  };
  return {
    cert: read(options.certFile, 'certFile'),
    key: read(options.keyFile, 'keyFile'),
    ...(options.clientCAFile ? { ca: read(options.clientCAFile, 'clientCAFile') } : {}),
  };
}

function secureOptions(files: TlsFiles): { cert: Buffer; key: Buffer; ca?: Buffer } {
  return { cert: files.cert, key: files.key, ...(files.ca ? { ca: files.ca } : {}) };
}

/** What says a file changed: size, mtime and inode of each (a Secret volume swaps a symlink). */
function stampOf(options: AuditServerOptions): string {
  return [options.certFile, options.keyFile, options.clientCAFile]
    .map((file) => {
      if (!file) return '';
      try {
        const stat = statSync(file);
        return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}
