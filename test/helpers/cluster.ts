// A real Kubernetes control plane for the tests: etcd, kube-apiserver and
// kube-controller-manager, started on free 127.0.0.1 ports in a fresh temp
// folder, the way controller-runtime's envtest does it (and honouring its
// environment variables), plus the controller manager so that namespace
// deletion and garbage collection really happen.
//
// The cluster is described by a plain, JSON-serialisable ClusterInfo: the test
// runner (scripts/run-tests.ts) starts one cluster per run and hands its
// description to the test processes (see cluster-env.ts).

import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { makeTestPki } from './pki.ts';
import {
  freePorts,
  lastLines,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  startFailure,
  terminate,
  waitUntil,
} from './processes.ts';

export const repoRoot = path.resolve(import.meta.dirname, '../..');
/** Where `npm run cluster:build` puts the binaries and `npm run cluster:up` its state. */
export const clusterCacheDir = path.join(repoRoot, '.cache', 'cluster');
export const defaultBinDir = path.join(clusterCacheDir, 'bin');

/** Everything a test needs to reach the cluster; JSON-serialisable. */
export interface ClusterInfo {
  /** true when USE_EXISTING_CLUSTER=true: nothing was started, nothing will be stopped. */
  external: boolean;
  /** https://127.0.0.1:<port> */
  server: string;
  /** An admin kubeconfig (for our own cluster: written into the cluster's temp folder). */
  kubeconfigPath: string;
  /** PEM of the CA that signed the API server's serving certificate. */
  caPem?: string;
  /** The same CA as a file (our own cluster only). */
  caFile?: string;
  /** Skip TLS verification (only ever set from an existing cluster's kubeconfig). */
  insecureSkipTLSVerify?: boolean;
  /** Bearer token of a user in group system:masters. */
  adminToken?: string;
  /**
   * Client certificate and key (PEM) of a user in group system:masters: for an existing cluster whose
   * kubeconfig uses them, and for our own (its API server trusts a client CA made at start).
   */
  adminClientCert?: string;
  adminClientKey?: string;
  /** Bearer token of user `nobody`, who has no RBAC rights at all (403 on everything but discovery). */
  nobodyToken?: string;
  /** http://127.0.0.1:<port> of etcd (our own cluster only); used by compactEtcd(). */
  etcdEndpoint?: string;
  /** The API server's --etcd-compaction-interval (our own cluster only). */
  compactionInterval?: string;
  /** The cluster's temp folder (etcd data, certificates, logs). */
  dir?: string;
  /** Log file of each process, by name. */
  logs?: Record<string, string>;
  /** Process id of each process (each is the leader of its own process group). */
  pids?: Record<string, number>;
  /** The binary each process runs, by process name. */
  binaries?: Record<string, string>;
}

export interface RunningCluster extends ClusterInfo {
  /** Stops every process (SIGTERM, then SIGKILL) and removes the temp folder. Idempotent. */
  stop(): Promise<void>;
}

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
}

export interface ResolvedBinary {
  path: string;
  /** Which setting chose it: an environment variable, or 'build' for .cache/cluster/bin. */
  source: string;
}

export interface StartClusterOptions {
  /** Binaries to run; default: resolveBinaries() (envtest variables, then .cache/cluster/bin). */
  binaries?: Partial<ControlPlaneBinaries>;
  /**
   * The API server's --etcd-compaction-interval, a Go duration. Default: $KUBEDIFF_TEST_COMPACTION_INTERVAL,
   * else 10s. Short, so that resourceVersions expire (410 Gone) within a test's lifetime.
   */
  compactionInterval?: string;
  /** Controllers for kube-controller-manager; default: DEFAULT_CONTROLLERS. */
  controllers?: string[];
  /** Extra flags for kube-apiserver (appended, so they win). */
  apiserverArgs?: string[];
  /** Extra flags for kube-controller-manager (appended, so they win). */
  controllerManagerArgs?: string[];
  /** How long to wait for the whole control plane; default 180 s (a 2-core CI machine is slow). */
  startTimeoutMs?: number;
  /**
   * Let the processes outlive this Node process (npm run cluster:up). Default false: they are
   * killed when this process exits, even if stop() was never called.
   */
  persistent?: boolean;
  /** Parent of the cluster's temp folder; default os.tmpdir(). */
  tmpRoot?: string;
  /** Connect to $KUBECONFIG instead of starting anything; default: $USE_EXISTING_CLUSTER === 'true'. */
  useExistingCluster?: boolean;
  /** Progress messages (one line each); default: silent. */
  log?: (message: string) => void;
}

