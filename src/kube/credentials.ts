// Credentials and TLS material of a cluster identity, taken afresh for every request and connection:
// headers for every request (a token file is read again when it changes, so the kubelet's rotated
// ServiceAccount token is used from the next request on; exec plugins and auth providers are run by
// @kubernetes/client-node, imported only for a user that has one), and TLS settings (CA, client
// certificate and key, server name) for every new connection, so that a rotated client certificate is
// used from the next connection on. Also: opening a TLS connection with ALPN, the one place both
// HTTP/1.1 and HTTP/2 connections start from.
import { readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../util/errors.ts';
import { printable } from '../util/terminal-text.ts';
import { errorFromTransport, KubeError } from './errors.ts';
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

/** The authentication headers for the next request (lower-case names). */
export async function authHeaders(identity: ClusterIdentity): Promise<Record<string, string>> {
  if (!identity.user.plugin) return plainHeaders(identity);
  const options = await pluginOptions(identity);
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
  // An exec plugin may answer with a client certificate: client-node puts it into the options.
  if (identity.user.plugin) {
    const { ca, cert, key, rejectUnauthorized, servername } = await pluginOptions(identity);
    return { ca, cert, key, rejectUnauthorized, servername };
  }
  const { cluster, user } = identity;
  return {
    ca: cluster.caData ?? (cluster.caFile ? readFileSync(cluster.caFile) : undefined),
    cert: user.certData ?? (user.certFile ? readFileSync(user.certFile) : undefined),
    key: user.keyData ?? (user.keyFile ? readFileSync(user.keyFile) : undefined),
    rejectUnauthorized: cluster.insecureSkipTlsVerify ? false : undefined,
    servername: cluster.tlsServerName,
  };
}

function plainHeaders({ user }: ClusterIdentity): Record<string, string> {
  const headers: Record<string, string> = {};
  const token = user.token ?? (user.tokenFile ? tokenFromFile(user.tokenFile) : undefined);
  if (token) headers.authorization = `Bearer ${token}`;
  else if (user.username !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
  }
  if (user.impersonate) headers['impersonate-user'] = user.impersonate;
  return headers;
}

/**
 * A token file's content, read again when the file changed (the kubelet replaces a projected token
 * by swapping a symlink: the inode changes). A stat per request, no more: requests are LISTs and
 * WATCHes, seconds to minutes apart.
 */
const tokenFiles = new Map<string, { stamp: string; token: string }>();

function tokenFromFile(file: string): string {
  const stat = statSync(file);
  const stamp = `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
  const known = tokenFiles.get(file);
  if (known?.stamp === stamp) return known.token;
  const token = readFileSync(file, 'utf8').trim();
  tokenFiles.set(file, { stamp, token });
  return token;
}

/** client-node's KubeConfig for each identity with a plugin, built once (its authenticators cache tokens). */
const pluginConfigs = new WeakMap<ClusterIdentity, Promise<KubeConfig>>();

async function pluginOptions(identity: ClusterIdentity): Promise<HttpsOptions> {
  let config = pluginConfigs.get(identity);
  if (!config) {
    config = import('@kubernetes/client-node').then(({ KubeConfig }) => {
      const kubeConfig = new KubeConfig();
      // JSON is YAML: the document this module's caller resolved, read by client-node as a kubeconfig.
      kubeConfig.loadFromString(JSON.stringify(identity.document));
      return kubeConfig;
    });
    pluginConfigs.set(identity, config);
  }
  const options: HttpsOptions = {};
  try {
    await (await config).applyToHTTPSOptions(options);
  } catch (error) {
    // Like a 401: the request cannot be authenticated now; a watch retries with backoff.
    const reason = printable(errorMessage(error).split('\n')[0] ?? '').replace(/[.:]\s*$/, '');
    throw new KubeError(
      'unauthorized',
      `the credential plugin of kubeconfig user "${identity.user.name}" failed: ${reason}; check its exec command (or auth-provider) by running it by hand`,
      { path: '/', cause: error },
    );
  }
  return options;
}

export interface TlsTarget {
  /** The API server's URL (https). */
  server: URL;
  settings: TlsSettings;
  /** Protocols offered in ALPN, preferred first. */
  alpn: string[];
  timeoutMs: number;
  /** Aborted when the client closes: an attempt still connecting (a server that never answers) ends at once. */
  signal?: AbortSignal | undefined;
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
      target.signal?.removeEventListener('abort', abort);
      socket.destroy();
      reject(errorFromTransport(error, target.server.origin, '/'));
    };
    socket.once('error', fail);
    const abort = () => {
      clearTimeout(timer);
      socket.destroy();
      reject(new KubeError('network', `the client of ${target.server.origin} is closed`, { path: '/' }));
    };
    if (target.signal?.aborted) abort();
    target.signal?.addEventListener('abort', abort, { once: true });
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      target.signal?.removeEventListener('abort', abort);
      // HTTP/2 PINGs find a dead connection; TCP keep-alive still helps HTTP/1.1 and NAT tables.
      socket.setKeepAlive(true, 30_000);
      socket.setNoDelay(true);
      resolve(socket);
    });
  });
}
