// Finds the cluster and credentials the way kubectl does: --kubeconfig, then $KUBECONFIG (a list of
// files, merged: the first file to name a cluster, user or context wins, and the first current-context
// set wins), then ~/.kube/config, then the in-cluster ServiceAccount. This module is the one reader of
// kubeconfig files: it resolves the context in use into its cluster and user, with file paths made
// absolute. Credentials are applied by credentials.ts: tokens, token files, client certificates and
// basic auth directly; exec plugins and auth providers by @kubernetes/client-node, loaded only for a
// user that has one (it costs about 85 MiB and half a second to import), from the document built here.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { LineCounter, parse, YAMLParseError } from 'yaml';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import { urlStart } from '../util/url.ts';

export interface KubeconfigOptions {
  /** --kubeconfig */
  kubeconfig?: string | undefined;
  /** --context */
  context?: string | undefined;
}

/** A kubeconfig entry (cluster, user, context) as written: kubectl's field names. */
type Entry = Record<string, unknown>;

export interface KubeconfigCluster {
  name: string;
  server: string;
  /** PEM of the CA bundle (certificate-authority-data), or the file holding it (certificate-authority). */
  caData?: string | undefined;
  caFile?: string | undefined;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string | undefined;
}

export interface KubeconfigUser {
  name: string;
  token?: string | undefined;
  /** Read again whenever the file changes (a rotated ServiceAccount token). */
  tokenFile?: string | undefined;
  certData?: string | undefined;
  certFile?: string | undefined;
  keyData?: string | undefined;
  keyFile?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  /** `as`: the user to impersonate. */
  impersonate?: string | undefined;
  /** An exec credential plugin or an auth provider: @kubernetes/client-node applies it. */
  plugin: boolean;
}

/**
 * The resolved kubeconfig, one document in kubeconfig's own form (the merged files, paths absolute,
 * the context in use current), for @kubernetes/client-node when the user has a plugin.
 */
export interface KubeconfigDocument {
  clusters: { name: string; cluster: Entry }[];
  users: { name: string; user: Entry }[];
  contexts: { name: string; context: Entry }[];
  'current-context': string;
}

export interface ClusterIdentity {
  /** The context in use ('in-cluster' when running in a pod). */
  contextName: string;
  /** The cluster's name in the kubeconfig, the default for --cluster-name. */
  clusterName: string;
  server: string;
  cluster: KubeconfigCluster;
  user: KubeconfigUser;
  document: KubeconfigDocument;
}

/** Where a kubelet mounts a pod's ServiceAccount token, CA certificate and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export function loadKubeconfig(options: KubeconfigOptions): ClusterIdentity {
  const source = describeSource(options);
  const document = readDocument(options, source);

  if (options.context) {
    if (!document.contexts.some((context) => context.name === options.context)) {
      const known = document.contexts.map((context) => context.name);
      throw new UsageError(
        `context "${options.context}" is not in kubeconfig ${source}; known contexts: ${known.join(', ') || 'none'}.`,
      );
    }
    document['current-context'] = options.context;
  }

  if (document.contexts.length === 0) {
    throw new UsageError(
      `kubeconfig ${source} defines no contexts, so it is not a usable kubeconfig; fix the file or pass another with --kubeconfig.`,
    );
  }
  const contextName = document['current-context'];
  const context = document.contexts.find((entry) => entry.name === contextName);
  if (!contextName || !context) {
    throw new UsageError(
      `kubeconfig ${source} has no current context; pass --context <name> or run \`kubectl config use-context <name>\`.`,
    );
  }
  const clusterEntry = document.clusters.find((entry) => entry.name === context.context.cluster);
  const server = text(clusterEntry?.cluster.server);
  if (!clusterEntry || !server) {
    throw new UsageError(
      `context "${contextName}" in kubeconfig ${source} names no cluster with a server address; fix the kubeconfig.`,
    );
  }
  const serverUrl = serverAddress(server);
  if (serverUrl === undefined) {
    // Only what comes before the first '/': a server address may carry credentials in its path or query.
    throw new UsageError(
      `the server of cluster "${clusterEntry.name}" in kubeconfig ${source} is not an https:// or http:// address (it starts "${urlStart(server)}"); fix the kubeconfig.`,
    );
  }
  const userName = text(context.context.user) ?? '';
  const userEntry = document.users.find((entry) => entry.name === userName)?.user ?? {};
  return {
    contextName,
    clusterName: clusterEntry.name,
    server: serverUrl,
    cluster: clusterOf(clusterEntry.name, serverUrl, clusterEntry.cluster),
    user: userOf(userName, userEntry),
    document,
  };
}

/** Every context of the kubeconfig, in the file's order (--all-contexts). */
export function kubeconfigContexts(options: Pick<KubeconfigOptions, 'kubeconfig'>): string[] {
  return readDocument(options, describeSource(options)).contexts.map((context) => context.name);
}