/**
 * The controllers the tests rely on: namespace deletion, garbage collection (ownerReferences), and the
 * ServiceAccount controllers, so that namespaces look like a real cluster's (a `default` ServiceAccount).
 */
export const DEFAULT_CONTROLLERS = [
  'namespace-controller',
  'garbage-collector-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
];

/**
 * The workload controllers, for tests where rollouts happen for real (stories: a Deployment's
 * ReplicaSets and pods, a CronJob's Jobs and pods). Not in the default cluster, whose tests count on
 * a Deployment or a Job creating nothing; a test that needs them starts a control plane of its own
 * with `startCluster({ controllers: [...DEFAULT_CONTROLLERS, ...WORKLOAD_CONTROLLERS] })`.
 */
export const WORKLOAD_CONTROLLERS = [
  'deployment-controller',
  'replicaset-controller',
  'job-controller',
  'cronjob-controller',
];

const DEFAULT_COMPACTION_INTERVAL = '10s';
const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/16';
const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const CLUSTER_NAME = 'kubediff-test';

const BINARY_SETTINGS: Record<keyof ControlPlaneBinaries, { file: string; env: string }> = {
  etcd: { file: 'etcd', env: 'TEST_ASSET_ETCD' },
  kubeApiserver: { file: 'kube-apiserver', env: 'TEST_ASSET_KUBE_APISERVER' },
  kubeControllerManager: { file: 'kube-controller-manager', env: 'TEST_ASSET_KUBE_CONTROLLER_MANAGER' },
  kubectl: { file: 'kubectl', env: 'TEST_ASSET_KUBECTL' },
};

/**
 * Which binary to run for each component, following envtest: TEST_ASSET_<NAME> names a file,
 * KUBEBUILDER_ASSETS a folder; anything not found there comes from .cache/cluster/bin (source 'build').
 */
export function resolveBinaries(
  env: NodeJS.ProcessEnv = process.env,
): Record<keyof ControlPlaneBinaries, ResolvedBinary> {
  const resolve = (key: keyof ControlPlaneBinaries): ResolvedBinary => {
    const { file, env: variable } = BINARY_SETTINGS[key];
    const explicit = env[variable];
    if (explicit) return { path: path.resolve(explicit), source: variable };
    const assets = env.KUBEBUILDER_ASSETS;
    if (assets && existsSync(path.join(assets, file))) {
      return { path: path.resolve(assets, file), source: 'KUBEBUILDER_ASSETS' };
    }
    return { path: path.join(defaultBinDir, file), source: 'build' };
  };
  return {
    etcd: resolve('etcd'),
    kubeApiserver: resolve('kubeApiserver'),
    kubeControllerManager: resolve('kubeControllerManager'),
    kubectl: resolve('kubectl'),
  };
}

export function useExistingCluster(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.USE_EXISTING_CLUSTER === 'true';
}

/** Starts a control plane (or, with USE_EXISTING_CLUSTER=true, connects to $KUBECONFIG's cluster). */
export async function startCluster(options: StartClusterOptions = {}): Promise<RunningCluster> {
  if (options.useExistingCluster ?? useExistingCluster()) return connectExistingCluster(options);
  // A port taken by another process shows as "address already in use" in a log.
  return retryOnPortInUse('cluster', () => startOwnCluster(options), options.log);
}

// ---------------------------------------------------------------------------------------------------
// Our own control plane

