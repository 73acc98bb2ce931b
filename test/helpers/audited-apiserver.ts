// A second kube-apiserver for the audit tests, started on demand by the test file that needs it (the
// default cluster of `npm test` is shared and has no audit webhook): on the shared etcd under an etcd
// prefix of its own (so its objects are apart from the default cluster's), with --audit-policy-file and
// --audit-webhook-config-file pointing at an address the test chose (kubediff's --audit-listen, or a
// fault proxy in front of it), authenticating with a client certificate and a bearer token.
//
// It has no controller manager: ServiceAccount tokens come from the TokenRequest API, which the API
// server serves itself. Besides the admin, it knows a token user `alice` (group `devs`).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  apiserverArgs,
  type ClusterInfo,
  kubeconfigYaml,
  resolveBinaries,
  waitForApiserver,
  writeCredentials,
} from './cluster.ts';
import { testCluster } from './cluster-env.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  startFailure,
  terminate,
} from './processes.ts';

export interface AuditWebhookTarget {
  /** https://127.0.0.1:<port>/<path> */
  url: string;
  /** The CA of the receiver's serving certificate. */
  caPem: string;
  /** What the API server authenticates with. */
  clientCert: string;
  clientKey: string;
  token?: string;
}

export interface AuditedApiserverOptions {
  webhook: AuditWebhookTarget;
  /** Resources (plural, core or any group) audited at level Metadata, i.e. without response objects. */
  metadataOnly?: string[];
  /** batch (default, as most clusters run it) or blocking. */
  mode?: 'batch' | 'blocking';
  /** --audit-webhook-batch-max-wait; default 50ms. */
  batchMaxWait?: string;
  /** The etcd to share; default: the test cluster's. */
  etcdEndpoint?: string;
  /** kube-apiserver; default: resolveBinaries(). */
  binary?: string;
}

export interface AuditedApiserver extends ClusterInfo {
  /** Bearer token of `alice`, a static token user in group `devs`. */
  aliceToken: string;
  stop(): Promise<void>;
}

/**
 * Why the audit tests cannot run here (no etcd to share: USE_EXISTING_CLUSTER=true), or undefined.
 * Use as `describe('…', { skip: needsSharedEtcd() }, …)`.
 */
export function needsSharedEtcd(): string | undefined {
  return testCluster().etcdEndpoint
    ? undefined
    : 'needs the test cluster’s etcd to start an audited API server';
}

/** The audit policy docs/audit.md recommends: writes with their response, nothing for reads. */
export function auditPolicyYaml(metadataOnly: readonly string[] = []): string {
  return [
    'apiVersion: audit.k8s.io/v1',
    'kind: Policy',
    'omitStages: [RequestReceived]',
    'rules:',
    '- level: None',
    '  verbs: [get, list, watch]',
    ...(metadataOnly.length > 0
      ? [
          '- level: Metadata',
          '  verbs: [create, update, patch, delete, deletecollection]',
          '  resources:',
          `  - group: ""`,
          `    resources: [${metadataOnly.map((name) => JSON.stringify(name)).join(', ')}]`,
        ]
      : []),
    '- level: RequestResponse',
    '  verbs: [create, update, patch, delete, deletecollection]',
    '- level: None',
    '',
  ].join('\n');
}

/** The --audit-webhook-config-file: a kubeconfig whose cluster is the receiver. */
function webhookKubeconfig(target: AuditWebhookTarget): string {
  const b64 = (value: string) => JSON.stringify(Buffer.from(value).toString('base64'));
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kubediff',
    '  cluster:',
    `    server: ${JSON.stringify(target.url)}`,
    `    certificate-authority-data: ${b64(target.caPem)}`,
    'users:',
    '- name: kube-apiserver',
    '  user:',
    `    client-certificate-data: ${b64(target.clientCert)}`,
    `    client-key-data: ${b64(target.clientKey)}`,
    ...(target.token ? [`    token: ${JSON.stringify(target.token)}`] : []),
    'contexts:',
    '- name: default',
    '  context: {cluster: kubediff, user: kube-apiserver}',
    'current-context: default',
    '',
  ].join('\n');
}

export function startAuditedApiserver(options: AuditedApiserverOptions): Promise<AuditedApiserver> {
  return retryOnPortInUse('the audited API server', () => startOnce(options), undefined);
}

async function startOnce(options: AuditedApiserverOptions): Promise<AuditedApiserver> {
  const etcdEndpoint = options.etcdEndpoint ?? testCluster().etcdEndpoint;
  if (!etcdEndpoint) throw new Error(needsSharedEtcd());
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-audited-'));
  const processes: ManagedProcess[] = [];
  const deadline = Date.now() + 180_000;
  const aliceToken = randomBytes(24).toString('hex');
  try {
    const credentials = await writeCredentials(dir, [`${aliceToken},alice,alice-uid,"devs"`]);
    const [port] = (await freePorts(1)) as [number];
    const server = `https://127.0.0.1:${port}`;
    const policyFile = path.join(dir, 'audit-policy.yaml');
    await writeFile(policyFile, auditPolicyYaml(options.metadataOnly));
    const webhookFile = path.join(dir, 'audit-webhook.kubeconfig');
    await writeFile(webhookFile, webhookKubeconfig(options.webhook), { mode: 0o600 });
    const certDir = path.join(dir, 'apiserver-certs');
    processes.push(
      launchProcess({
        name: 'kube-apiserver-audited',
        binary: options.binary ?? resolveBinaries().kubeApiserver.path,
        dir,
        args: apiserverArgs({
          etcdEndpoint,
          port,
          certDir,
          ...credentials,
          extra: [
            `--etcd-prefix=/kubediff-audited-${randomBytes(4).toString('hex')}`,
            `--audit-policy-file=${policyFile}`,
            `--audit-webhook-config-file=${webhookFile}`,
            `--audit-webhook-mode=${options.mode ?? 'batch'}`,
            // Send at once and retry soon: a test waits for what it checks, but not for seconds.
            `--audit-webhook-batch-max-wait=${options.batchMaxWait ?? '50ms'}`,
            '--audit-webhook-batch-throttle-enable=false',
            '--audit-webhook-initial-backoff=200ms',
          ],
        }),
      }),
    );
    const ready = await waitForApiserver({
      certDir,
      dir,
      server,
      adminToken: credentials.adminToken,
      deadline,
      processes,
    });
    await ready.close();
    const kubeconfigPath = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfigPath,
      kubeconfigYaml({ server, caPem: ready.caPem, token: credentials.adminToken }),
      { mode: 0o600 },
    );
    let stopping: Promise<void> | undefined;
    return {
      external: false,
      server,
      kubeconfigPath,
      caPem: ready.caPem,
      caFile: ready.caFile,
      adminToken: credentials.adminToken,
      nobodyToken: credentials.nobodyToken,
      aliceToken,
      dir,
      stop: () => {
        stopping ??= (async () => {
          await Promise.all(processes.map((p) => terminate(p)));
          await rm(dir, { recursive: true, force: true });
        })();
        return stopping;
      },
    };
  } catch (error) {
    throw await startFailure('the audited API server', error, processes, async () => {
      await Promise.all(processes.map((p) => terminate(p)));
      await rm(dir, { recursive: true, force: true });
    });
  }
}
