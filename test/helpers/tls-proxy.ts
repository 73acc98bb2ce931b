// A TLS-terminating loopback proxy in front of the API server, for what the TCP-level fault proxy
// cannot show: which protocol a client negotiates, and which client certificate it presents.
//
// The proxy ends the client's TLS with a certificate of its own (a throwaway CA made with openssl, so
// the client's kubeconfig must trust `pki.caPem`), offers only the ALPN protocols it is given (offer
// ['http/1.1'] to play a proxy that does not speak HTTP/2), optionally requires a client certificate
// signed by the same CA, then opens TLS to the API server with the protocol the client chose and
// copies bytes both ways. Requests keep their bearer token, so the API server authenticates as usual.
import type net from 'node:net';
import tls from 'node:tls';
import type { TestPki } from './pki.ts';

export interface TlsProxyOptions {
  /** The API server and the CA its certificate chains to. */
  target: { host: string; port: number; caPem: string };
  pki: TestPki;
  /** ALPN protocols offered to clients, preferred first. */
  alpn: string[];
  /** Refuse clients without a certificate signed by `pki`'s CA. */
  requireClientCert?: boolean;
}

export interface TlsProxy {
  readonly port: number;
  url(): string;
  /** The protocol each accepted client chose ('' when it sent no ALPN), in order. */
  readonly protocols: readonly string[];
  /** The CN of the certificate each accepted client presented ('' for none), in order. */
  readonly clientNames: readonly string[];
  /** Client connections open now, and the most open at once so far. */
  readonly open: number;
  readonly peakOpen: number;
  close(): Promise<void>;
}

export async function startTlsProxy(options: TlsProxyOptions): Promise<TlsProxy> {
  const protocols: string[] = [];
  const clientNames: string[] = [];
  const sockets = new Set<net.Socket>();
  let open = 0;
  let peakOpen = 0;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
  };
  const server = tls.createServer(
    {
      key: options.pki.serverKey,
      cert: options.pki.serverCert,
      ALPNProtocols: options.alpn,
      ...(options.requireClientCert
        ? { requestCert: true, rejectUnauthorized: true, ca: options.pki.caPem }
        : {}),
    },
    (client) => {
      track(client);
      const protocol = client.alpnProtocol || '';
      protocols.push(protocol);
      clientNames.push(String(client.getPeerCertificate()?.subject?.CN ?? ''));
      open++;
      peakOpen = Math.max(peakOpen, open);
      client.once('close', () => open--);
      const upstream = tls.connect({
        host: options.target.host,
        port: options.target.port,
        ca: options.target.caPem,
        ALPNProtocols: [protocol || 'http/1.1'],
      });
      track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    },
  );
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('tls proxy: no TCP address');
  return {
    port: address.port,
    url: () => `https://127.0.0.1:${address.port}`,
    protocols,
    clientNames,
    get open() {
      return open;
    },
    get peakOpen() {
      return peakOpen;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
