// Credentials and TLS material of a cluster identity, asked from @kubernetes/client-node each time:
// headers for every request (client-node refreshes tokens, runs exec plugins, re-reads the in-cluster
// token), and TLS settings (CA, client certificate and key, server name) for every new connection, so
// that a rotated client certificate is used from the next connection on. Also: opening a TLS
// connection with ALPN, the one place both HTTP/1.1 and HTTP/2 connections start from.
import net from 'node:net';
import tls from 'node:tls';
import { errorFromTransport } from './errors.ts';
import type { ClusterIdentity } from './kubeconfig.ts';

export interface TlsSettings {
  ca?: string | Buffer | undefined;
  cert?: string | Buffer | undefined;
  key?: string | Buffer | undefined;
  rejectUnauthorized?: boolean | undefined;
  servername?: string | undefined;
}

interface HttpsOptions extends TlsSettings {
  headers?: Record<string, string | number | string[]>;
  auth?: string;
}

async function httpsOptionsOf(identity: ClusterIdentity): Promise<HttpsOptions> {
  const options: HttpsOptions = {};
  await identity.kubeConfig.applyToHTTPSOptions(options);
  return options;
}

/** The authentication headers for the next request (lower-case names). */
export async function authHeaders(identity: ClusterIdentity): Promise<Record<string, string>> {
  const options = await httpsOptionsOf(identity);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  if (options.auth && !headers.authorization) {
    headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
  }
  return headers;
}

/** The TLS settings for the next connection. */
export async function tlsSettings(identity: ClusterIdentity): Promise<TlsSettings> {
  const { ca, cert, key, rejectUnauthorized, servername } = await httpsOptionsOf(identity);
  return { ca, cert, key, rejectUnauthorized, servername };
}

export interface TlsTarget {
  /** The API server's URL (https). */
  server: URL;
  settings: TlsSettings;
  /** Protocols offered in ALPN, preferred first. */
  alpn: string[];
  timeoutMs: number;
}

/**
 * A TLS connection, resolved once the handshake is done (`alpnProtocol` says what the server chose).
 * Failures are KubeErrors ('tls' for certificate problems, 'network' otherwise).
 */
export function connectTls(target: TlsTarget): Promise<tls.TLSSocket> {
  const host = target.server.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.server.port || 443);
  const { settings } = target;
  // SNI carries host names only (RFC 6066); tls-server-name from the kubeconfig wins.
  const servername = settings.servername ?? (net.isIP(host) ? undefined : host);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      ALPNProtocols: target.alpn,
      ...(servername !== undefined ? { servername } : {}),
      ...(settings.ca !== undefined ? { ca: settings.ca } : {}),
      ...(settings.cert !== undefined ? { cert: settings.cert } : {}),
      ...(settings.key !== undefined ? { key: settings.key } : {}),
      ...(settings.rejectUnauthorized !== undefined
        ? { rejectUnauthorized: settings.rejectUnauthorized }
        : {}),
    });
    const timer = setTimeout(() => {
      socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' }));
    }, target.timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(errorFromTransport(error, target.server.origin, '/'));
    };
    socket.once('error', fail);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      // HTTP/2 PINGs find a dead connection; TCP keep-alive still helps HTTP/1.1 and NAT tables.
      socket.setKeepAlive(true, 30_000);
      socket.setNoDelay(true);
      resolve(socket);
    });
  });
}
