// A small REST client for tests, to arrange and inspect the cluster as its admin (or as any other
// bearer token). Not product code: kubediff's own client lives in src/kube.
//
//   const admin = adminClient();                       // the test cluster's admin
//   const ns = await admin.createNamespace('informer');  // 'informer-x7k2p', unique per call
//   await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'a' }, data: { k: 'v' } });
//   await admin.patch(`/api/v1/namespaces/${ns}/configmaps/a`, { data: { k: 'w' } });
//   await admin.waitFor(async () => (await admin.tryGet(path)) === undefined, { what: 'a to be gone' });
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import type { ClusterInfo } from './cluster.ts';
import { kubeconfigYaml } from './cluster.ts';
import { testCluster } from './cluster-env.ts';

/** Any object as the API server returns it; read deeper fields with a cast. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface KubeList {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion: string; continue?: string; [key: string]: unknown };
  items: KubeObject[];
}

/** A body to send: metadata.name (or generateName) at least; the rest is free. */
export type KubeBody = Record<string, unknown>;

export type PatchType = 'merge' | 'strategic' | 'json';

/**
 * The field manager the API server records for this client's writes (it sends no User-Agent and no
 * fieldManager): what kubediff reports as the `manager` of the changes a test makes through it.
 */
export const ADMIN_FIELD_MANAGER = 'unknown';

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

/** A non-2xx answer from the API server, with its Status reason (NotFound, Forbidden, AlreadyExists, …). */
export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  readonly body: unknown;
  constructor(method: string, urlPath: string, status: number, body: unknown, text: string) {
    const statusObject = body as { reason?: unknown; message?: unknown } | undefined;
    const reason = typeof statusObject?.reason === 'string' ? statusObject.reason : undefined;
    const detail = typeof statusObject?.message === 'string' ? statusObject.message : text.slice(0, 300);
    super(`${method} ${urlPath}: ${status}${reason ? ` ${reason}` : ''}: ${detail}`);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.body = body;
  }
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Default 30 s. */
  timeoutMs?: number;
  /** Default 200 ms. */
  intervalMs?: number;
  /** What is awaited, for the timeout message ("namespace x to be deleted"). */
  what?: string;
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

export interface WatchStream {
  /** The HTTP status: 200 when the watch started (an expired resourceVersion may still come as an ERROR event). */
  status: number;
  /** The error Status when the API server refused the watch outright (status ≠ 200). */
  error?: KubeApiError;
  events: AsyncIterable<WatchEvent>;
  /** Closes the connection; the iteration ends. */
  close(): void;
}

export interface KubeconfigFileOptions {
  /** Where to write; default a new file in a temp folder that is removed when the process exits. */
  path?: string;
  /** Another token instead of the admin's (e.g. cluster.nobodyToken). */
  token?: string;
  namespace?: string;
}

/**
 * Admin access to the test cluster. One undici Agent per client (keep-alive sockets are unref'd by
 * undici, so a forgotten close() does not hold a test process open; closing is still polite).
 */
export class KubeAdmin {
  readonly cluster: ClusterInfo;
  readonly server: string;
  private readonly token: string | undefined;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;

  constructor(cluster: ClusterInfo, options: { token?: string; dispatcher?: Dispatcher } = {}) {
    this.cluster = cluster;
    this.server = cluster.server;
    this.token = options.token ?? cluster.adminToken;
    this.ownsDispatcher = !options.dispatcher;
    const useClientCert = options.token === undefined && !cluster.adminToken;
    this.dispatcher =
      options.dispatcher ??
      new Agent({
        // HTTP/1.1, as the product uses: undici 8 would negotiate HTTP/2, whose shared session a test
        // cutting connections can tear down under every request at once.
        allowH2: false,
        connect: {
          ...(cluster.caPem ? { ca: cluster.caPem } : {}),
          ...(cluster.insecureSkipTLSVerify ? { rejectUnauthorized: false } : {}),
          ...(useClientCert && cluster.adminClientCert && cluster.adminClientKey
            ? { cert: cluster.adminClientCert, key: cluster.adminClientKey }
            : {}),
        },
      });
  }