async function startOwnCluster(options: StartClusterOptions): Promise<RunningCluster> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const timeoutMs = options.startTimeoutMs ?? 180_000;
  const deadline = Date.now() + timeoutMs;
  const binaries = pickBinaries(options.binaries);
  const compactionInterval =
    options.compactionInterval ??
    process.env.KUBEDIFF_TEST_COMPACTION_INTERVAL ??
    DEFAULT_COMPACTION_INTERVAL;

  const tmpRoot = options.tmpRoot ?? tmpdir();
  await mkdir(tmpRoot, { recursive: true });
  const dir = await mkdtemp(path.join(tmpRoot, 'kubediff-cluster-'));
  const processes: ManagedProcess[] = [];
  const agent = new Agent({ connect: { rejectUnauthorized: false } });
  let closeTls: (() => Promise<void>) | undefined;

  const stopProcesses = async () => {
    // The controller manager and the API server first (they talk to etcd), then etcd.
    const [etcd, ...rest] = processes;
    await Promise.all(rest.map((p) => terminate(p)));
    if (etcd) await terminate(etcd);
  };

  try {
    const [etcdClientPort, etcdPeerPort, apiserverPort, controllerManagerPort] = await freePorts(4);
    const etcdEndpoint = `http://127.0.0.1:${etcdClientPort}`;
    const server = `https://127.0.0.1:${apiserverPort}`;

    const { adminToken, nobodyToken, tokenFile, saPrivateKeyFile, saPublicKeyFile } =
      await writeCredentials(dir);

    const launch = (name: string, binary: string, args: string[]) => {
      const p = launchProcess({ name, binary, args, dir, persistent: options.persistent ?? false });
      processes.push(p);
      return p;
    };

    // etcd, its data in the temp folder. fsync is pointless for a throw-away test store and slow.
    log(`cluster: starting etcd on ${etcdEndpoint}`);
    launch('etcd', binaries.etcd, [
      '--name=kubediff-test',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdEndpoint}`,
      `--advertise-client-urls=${etcdEndpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=kubediff-test=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    // While etcd starts: a client CA for the API server (--client-ca-file) and an admin's client
    // certificate signed by it (O is the group), for the tests of client-certificate authentication.
    const clientPki = makeTestPki({ clientSubject: { cn: 'kubediff-cert-admin', o: 'system:masters' } });
    const clientCaFile = path.join(dir, 'client-ca.crt');
    await writeFile(clientCaFile, clientPki.caPem);
    await waitUntil(
      'etcd to report healthy',
      async () => {
        const res = await request(`${etcdEndpoint}/health`, { dispatcher: agent });
        const body = await res.body.text();
        return res.statusCode === 200 && body.includes('"true"') ? true : `${res.statusCode} ${body.trim()}`;
      },
      { deadline, processes },
    );

    // kube-apiserver (the flags are explained at apiserverArgs), with a short compaction interval and
    // podtemplates without watch cache, for real 410 Gone.
    const certDir = path.join(dir, 'apiserver-certs');
    log(`cluster: starting kube-apiserver on ${server}`);
    launch(
      'kube-apiserver',
      binaries.kubeApiserver,
      apiserverArgs({
        etcdEndpoint,
        port: apiserverPort as number,
        certDir,
        tokenFile,
        saPublicKeyFile,
        saPrivateKeyFile,
        extra: [
          `--client-ca-file=${clientCaFile}`,
          `--etcd-compaction-interval=${compactionInterval}`,
          '--watch-cache-sizes=podtemplates#0',
          ...(options.apiserverArgs ?? []),
        ],
      }),
    );
    const ready = await waitForApiserver({
      certDir,
      dir,
      server,
      adminToken,
      deadline,
      processes,
    });
    const { caPem, caFile, adminGet } = ready;
    closeTls = ready.close;

    const kubeconfigPath = path.join(dir, 'kubeconfig');
    await writeFile(kubeconfigPath, kubeconfigYaml({ server, caPem, token: adminToken, nobodyToken }), {
      mode: 0o600,
    });

    // kube-controller-manager, as the admin (by token); no leader election (there is only one). It
    // need not look up the API server's client CA: nothing asks it to authenticate a client.
    log('cluster: starting kube-controller-manager');
    launch('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--authentication-skip-lookup=true',
      '--leader-elect=false',
      `--controllers=${(options.controllers ?? DEFAULT_CONTROLLERS).join(',')}`,
      `--service-account-private-key-file=${saPrivateKeyFile}`,
      `--root-ca-file=${caFile}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${controllerManagerPort}`,
      `--cert-dir=${path.join(dir, 'controller-manager-certs')}`,
      '--profiling=false',
      ...(options.controllerManagerArgs ?? []),
    ]);
    // The serviceaccount controller creates `default` in every namespace once its informers have
    // synced: proof that the controller manager is connected and working.
    await waitUntil(
      'kube-controller-manager to create the default ServiceAccount',
      async () => {
        const res = await adminGet('/api/v1/namespaces/default/serviceaccounts/default');
        return res.status === 200 || `${res.status}`;
      },
      { deadline, processes },
    );

    const pids: Record<string, number> = {};
    const logs: Record<string, string> = {};
    const binaryPaths: Record<string, string> = {};
    for (const p of processes) {
      pids[p.name] = p.pid;
      logs[p.name] = p.logFile;
      binaryPaths[p.name] = p.binary;
    }
    log(
      `cluster: ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${server} (folder ${dir})`,
    );

    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        await stopProcesses();
        await Promise.all([agent.close(), closeTls?.()]);
        await rm(dir, { recursive: true, force: true });
      })();
      return stopping;
    };
    return {
      external: false,
      server,
      kubeconfigPath,
      caPem,
      caFile,
      adminToken,
      adminClientCert: clientPki.clientCert,
      adminClientKey: clientPki.clientKey,
      nobodyToken,
      etcdEndpoint,
      compactionInterval,
      dir,
      logs,
      pids,
      binaries: binaryPaths,
      stop,
    };
  } catch (error) {
    throw await startFailure('the test cluster', error, processes, async () => {
      await stopProcesses();
      await Promise.all([agent.close(), closeTls?.()]);
      await rm(dir, { recursive: true, force: true });
    });
  }
}