/**
 * The clusters a command works on: one identity per context named (or per context of the kubeconfig
 * with `allContexts`), the current context when none is named.
 */
export function loadContexts(options: {
  kubeconfig?: string | undefined;
  contexts: readonly string[];
  allContexts: boolean;
}): ClusterIdentity[] {
  const names = options.allContexts ? kubeconfigContexts(options) : options.contexts;
  if (names.length === 0) return [loadKubeconfig({ kubeconfig: options.kubeconfig })];
  return names.map((context) => loadKubeconfig({ kubeconfig: options.kubeconfig, context }));
}

function readDocument(options: KubeconfigOptions, source: string): KubeconfigDocument {
  try {
    if (options.kubeconfig) {
      if (!existsSync(options.kubeconfig)) {
        throw new UsageError(
          `kubeconfig file ${options.kubeconfig} does not exist; check the --kubeconfig path.`,
        );
      }
      return merged([options.kubeconfig]);
    }
    const listed = (process.env.KUBECONFIG ?? '').split(path.delimiter).filter(Boolean);
    if (listed.length > 0) return merged(listed);
    const home = path.join(homedir(), '.kube', 'config');
    if (existsSync(home)) return merged([home]);
    if (process.env.KUBERNETES_SERVICE_HOST && existsSync(`${SERVICE_ACCOUNT_DIR}/token`)) {
      return inClusterDocument();
    }
  } catch (error) {
    if (error instanceof KubediffError) throw error;
    throw new UsageError(
      `cannot read kubeconfig ${source}: ${reasonOf(error)}; fix the file or pass another with --kubeconfig.`,
      { cause: error },
    );
  }
  throw new UsageError(
    'no kubeconfig found: ~/.kube/config does not exist and $KUBECONFIG is not set; pass --kubeconfig <file> or run inside a pod with a ServiceAccount.',
  );
}

/** kubectl's merge of several files: the first to define a name, and the first current-context, win. */
function merged(files: string[]): KubeconfigDocument {
  const document: KubeconfigDocument = { clusters: [], users: [], contexts: [], 'current-context': '' };
  for (const file of files) {
    // $KUBECONFIG may name files that do not exist (yet): kubectl skips them.
    if (files.length > 1 && !existsSync(file)) continue;
    const one = readFile(file);
    const add = <T extends { name: string }>(into: T[], entries: T[]) => {
      for (const entry of entries) if (!into.some((known) => known.name === entry.name)) into.push(entry);
    };
    add(document.clusters, one.clusters);
    add(document.users, one.users);
    add(document.contexts, one.contexts);
    if (!document['current-context']) document['current-context'] = one['current-context'];
  }
  return document;
}