  /** The same cluster as another user, by bearer token (e.g. `admin.as(cluster.nobodyToken)`). */
  as(token: string): KubeAdmin {
    return new KubeAdmin(this.cluster, { token });
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /** Any request; resolves for every status (see `send` for one that throws on errors). */
  async request(
    method: Dispatcher.HttpMethod,
    urlPath: string,
    options: RequestOptions = {},
  ): Promise<{ status: number; body: unknown; text: string }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    const res = await request(this.url(urlPath, options.query), {
      method,
      headers,
      body: payload,
      dispatcher: this.dispatcher,
      signal: options.signal,
    });
    const text = await res.body.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, body, text };
  }

  /** A request that throws KubeApiError unless the status is 2xx. */
  async send<T = unknown>(
    method: Dispatcher.HttpMethod,
    urlPath: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const res = await this.request(method, urlPath, options);
    if (res.status < 200 || res.status >= 300)
      throw new KubeApiError(method, urlPath, res.status, res.body, res.text);
    return res.body as T;
  }

  /** POST to a collection, e.g. `/api/v1/namespaces/ns/configmaps`. */
  create(collectionPath: string, body: KubeBody): Promise<KubeObject> {
    return this.send('POST', collectionPath, { body });
  }

  /** create(), but an existing object (409 AlreadyExists) is fetched and returned instead. */
  async createOrKeep(collectionPath: string, body: KubeBody): Promise<KubeObject> {
    try {
      return await this.create(collectionPath, body);
    } catch (error) {
      const name = (body.metadata as { name?: unknown } | undefined)?.name;
      if (!(error instanceof KubeApiError) || error.status !== 409 || typeof name !== 'string') throw error;
      return this.get(`${collectionPath}/${name}`);
    }
  }

  get(objectPath: string): Promise<KubeObject> {
    return this.send('GET', objectPath);
  }

  /** get(), but undefined for 404 Not Found. */
  async tryGet(objectPath: string): Promise<KubeObject | undefined> {
    const res = await this.request('GET', objectPath);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new KubeApiError('GET', objectPath, res.status, res.body, res.text);
    return res.body as KubeObject;
  }

  /** A list, one page unless `limit`/`continue` are in the query. */
  list(collectionPath: string, query?: RequestOptions['query']): Promise<KubeList> {
    return this.send('GET', collectionPath, { query });
  }

  /** PATCH: `merge` (RFC 7386, default), `strategic` (lists merged by key) or `json` (RFC 6902, an array). */
  patch(objectPath: string, patch: unknown, type: PatchType = 'merge'): Promise<KubeObject> {
    return this.send('PATCH', objectPath, { body: patch, contentType: PATCH_CONTENT_TYPES[type] });
  }

  /** PUT the whole object (include metadata.resourceVersion for an optimistic-concurrency update). */
  update(objectPath: string, body: KubeBody): Promise<KubeObject> {
    return this.send('PUT', objectPath, { body });
  }

  /**
   * DELETE; resolves to the API server's answer (the object, or a Status). A 404 is not an error when
   * `ignoreNotFound` is set.
   */
  async delete(
    objectPath: string,
    options: { propagationPolicy?: 'Foreground' | 'Background' | 'Orphan'; ignoreNotFound?: boolean } = {},
  ): Promise<unknown> {
    const body = options.propagationPolicy
      ? { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: options.propagationPolicy }
      : undefined;
    const res = await this.request('DELETE', objectPath, { body });
    if (res.status === 404 && options.ignoreNotFound) return undefined;
    if (res.status < 200 || res.status >= 300)
      throw new KubeApiError('DELETE', objectPath, res.status, res.body, res.text);
    return res.body;
  }

  /**
   * Opens a watch (`?watch=1`) on a collection. `status` and `error` tell whether it started; `events`
   * yields the decoded events until the server ends the stream or close() is called.
   */
  async watch(collectionPath: string, query: RequestOptions['query'] = {}): Promise<WatchStream> {
    const controller = new AbortController();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const res = await request(this.url(collectionPath, { ...query, watch: 1 }), {
      method: 'GET',
      headers,
      dispatcher: this.dispatcher,
      signal: controller.signal,
    });
    const close = () => controller.abort();
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const error = new KubeApiError('WATCH', collectionPath, res.statusCode, body, text);
      return { status: res.statusCode, error, events: (async function* () {})(), close };
    }
    const stream = res.body;
    // close() destroys the stream; without a listener that error would be uncaught when nobody iterates.
    stream.on('error', () => {});
    async function* events(): AsyncGenerator<WatchEvent> {
      let buffer = '';
      try {
        for await (const chunk of stream) {
          buffer += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
          for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            if (line) yield JSON.parse(line) as WatchEvent;
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      }
    }
    return { status: 200, events: events(), close };
  }

  /** Creates a namespace with a unique name `<prefix>-<random>`; returns the name. */
  async createNamespace(prefix = 'test', labels: Record<string, string> = {}): Promise<string> {
    const name = uniqueName(prefix);
    await this.create('/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels },
    });
    return name;
  }

  /**
   * A namespace for one test, deleted when the test ends. With `settled`, also waits for its `default`
   * ServiceAccount, so that a watch started afterwards does not see it appear as a change.
   */
  async namespaceFor(
    test: { after(fn: () => Promise<void>): void },
    prefix: string,
    options: { settled?: boolean } = {},
  ): Promise<string> {
    const ns = await this.createNamespace(prefix);
    test.after(() => this.deleteNamespace(ns));
    if (options.settled) {
      await this.waitFor(() => this.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
        what: `the default ServiceAccount of ${ns}`,
      });
    }
    return ns;
  }

  /** Deletes a namespace; with `wait`, until it is gone (the controller manager empties it first). */
  async deleteNamespace(name: string, options: { wait?: boolean; timeoutMs?: number } = {}): Promise<void> {
    const objectPath = `/api/v1/namespaces/${name}`;
    await this.delete(objectPath, { ignoreNotFound: true });
    if (options.wait) {
      await this.waitFor(async () => (await this.tryGet(objectPath)) === undefined, {
        timeoutMs: options.timeoutMs ?? 60_000,
        what: `namespace ${name} to be deleted`,
      });
    }
  }

  /**
   * Creates a CustomResourceDefinition `<plural>.<group>` with one served version (default v1) whose
   * schema keeps unknown fields, and waits until it is Established (its API can be used).
   */
  async createCRD(
    group: string,
    kind: string,
    plural: string,
    options: {
      namespaced?: boolean;
      version?: string;
      shortNames?: string[];
      timeoutMs?: number;
      /** The version's openAPIV3Schema; by default any object (x-kubernetes-preserve-unknown-fields). */
      schema?: KubeBody;
    } = {},
  ): Promise<KubeObject> {
    const name = `${plural}.${group}`;
    const version = options.version ?? 'v1';
    await this.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name },
      spec: {
        group,
        scope: options.namespaced === false ? 'Cluster' : 'Namespaced',
        names: {
          kind,
          plural,
          singular: kind.toLowerCase(),
          listKind: `${kind}List`,
          ...(options.shortNames ? { shortNames: options.shortNames } : {}),
        },
        versions: [
          {
            name: version,
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: options.schema ?? {
                type: 'object',
                'x-kubernetes-preserve-unknown-fields': true,
              },
            },
          },
        ],
      },
    });
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
    let crd: KubeObject | undefined;
    await this.waitFor(
      async () => {
        crd = await this.get(crdPath);
        const conditions = (crd.status as { conditions?: { type: string; status: string }[] } | undefined)
          ?.conditions;
        return conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
      },
      { timeoutMs: options.timeoutMs ?? 30_000, what: `CRD ${name} to be Established` },
    );
    return crd as KubeObject;
  }

  /** Deletes a CRD (and so all its objects); with `wait`, until it is gone. */
  async deleteCRD(name: string, options: { wait?: boolean; timeoutMs?: number } = {}): Promise<void> {
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
    await this.delete(crdPath, { ignoreNotFound: true });
    if (options.wait) {
      await this.waitFor(async () => (await this.tryGet(crdPath)) === undefined, {
        timeoutMs: options.timeoutMs ?? 60_000,
        what: `CRD ${name} to be deleted`,
      });
    }
  }

  /** Polls `check` until it returns a truthy value (which is returned). */
  waitFor<T>(check: () => Promise<T> | T, options: WaitOptions = {}): Promise<NonNullable<T>> {
    return waitFor(check, options);
  }

  /**
   * Writes a kubeconfig for this cluster at another address (a fault-injecting proxy in front of the
   * API server, say): same CA and credentials, so TLS still verifies as long as the proxy listens on
   * 127.0.0.1. `server` defaults to the real API server. Returns the file's path.
   */
  async writeKubeconfig(server: string = this.server, options: KubeconfigFileOptions = {}): Promise<string> {
    return writeKubeconfigFile(this.cluster, server, { token: this.token, ...options });
  }

  private url(urlPath: string, query: RequestOptions['query'] = {}): string {
    const url = new URL(urlPath, this.server.endsWith('/') ? this.server : `${this.server}/`);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }
}

