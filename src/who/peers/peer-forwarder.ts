// `--peers`: each replica of a leader-elected pair posts the "who" records it received to the others, so
// that both joins have every record and a takeover loses none in flight (docs/who.md, "Two replicas").
// Peers are what `address` resolves to (this replica skipped), looked up every RESOLVE_INTERVAL_MS, and
// authenticated both ways by the shared serving certificate. Bounded: maxQueued records per peer (oldest
// dropped), MAX_BATCH per request; a failed request loses its records for that peer. Counted in
// kubediff_peer_records_total{outcome}; the first failure of a peer's episode is logged.

import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { Agent, type Dispatcher, request } from 'undici';
import { groupedCount } from '../../util/count-text.ts';
import { formatDuration } from '../../util/duration.ts';
import { errorMessage } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';
import type { AdmissionRecord } from '../admission/admission-match.ts';
import type { AuditRecord } from '../audit/audit-match.ts';
import { PEER_PATH, type WebhookListener } from '../listener/webhook-listener.ts';
import { parsePeerAddress } from './peer-address.ts';
import { encodePeerRecords, type PeerRecords } from './peer-records.ts';

export interface PeerForwarderOptions {
  /** host:port: a name that resolves to every replica (a headless Service), or one address. */
  address: string;
  /** The listener on that port on this replica: its certificate is the credential, its port is skipped. */
  listener: Pick<WebhookListener, 'onCertificate' | 'peerFingerprints' | 'port'>;
  log: Logger;
  maxQueued?: number;
  resolveIntervalMs?: number;
  /** A connection's TCP connect and TLS handshake at most; default CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /** The addresses a name resolves to (tests). */
  resolve?: (host: string) => Promise<string[]>;
}

export const PEER_DEFAULTS = { maxQueued: 10_000 } as const;
const MAX_BATCH = 1_000;
const RESOLVE_INTERVAL_MS = 10_000;
const REQUEST_TIMEOUT_MS = 5_000;
/**
 * Our own connector replaces undici's, where its connect timeout lives: a peer that accepts TCP and never
 * completes TLS (a stuck replica, a wrong port) would otherwise hold its queue's sending for good.
 */
const CONNECT_TIMEOUT_MS = 5_000;

export const PEER_RECORD_OUTCOMES = ['sent', 'failed', 'dropped'] as const;
export type PeerRecordOutcome = (typeof PEER_RECORD_OUTCOMES)[number];

type Queued = { audit: AuditRecord } | { admission: AdmissionRecord };

interface Peer {
  readonly origin: string;
  queue: Queued[];
  sending: boolean;
  failing: boolean;
}