function pickBinaries(given: Partial<ControlPlaneBinaries> = {}): ControlPlaneBinaries {
  const resolved = resolveBinaries();
  const binaries: ControlPlaneBinaries = {
    etcd: given.etcd ?? resolved.etcd.path,
    kubeApiserver: given.kubeApiserver ?? resolved.kubeApiserver.path,
    kubeControllerManager: given.kubeControllerManager ?? resolved.kubeControllerManager.path,
    kubectl: given.kubectl ?? resolved.kubectl.path,
  };
  for (const key of ['etcd', 'kubeApiserver', 'kubeControllerManager'] as const) {
    try {
      accessSync(binaries[key], constants.X_OK);
    } catch {
      const { source } = resolved[key];
      const hint =
        given[key] || source !== 'build'
          ? `check ${given[key] ? 'the path' : source}`
          : 'run `npm run cluster:build`';
      throw new Error(
        `cannot start the test cluster: ${binaries[key]} is missing or not executable; ${hint}.`,
      );
    }
  }
  return binaries;
}

// ---------------------------------------------------------------------------------------------------
// etcd

/**
 * Compacts etcd right now, through its HTTP/JSON gateway, and returns the compacted revision R. Every
 * resourceVersion the cluster handed out before the call then expires: a watch (or an exact list) from
 * one, on a resource without watch cache (podtemplates), gets 410 Gone. A watch from R (or newer) works.
 *
 * How: a write to a marker key outside the API server's /registry prefix moves etcd's revision past
 * every resourceVersion handed out so far, then etcd compacts at that write's revision R (physically,
 * i.e. it waits until done). Compacting at the latest revision L itself would be subtly wrong: a watch
 * from L-1 would start at L, which is still allowed, but L's event would lack its previous value and
 * the API server would answer with a 500 InternalError instead of 410. (Strictly, a watch from R-1
 * still works too: it starts at R, the marker, which no watch sees. R-1 is an object's resourceVersion
 * only if that object was written last before the call; other writers such as lease renewals and the
 * API server's own compactor make that a race, so a test should resume from R, not from an object's
 * resourceVersion, when it needs a watch that survives.)
 *
 * Only for a cluster we started (an existing cluster's etcd is out of reach): see needsEtcd().
 */