/** The test cluster's admin (from KUBEDIFF_TEST_CLUSTER). */
export function adminClient(): KubeAdmin {
  return new KubeAdmin(testCluster());
}

/** The test cluster's `nobody` user, who has no rights; undefined when the cluster offers none. */
export function nobodyClient(): KubeAdmin | undefined {
  const cluster = testCluster();
  return cluster.nobodyToken ? new KubeAdmin(cluster, { token: cluster.nobodyToken }) : undefined;
}

/** See KubeAdmin.writeKubeconfig. */
export async function writeKubeconfigFile(
  cluster: ClusterInfo,
  server: string = cluster.server,
  options: KubeconfigFileOptions = {},
): Promise<string> {
  const token = options.token ?? cluster.adminToken;
  const file = options.path ?? path.join(await scratchDir(), `kubeconfig-${uniqueName('k')}`);
  const useClientCert = !token && cluster.adminClientCert && cluster.adminClientKey;
  await writeFile(
    file,
    kubeconfigYaml({
      server,
      caPem: cluster.caPem,
      insecureSkipTLSVerify: cluster.insecureSkipTLSVerify,
      token,
      clientCert: useClientCert ? cluster.adminClientCert : undefined,
      clientKey: useClientCert ? cluster.adminClientKey : undefined,
      namespace: options.namespace,
    }),
    { mode: 0o600 },
  );
  return file;
}

let scratch: Promise<string> | undefined;

/** A temp folder for this test process's files, removed when the process exits. */
function scratchDir(): Promise<string> {
  scratch ??= mkdtemp(path.join(tmpdir(), 'kubediff-test-files-')).then((dir) => {
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  });
  return scratch;
}

/**
 * Until the wall clock is past the second of `time` (an API server timestamp; now without one), at most
 * 1 s: managedFields and timestamps tell the second only, so a write after this is told apart from one
 * before it.
 */
export async function nextSecond(time: string | undefined): Promise<void> {
  const end = (time ? Date.parse(time) : Date.now()) + 1000;
  while (Date.now() < end) await new Promise((resolve) => setTimeout(resolve, end - Date.now()));
}

/** Polls `check` until it returns a truthy value; throws a clear error after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  options: WaitOptions = {},
): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const started = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() - started >= timeoutMs) {
      const last = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'a condition'}${last}`);
    }
    await sleep(options.intervalMs ?? 200);
  }
}

/** `<prefix>-<5 random lowercase letters/digits>`, a valid DNS label when prefix is one. */
export function uniqueName(prefix: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const suffix = [...randomBytes(5)].map((byte) => alphabet[byte % alphabet.length]).join('');
  return `${prefix}-${suffix}`;
}
