// A second kube-apiserver for the audit tests (side-apiserver.ts: the default cluster of `npm test` is
// shared and has no audit webhook), with --audit-policy-file and
// --audit-webhook-config-file pointing at an address the test chose (kubediff's --audit-listen, or a
// fault proxy in front of it), authenticating with a client certificate and a bearer token.
//
// It has no controller manager: ServiceAccount tokens come from the TokenRequest API, which the API
// server serves itself. Besides the admin, it knows a token user `alice` (group `devs`).
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type SideApiserver, startSideApiserver } from './side-apiserver.ts';

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

export interface AuditedApiserver extends SideApiserver {
  /** Bearer token of `alice`, a static token user in group `devs`. */
  aliceToken: string;
}

export { needsSharedEtcd } from './side-apiserver.ts';

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

export async function startAuditedApiserver(options: AuditedApiserverOptions): Promise<AuditedApiserver> {
  const aliceToken = randomBytes(24).toString('hex');
  const started = await startSideApiserver({
    what: 'the audited API server',
    processName: 'kube-apiserver-audited',
    tokens: [`${aliceToken},alice,alice-uid,"devs"`],
    ...(options.etcdEndpoint ? { etcdEndpoint: options.etcdEndpoint } : {}),
    ...(options.binary ? { binary: options.binary } : {}),
    extraArgs: async (dir) => {
      const policyFile = path.join(dir, 'audit-policy.yaml');
      await writeFile(policyFile, auditPolicyYaml(options.metadataOnly));
      const webhookFile = path.join(dir, 'audit-webhook.kubeconfig');
      await writeFile(webhookFile, webhookKubeconfig(options.webhook), { mode: 0o600 });
      return [
        `--audit-policy-file=${policyFile}`,
        `--audit-webhook-config-file=${webhookFile}`,
        `--audit-webhook-mode=${options.mode ?? 'batch'}`,
        // Send at once and retry soon: a test waits for what it checks, but not for seconds.
        `--audit-webhook-batch-max-wait=${options.batchMaxWait ?? '50ms'}`,
        '--audit-webhook-batch-throttle-enable=false',
        '--audit-webhook-initial-backoff=200ms',
      ];
    },
  });
  return { ...started, aliceToken };
}