export async function compactEtcd(cluster: Pick<ClusterInfo, 'etcdEndpoint'>): Promise<number> {
  const endpoint = cluster.etcdEndpoint;
  if (!endpoint) {
    throw new Error(
      'compactEtcd: this cluster has no etcd endpoint (USE_EXISTING_CLUSTER=true?); skip the test.',
    );
  }
  const post = async (route: string, body: unknown) => {
    const res = await request(`${endpoint}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: parseJson(text), text };
  };
  const marker = await post('/v3/kv/put', {
    key: Buffer.from('/kubediff-test/compaction-marker').toString('base64'),
    value: Buffer.from(new Date().toISOString()).toString('base64'),
  });
  const revision = Number(readPath(marker.json, ['header', 'revision']));
  if (marker.status !== 200 || !Number.isSafeInteger(revision) || revision <= 0) {
    throw new Error(
      `compactEtcd: etcd ${endpoint} /v3/kv/put answered ${marker.status} ${marker.text.trim()}`,
    );
  }
  // int64 fields are strings in etcd's JSON.
  const compaction = await post('/v3/kv/compaction', { revision: String(revision), physical: true });
  // Compacting a revision that is already compacted (the API server's own compactor got there
  // first) is just as good.
  if (compaction.status !== 200 && !compaction.text.includes('required revision has been compacted')) {
    throw new Error(
      `compactEtcd: etcd ${endpoint} /v3/kv/compaction answered ${compaction.status} ${compaction.text.trim()}`,
    );
  }
  return revision;
}

// ---------------------------------------------------------------------------------------------------
// An existing cluster (USE_EXISTING_CLUSTER=true)

async function connectExistingCluster(options: StartClusterOptions): Promise<RunningCluster> {
  const log = options.log ?? (() => {});
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kubeconfigPath = (process.env.KUBECONFIG ?? '').split(path.delimiter).find(Boolean);
  const kubeConfig = new KubeConfig();
  if (kubeconfigPath) {
    kubeConfig.loadFromDefault();
  } else {
    const home = path.join(homedir(), '.kube', 'config');
    if (!existsSync(home)) {
      throw new Error(
        'USE_EXISTING_CLUSTER=true needs a kubeconfig: set KUBECONFIG (or create ~/.kube/config).',
      );
    }
    kubeConfig.loadFromFile(home);
  }
  const current = kubeConfig.getCurrentCluster();
  if (!current) throw new Error('USE_EXISTING_CLUSTER=true: the kubeconfig has no current cluster.');
  // Ask client-node for the TLS material and the Authorization header (runs exec plugins once).
  const tls: {
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
    rejectUnauthorized?: boolean;
    headers?: unknown;
  } = {};
  await kubeConfig.applyToHTTPSOptions(tls);
  const headers = (tls.headers ?? {}) as Record<string, unknown>;
  const authorization = typeof headers.Authorization === 'string' ? headers.Authorization : undefined;
  const info: ClusterInfo = {
    external: true,
    server: current.server.replace(/\/+$/, ''),
    kubeconfigPath: kubeconfigPath ? path.resolve(kubeconfigPath) : path.join(homedir(), '.kube', 'config'),
  };
  const pem = (value: unknown) => (value === undefined || value === null ? undefined : String(value));
  const caPem = pem(tls.ca);
  if (caPem) info.caPem = caPem;
  if (tls.rejectUnauthorized === false) info.insecureSkipTLSVerify = true;
  if (authorization?.startsWith('Bearer ')) info.adminToken = authorization.slice('Bearer '.length);
  const cert = pem(tls.cert);
  const key = pem(tls.key);
  if (cert && key) {
    info.adminClientCert = cert;
    info.adminClientKey = key;
  }
  // A user without rights: a ServiceAccount with no bindings, token from the TokenRequest API.
  try {
    info.nobodyToken = await serviceAccountToken(info);
  } catch (error) {
    log(
      `cluster: no token for a user without rights (${error instanceof Error ? error.message : error}); tests needing one skip`,
    );
  }
  log(`cluster: using the existing cluster at ${info.server} (USE_EXISTING_CLUSTER=true)`);
  return { ...info, stop: async () => {} };
}

async function serviceAccountToken(info: ClusterInfo): Promise<string> {
  const { KubeAdmin } = await import('./kube-admin.ts');
  const admin = new KubeAdmin(info);
  try {
    const base = '/api/v1/namespaces/default/serviceaccounts';
    await admin.createOrKeep(base, { metadata: { name: 'kubediff-test-nobody' } });
    const review = await admin.create(`${base}/kubediff-test-nobody/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 24 * 3600 },
    });
    const token = readPath(review, ['status', 'token']);
    if (typeof token !== 'string') throw new Error('TokenRequest returned no token');
    return token;
  } finally {
    await admin.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Parts shared with other API servers the tests start (test/helpers/audited-apiserver.ts)

export interface ApiserverCredentials {
  /** A user in system:masters. */
  adminToken: string;
  /** A user without rights. */
  nobodyToken: string;
  /** The --token-auth-file; more users may be appended to it before the API server starts. */
  tokenFile: string;
  saPrivateKeyFile: string;
  saPublicKeyFile: string;
}

/**
 * Credentials in `dir`. Tokens are static (--token-auth-file): an admin in system:masters, and `nobody`,
 * who belongs to no group but system:authenticated and so may do discovery and nothing else.
 * ServiceAccount tokens: the API server signs and verifies them, the controller manager signs legacy
 * token Secrets. Any RSA key will do.
 */
export async function writeCredentials(
  dir: string,
  extraUsers: string[] = [],
): Promise<ApiserverCredentials> {
  const adminToken = randomBytes(24).toString('hex');
  const nobodyToken = randomBytes(24).toString('hex');
  const tokenFile = path.join(dir, 'tokens.csv');
  await writeFile(
    tokenFile,
    [
      `${adminToken},admin,admin-uid,"system:masters"`,
      `${nobodyToken},nobody,nobody-uid`,
      ...extraUsers,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const serviceAccountKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saPrivateKeyFile = path.join(dir, 'sa.key');
  const saPublicKeyFile = path.join(dir, 'sa.pub');
  await writeFile(saPrivateKeyFile, serviceAccountKey.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  await writeFile(saPublicKeyFile, serviceAccountKey.publicKey.export({ type: 'spki', format: 'pem' }));
  return { adminToken, nobodyToken, tokenFile, saPrivateKeyFile, saPublicKeyFile };
}

/**
 * The kube-apiserver flags of a test API server. Notes on the less obvious ones:
 * - --cert-dir without --tls-cert-file: the API server makes a self-signed CA and a serving
 *   certificate for 127.0.0.1 (the --bind-address) and writes both to apiserver.crt; the CA
 *   goes into the kubeconfig.
 * - --disable-admission-plugins=ServiceAccount: pods can be created in a namespace at once,
 *   without waiting for its `default` ServiceAccount.
 * - --etcd-compaction-interval (in `extra` of the default cluster): the API server compacts etcd this
 *   often, so an old resourceVersion expires quickly, like on a busy production cluster.
 * - --watch-cache-sizes=podtemplates#0 (idem): podtemplates get no watch cache, so their lists and
 *   watches are served straight from etcd. A watch from a resourceVersion older than etcd's
 *   compacted revision then fails with a REAL 410 Gone ("too old resource version") coming from
 *   etcd itself, as soon as that revision is compacted (compactEtcd() forces it); with a watch
 *   cache, the cache's own event window decides instead, independent of compaction.
 */
export function apiserverArgs(options: {
  etcdEndpoint: string;
  port: number;
  certDir: string;
  tokenFile: string;
  saPublicKeyFile: string;
  saPrivateKeyFile: string;
  /** Appended, so they win. */
  extra?: string[];
}): string[] {
  return [
    `--etcd-servers=${options.etcdEndpoint}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${options.port}`,
    `--cert-dir=${options.certDir}`,
    '--authorization-mode=RBAC',
    `--token-auth-file=${options.tokenFile}`,
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${options.saPublicKeyFile}`,
    `--service-account-signing-key-file=${options.saPrivateKeyFile}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    '--disable-admission-plugins=ServiceAccount',
    // The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints reject (loopback).
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    '--profiling=false',
    ...(options.extra ?? []),
  ];
}

/**
 * Waits until an API server started with apiserverArgs() serves: its self-signed CA (written to
 * `<dir>/ca.crt`), /readyz (etcd, the RBAC bootstrap roles and bindings, the system namespaces) and the
 * `default` namespace a client falls back to.
 */
export async function waitForApiserver(options: {
  certDir: string;
  dir: string;
  server: string;
  adminToken: string;
  deadline: number;
  processes: ManagedProcess[];
}): Promise<{
  caPem: string;
  caFile: string;
  adminGet: (urlPath: string) => Promise<{ status: number; body: string }>;
  close: () => Promise<void>;
}> {
  const { deadline, processes } = options;
  const servingCertFile = path.join(options.certDir, 'apiserver.crt');
  await waitUntil(
    'kube-apiserver to write its self-signed certificate',
    async () => existsSync(servingCertFile) || 'no apiserver.crt yet',
    { deadline, processes, intervalMs: 100 },
  );
  const caPem = await readServingCA(servingCertFile);
  const caFile = path.join(options.dir, 'ca.crt');
  await writeFile(caFile, caPem);
  const tlsAgent = new Agent({ connect: { ca: caPem } });
  const adminGet = async (urlPath: string) => {
    const res = await request(`${options.server}${urlPath}`, {
      dispatcher: tlsAgent,
      headers: { authorization: `Bearer ${options.adminToken}` },
    });
    return { status: res.statusCode, body: await res.body.text() };
  };
  try {
    await waitUntil(
      'kube-apiserver /readyz',
      async () => {
        const res = await adminGet('/readyz');
        return res.status === 200 || `${res.status} ${lastLines(res.body, 3)}`;
      },
      { deadline, processes },
    );
    await waitUntil(
      'the default namespace',
      async () => {
        const res = await adminGet('/api/v1/namespaces/default');
        return res.status === 200 || `${res.status}`;
      },
      { deadline, processes },
    );
  } catch (error) {
    await tlsAgent.close();
    throw error;
  }
  return { caPem, caFile, adminGet, close: () => tlsAgent.close() };
}

// ---------------------------------------------------------------------------------------------------
// Small parts

async function readServingCA(certFile: string): Promise<string> {
  // The file may be caught half-written; wait until it holds a CA.
  for (let attempt = 0; attempt < 50; attempt++) {
    const text = await readFile(certFile, 'utf8');
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    for (const block of blocks) {
      try {
        if (new X509Certificate(block).ca) return `${block}\n`;
      } catch {
        // Incomplete block: read again.
      }
    }
    await sleep(100);
  }
  throw new Error(`${certFile} holds no CA certificate`);
}

export function kubeconfigYaml(options: {
  server: string;
  caPem?: string | undefined;
  insecureSkipTLSVerify?: boolean | undefined;
  token?: string | undefined;
  clientCert?: string | undefined;
  clientKey?: string | undefined;
  nobodyToken?: string | undefined;
  namespace?: string | undefined;
}): string {
  // JSON strings are valid YAML double-quoted scalars.
  const q = (value: string) => JSON.stringify(value);
  const b64 = (value: string) => q(Buffer.from(value).toString('base64'));
  const user = (name: string, token?: string, cert?: string, key?: string) => {
    const lines = [`- name: ${q(name)}`, '  user:'];
    if (token) lines.push(`    token: ${q(token)}`);
    if (cert && key)
      lines.push(`    client-certificate-data: ${b64(cert)}`, `    client-key-data: ${b64(key)}`);
    if (lines.length === 2) lines[1] = '  user: {}';
    return lines;
  };
  const context = (name: string, userName: string) => [
    `- name: ${q(name)}`,
    '  context:',
    `    cluster: ${q(CLUSTER_NAME)}`,
    `    user: ${q(userName)}`,
    ...(options.namespace ? [`    namespace: ${q(options.namespace)}`] : []),
  ];
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${q(CLUSTER_NAME)}`,
    '  cluster:',
    `    server: ${q(options.server)}`,
    ...(options.caPem ? [`    certificate-authority-data: ${b64(options.caPem)}`] : []),
    ...(options.insecureSkipTLSVerify ? ['    insecure-skip-tls-verify: true'] : []),
    'users:',
    ...user('admin', options.token, options.clientCert, options.clientKey),
    ...(options.nobodyToken ? user('nobody', options.nobodyToken) : []),
    'contexts:',
    ...context(CLUSTER_NAME, 'admin'),
    ...(options.nobodyToken ? context(`${CLUSTER_NAME}-nobody`, 'nobody') : []),
    `current-context: ${q(CLUSTER_NAME)}`,
    '',
  ].join('\n');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function readPath(value: unknown, keys: string[]): unknown {
  let current = value;
  for (const key of keys) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
