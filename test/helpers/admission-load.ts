// Loads on kubediff's admission webhook port (--admission-listen, unauthenticated as on a managed
// cluster) that issue 36 found to starve or stall it, for the tests and the bench (figure 13):
// - slowBodies(): keep-alive TLS connections from other loopback addresses, each sending a valid review
//   whose last byte comes `cycleMs` after the rest, then the next review at once: every read it holds is
//   younger than the 1 s slow-body cut, so that rule alone never frees a read for a real review. A
//   connection the listener closes is opened again.
// - largeReviews(): clients that each post a review of a ConfigMap of many small keys, and the next as
//   soon as the last is answered (or a pause after it).
// - reviewBody() and postReview(): a valid small review, and what its answer says (status, uid, time).
import { randomUUID } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { Agent, request } from 'undici';

/** A ConfigMap UPDATE review by `user`, with request uid `uid`. */
export function reviewBody(
  uid: string,
  options: {
    user?: string;
    namespace?: string;
    name?: string;
    data?: Record<string, string>;
  } = {},
): string {
  const { user = 'bob', namespace = 'load', name = 'load', data = { a: '2' } } = options;
  const object = (resourceVersion?: string, values = data) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, uid: `uid-of-${name}`, ...(resourceVersion ? { resourceVersion } : {}) },
    data: values,
  });
  // The API server's order: the request's uid first.
  return JSON.stringify({
    kind: 'AdmissionReview',
    apiVersion: 'admission.k8s.io/v1',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      requestKind: { group: '', version: 'v1', kind: 'ConfigMap' },
      requestResource: { group: '', version: 'v1', resource: 'configmaps' },
      name,
      namespace,
      operation: 'UPDATE',
      userInfo: { username: user, uid: `${user}-uid`, groups: ['system:authenticated'] },
      object: object(),
      oldObject: object('4', {}),
      dryRun: false,
      options: { kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  });
}

export interface ReviewAnswer {
  status: number;
  /** The answer's response.uid, when it is an AdmissionReview. */
  uid: string | undefined;
  allowed: boolean;
  retryAfter: string | undefined;
  /** Request to the answer's last byte. */
  ms: number;
}

/** Posts `body` to `url` through `agent`: what the answer says. */
export async function postReview(agent: Agent, url: string, body: string | Buffer): Promise<ReviewAnswer> {
  const started = performance.now();
  const response = await request(url, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json' },
    body,
  });
  const text = await response.body.text();
  const ms = performance.now() - started;
  let review: { response?: { uid?: unknown; allowed?: unknown } } = {};
  try {
    review = JSON.parse(text) as typeof review;
  } catch {
    // A refusal's sentence.
  }
  const retryAfter = response.headers['retry-after'];
  return {
    status: response.statusCode,
    uid: typeof review.response?.uid === 'string' ? review.response.uid : undefined,
    allowed: review.response?.allowed === true,
    retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
    ms,
  };
}

export interface Load {
  /** Requests the listener answered, by status. */
  readonly statuses: ReadonlyMap<number, number>;
  /** Connections opened (a closed one is opened again). */
  readonly connections: number;
  stop(): Promise<void>;
}

/**
 * The slow-body attack: `perAddress` connections from each of `addresses` to 127.0.0.1:`port`, each
 * sending reviews whose last byte follows the rest by `cycleMs`.
 */
export function slowBodies(options: {
  port: number;
  ca: string;
  addresses: readonly string[];
  perAddress: number;
  cycleMs: number;
}): Load {
  const statuses = new Map<number, number>();
  const sockets = new Set<TLSSocket>();
  let connections = 0;
  let stopped = false;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = async (localAddress: string) => {
    while (!stopped) {
      const tcp = netConnect({ host: '127.0.0.1', port: options.port, localAddress });
      tcp.on('error', () => {});
      const socket = connect({ socket: tcp, host: '127.0.0.1', ca: options.ca });
      connections++;
      sockets.add(socket);
      socket.on('error', () => {});
      let received = '';
      let wake: () => void = () => {};
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        wake();
      });
      socket.once('close', () => {
        sockets.delete(socket);
        wake();
      });
      const until = (done: () => boolean) =>
        new Promise<void>((resolve) => {
          wake = () => {
            if (done() || socket.destroyed) resolve();
          };
          wake();
        });
      await new Promise<void>((resolve) => {
        socket.once('secureConnect', resolve);
        socket.once('close', resolve);
      });
      while (!stopped && !socket.destroyed) {
        const body = reviewBody(randomUUID());
        received = '';
        socket.write(
          `POST /review HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, -1)}`,
        );
        await pause(options.cycleMs);
        // Refused before its end (503 at once, or its read cut), it is closed; else its last byte.
        if (!socket.destroyed) socket.write(body.slice(-1));
        // The answer: a whole chunked body, or the connection closed after a refusal.
        await until(() => /\r\n0\r\n\r\n$/.test(received) || /\r\nconnection: close\r\n/i.test(received));
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]);
        if (status) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (/\r\nconnection: close\r\n/i.test(received)) break;
      }
      socket.destroy();
      // A refused connection is opened again, without spinning.
      if (!stopped) await pause(10);
    }
  };
  const loops = options.addresses.flatMap((address) =>
    Array.from({ length: options.perAddress }, () => loop(address)),
  );
  return {
    statuses,
    get connections() {
      return connections;
    },
    stop: async () => {
      stopped = true;
      for (const socket of sockets) socket.destroy();
      await Promise.all(loops);
    },
  };
}

/** A ConfigMap of `keys` small keys in a review: about 18 bytes a key (420,000: 7.5 MB). The uid is replaced per post. */
export function largeReviewBody(keys: number): { body: Buffer; withUid(uid: string): Buffer } {
  const data: Record<string, string> = {};
  for (let index = 0; index < keys; index++) data[`k${index}`] = `v${index}`;
  const placeholder = randomUUID();
  const body = Buffer.from(reviewBody(placeholder, { name: 'large', data }));
  const at = body.indexOf(placeholder);
  return {
    body,
    withUid: (uid) => {
      if (Buffer.byteLength(uid) !== placeholder.length) throw new Error('a uid of 36 characters');
      const copy = Buffer.from(body);
      copy.write(uid, at);
      return copy;
    },
  };
}

/**
 * `clients` clients that each post a review of `keys` keys, and the next once it is answered (and
 * `pauseMs` more, if given).
 */
export function largeReviews(options: {
  url: string;
  ca: string;
  clients: number;
  keys: number;
  pauseMs?: number;
}): Load {
  const statuses = new Map<number, number>();
  const large = largeReviewBody(options.keys);
  let stopped = false;
  const agents: Agent[] = [];
  const loop = async () => {
    const agent = new Agent({ connect: { ca: options.ca }, connections: 1 });
    agents.push(agent);
    while (!stopped) {
      try {
        const answer = await postReview(agent, options.url, large.withUid(randomUUID()));
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      } catch {
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  };
  const loops = Array.from({ length: options.clients }, loop);
  return {
    statuses,
    get connections() {
      return agents.length;
    },
    stop: async () => {
      stopped = true;
      await Promise.all(agents.map((agent) => agent.destroy()));
      await Promise.all(loops);
    },
  };
}