function readFile(file: string): KubeconfigDocument {
  const lineCounter = new LineCounter();
  let raw: unknown;
  try {
    // logLevel 'error': the parser's warnings would reach stderr as process warnings, beside the one sentence.
    raw = parse(readFileSync(file, 'utf8'), { lineCounter, prettyErrors: false, logLevel: 'error' });
  } catch (error) {
    if (error instanceof YAMLParseError) {
      const { line, col } = lineCounter.linePos(error.pos[0]);
      // The parser's own message, never the offending text (it may be a credential).
      throw new Error(`${error.message.replace(/\.$/, '')} at line ${line}, column ${col}`, { cause: error });
    }
    throw error;
  }
  const root = isEntry(raw) ? raw : {};
  const folder = path.dirname(path.resolve(file));
  const absolute = (entry: Entry, keys: string[]): Entry => {
    const copy = { ...entry };
    for (const key of keys) {
      const value = text(copy[key]);
      if (value) copy[key] = path.resolve(folder, value);
    }
    return copy;
  };
  return {
    clusters: named(root.clusters, 'clusters', 'cluster').map(({ name, entry }) => ({
      name,
      cluster: absolute(entry, ['certificate-authority']),
    })),
    users: named(root.users, 'users', 'user').map(({ name, entry }) => ({
      name,
      user: absolute(entry, ['client-certificate', 'client-key', 'tokenFile', 'token-file']),
    })),
    contexts: named(root.contexts, 'contexts', 'context').map(({ name, entry }) => ({
      name,
      context: entry,
    })),
    'current-context': text(root['current-context']) ?? '',
  };
}

/** The entries of a list (clusters, users, contexts), each with its name; an entry without one is an error. */
function named(list: unknown, what: string, field: string): { name: string; entry: Entry }[] {
  if (!Array.isArray(list)) return [];
  return list.map((item: unknown, index) => {
    const name = isEntry(item) ? text(item.name) : undefined;
    if (!isEntry(item) || !name) throw new Error(`${what}[${index}].name is missing`);
    const entry = item[field];
    return { name, entry: isEntry(entry) ? entry : {} };
  });
}

/** What client-go builds in a pod: the API server from the environment, the ServiceAccount's files. */
function inClusterDocument(): KubeconfigDocument {
  const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  const dir = SERVICE_ACCOUNT_DIR;
  return {
    clusters: [
      {
        name: 'in-cluster',
        cluster: {
          server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
          'certificate-authority': `${dir}/ca.crt`,
        },
      },
    ],
    users: [{ name: 'in-cluster', user: { tokenFile: `${dir}/token` } }],
    contexts: [{ name: 'in-cluster', context: { cluster: 'in-cluster', user: 'in-cluster' } }],
    'current-context': 'in-cluster',
  };
}

/**
 * The API server's address, as client-go reads it: `host:port` without a scheme is https://; anything that
 * is not then an http(s) URL is undefined. Without a trailing slash.
 */
function serverAddress(server: string): string | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `https://${server}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '') return undefined;
  return withScheme.replace(/\/+$/, '');
}

function clusterOf(name: string, server: string, entry: Entry): KubeconfigCluster {
  const caData = text(entry['certificate-authority-data']);
  return {
    name,
    server,
    caData: caData ? Buffer.from(caData, 'base64').toString('utf8') : undefined,
    caFile: text(entry['certificate-authority']),
    insecureSkipTlsVerify: entry['insecure-skip-tls-verify'] === true,
    tlsServerName: text(entry['tls-server-name']),
  };
}

function userOf(name: string, entry: Entry): KubeconfigUser {
  const decoded = (key: string) => {
    const value = text(entry[key]);
    return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
  };
  return {
    name,
    token: text(entry.token),
    // kubectl's key is tokenFile; client-node read token-file, which older kubediff kubeconfigs may use.
    tokenFile: text(entry.tokenFile) ?? text(entry['token-file']),
    certData: decoded('client-certificate-data'),
    certFile: text(entry['client-certificate']),
    keyData: decoded('client-key-data'),
    keyFile: text(entry['client-key']),
    username: text(entry.username),
    password: text(entry.password),
    impersonate: text(entry.as),
    plugin: isEntry(entry.exec) || isEntry(entry['auth-provider']),
  };
}

function isEntry(value: unknown): value is Entry {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function describeSource(options: KubeconfigOptions): string {
  if (options.kubeconfig) return options.kubeconfig;
  if (process.env.KUBECONFIG) return `from $KUBECONFIG (${process.env.KUBECONFIG})`;
  return path.join(homedir(), '.kube', 'config');
}

function reasonOf(error: unknown): string {
  return errorMessage(error).replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