export class PeerForwarder {
  private readonly options: PeerForwarderOptions;
  private readonly host: string;
  private readonly port: number;
  private readonly peers = new Map<string, Peer>();
  private readonly counts = new Map<PeerRecordOutcome, number>();
  private agent: Agent | undefined;
  private resolveTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: PeerForwarderOptions) {
    this.options = options;
    const { host, port } = parsePeerAddress(options.address);
    this.host = host;
    this.port = port;
    options.listener.onCertificate((files) => {
      const previous = this.agent;
      this.agent = this.agentWith(files);
      void previous?.close();
    });
  }

  /** Resolves the peers now, then every RESOLVE_INTERVAL_MS. */
  async start(): Promise<void> {
    await this.resolvePeers();
    const interval = this.options.resolveIntervalMs ?? RESOLVE_INTERVAL_MS;
    this.resolveTimer = setInterval(() => void this.resolvePeers(), interval);
    this.resolveTimer.unref();
  }

  /** Records received from the API server, for every peer. */
  forward(records: Partial<PeerRecords>): void {
    if (this.closed) return;
    const items: Queued[] = [
      ...(records.audit ?? []).map((audit) => ({ audit })),
      ...(records.admission ?? []).map((admission) => ({ admission })),
    ];
    if (items.length === 0) return;
    const max = this.options.maxQueued ?? PEER_DEFAULTS.maxQueued;
    for (const peer of this.peers.values()) {
      peer.queue.push(...items);
      const excess = peer.queue.length - max;
      if (excess > 0) {
        peer.queue.splice(0, excess);
        if (this.count('dropped', excess) === 0) {
          this.options.log.warn(
            `peers: more than ${groupedCount(max)} records wait to be sent to ${peer.origin}; dropping the oldest. Counted in kubediff_peer_records_total{outcome="dropped"}; logged once.`,
          );
        }
      }
      if (!peer.sending) {
        peer.sending = true;
        // Records that come in the same turn go in one request.
        setImmediate(() => void this.send(peer));
      }
    }
  }

  /** Records by outcome, and how many peers there are now (for /metrics). */
  stats(): { records: ReadonlyMap<PeerRecordOutcome, number>; peers: number } {
    return { records: this.counts, peers: this.peers.size };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.resolveTimer);
    this.peers.clear();
    await this.agent?.destroy();
  }

  private count(outcome: PeerRecordOutcome, records: number): number {
    const before = this.counts.get(outcome) ?? 0;
    this.counts.set(outcome, before + records);
    return before;
  }

  private async send(peer: Peer): Promise<void> {
    while (!this.closed && peer.queue.length > 0 && this.peers.get(peer.origin) === peer) {
      const batch = peer.queue.splice(0, MAX_BATCH);
      const body = encodePeerRecords({
        audit: batch.flatMap((item) => ('audit' in item ? [item.audit] : [])),
        admission: batch.flatMap((item) => ('admission' in item ? [item.admission] : [])),
      });
      try {
        const response = await request(`${peer.origin}${PEER_PATH}`, {
          method: 'POST',
          dispatcher: this.agent as Dispatcher,
          headers: { 'content-type': 'application/json' },
          body,
          headersTimeout: REQUEST_TIMEOUT_MS,
          bodyTimeout: REQUEST_TIMEOUT_MS,
        });
        const text = await response.body.text();
        if (response.statusCode !== 200)
          throw new Error(`it answers ${response.statusCode}: ${text.trim().slice(0, 200)}`);
        this.count('sent', batch.length);
        if (peer.failing) {
          peer.failing = false;
          this.options.log.info(`peers: sending records to ${peer.origin} again.`);
        }
      } catch (error) {
        this.count('failed', batch.length);
        if (!peer.failing && !this.closed) {
          peer.failing = true;
          this.options.log.warn(
            `peers: cannot send records to ${peer.origin} (${errorMessage(error)}); the writes they name are not attributed on that replica meanwhile. Counted in kubediff_peer_records_total{outcome="failed"}; logged until it answers again.`,
          );
        }
      }
    }
    peer.sending = false;
  }

  /** The peers: what the address resolves to, but this replica's own listener. */
  private async resolvePeers(): Promise<void> {
    let addresses: string[];
    try {
      addresses = isIP(this.host) ? [this.host] : await (this.options.resolve ?? defaultResolve)(this.host);
    } catch (error) {
      this.options.log.debug(`peers: cannot resolve ${this.host}: ${errorMessage(error)}`);
      return;
    }
    if (this.closed) return;
    const own = ownAddresses();
    const ownPort = this.options.listener.port;
    const origins = new Set(
      addresses
        .filter((address) => !(this.port === ownPort && own.has(address)))
        .map((address) => `https://${isIP(address) === 6 ? `[${address}]` : address}:${this.port}`),
    );
    for (const origin of this.peers.keys()) if (!origins.has(origin)) this.peers.delete(origin);
    for (const origin of origins) {
      if (!this.peers.has(origin))
        this.peers.set(origin, { origin, queue: [], sending: false, failing: false });
    }
  }

  /** Connections that present this replica's certificate and accept only a server that presents it too. */
  private agentWith(files: { cert: Buffer; key: Buffer }): Agent {
    const fingerprints = () => this.options.listener.peerFingerprints;
    const timeoutMs = this.options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    return new Agent({
      keepAliveTimeout: 30_000,
      connections: 2,
      connect: (options, callback) => {
        let settled = false;
        const socket: TLSSocket = tlsConnect({
          host: options.hostname,
          port: Number(options.port),
          cert: files.cert,
          key: files.key,
          // The server's certificate is checked below, against ours, not against a CA.
          rejectUnauthorized: false,
          minVersion: 'TLSv1.2',
          ALPNProtocols: ['http/1.1'],
        });
        const timer = setTimeout(() => {
          if (settled) return;
          settled = true;
          socket.destroy();
          callback(new Error(`no TLS connection within ${formatDuration(timeoutMs)}`), null);
        }, timeoutMs);
        socket.once('secureConnect', () => {
          clearTimeout(timer);
          const fingerprint = socket.getPeerCertificate().fingerprint256;
          if (settled) return;
          settled = true;
          if (fingerprint && fingerprints().includes(fingerprint)) {
            callback(null, socket);
          } else {
            socket.destroy();
            callback(new Error("the server's certificate is not this replica's serving certificate"), null);
          }
        });
        socket.once('error', (error) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          callback(error, null);
        });
      },
    });
  }
}

async function defaultResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((entry) => entry.address);
}

/** Every address of this machine's (this pod's) interfaces. */
function ownAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) addresses.add(entry.address);
  }
  return addresses;
}
