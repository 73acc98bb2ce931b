// A second kube-apiserver for the admission webhook tests (side-apiserver.ts: the default cluster of
// `npm test` is shared, and a webhook registered for every write there would reach every test), without
// any audit configuration. Its --admission-control-config-file gives the validating webhook plugin a
// kubeconfig with the credentials the API server presents to a webhook at a given host:port (a client
// certificate and a bearer token), as a self-managed control plane would; without `credentials`, it
// presents none, as EKS, GKE and AKS do.
//
// Besides the admin it knows the token users alice (group devs), bob, carol and mallory. The
// ValidatingWebhookConfiguration is what deploy/ installs (admissionWebhookConfiguration()), pointed at a
// URL on loopback with the test's CA.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { KubeAdmin, KubeObject } from './kube-admin.ts';
import { type SideApiserver, startSideApiserver } from './side-apiserver.ts';

export { needsSharedEtcd } from './side-apiserver.ts';

export interface WebhookCredentials {
  /** host:port of the webhook's URL, as the API server matches it in the kubeconfig. */
  hostPort: string;
  clientCert: string;
  clientKey: string;
  token?: string;
}

export interface AdmissionApiserverOptions {
  credentials?: WebhookCredentials;
  /** The etcd to share; default: the test cluster's. */
  etcdEndpoint?: string;
}

export const USERS = ['alice', 'bob', 'carol', 'mallory'] as const;
export type TestUser = (typeof USERS)[number];

export interface AdmissionApiserver extends SideApiserver {
  /** Bearer tokens of the static token users. */
  tokens: Record<TestUser, string>;
}

/** The kubeconfig the webhook plugin reads: users named by the webhook's host:port. */
function webhookKubeconfig(credentials: WebhookCredentials): string {
  const b64 = (value: string) => JSON.stringify(Buffer.from(value).toString('base64'));
  return [
    'apiVersion: v1',
    'kind: Config',
    'users:',
    `- name: ${JSON.stringify(credentials.hostPort)}`,
    '  user:',
    `    client-certificate-data: ${b64(credentials.clientCert)}`,
    `    client-key-data: ${b64(credentials.clientKey)}`,
    ...(credentials.token ? [`    token: ${JSON.stringify(credentials.token)}`] : []),
    '',
  ].join('\n');
}

function admissionConfiguration(kubeconfigFile: string): string {
  return [
    'apiVersion: apiserver.config.k8s.io/v1',
    'kind: AdmissionConfiguration',
    'plugins:',
    '- name: ValidatingAdmissionWebhook',
    '  configuration:',
    '    apiVersion: apiserver.config.k8s.io/v1',
    '    kind: WebhookAdmissionConfiguration',
    `    kubeConfigFile: ${JSON.stringify(kubeconfigFile)}`,
    '',
  ].join('\n');
}

export async function startAdmissionApiserver(
  options: AdmissionApiserverOptions = {},
): Promise<AdmissionApiserver> {
  const tokens = Object.fromEntries(USERS.map((user) => [user, randomBytes(24).toString('hex')])) as Record<
    TestUser,
    string
  >;
  const started = await startSideApiserver({
    what: 'the API server with an admission webhook',
    processName: 'kube-apiserver-admission',
    tokens: USERS.map((user) => `${tokens[user]},${user},${user}-uid${user === 'alice' ? ',"devs"' : ''}`),
    ...(options.etcdEndpoint ? { etcdEndpoint: options.etcdEndpoint } : {}),
    extraArgs: async (dir) => {
      if (!options.credentials) return [];
      const kubeconfigFile = path.join(dir, 'webhook-credentials.kubeconfig');
      await writeFile(kubeconfigFile, webhookKubeconfig(options.credentials), { mode: 0o600 });
      const configFile = path.join(dir, 'admission-configuration.yaml');
      await writeFile(configFile, admissionConfiguration(kubeconfigFile));
      return [`--admission-control-config-file=${configFile}`];
    },
  });
  return { ...started, tokens };
}

const COMPONENT = fileURLToPath(
  new URL('../../deploy/components/admission/validatingwebhookconfiguration.yaml', import.meta.url),
);

/**
 * deploy/'s ValidatingWebhookConfiguration, named `name`, excluding `namespace` (kubediff's own) and
 * calling `url` with `caPem`: the same rules, exclusions, failure policy and timeout as installed.
 */
export async function admissionWebhookConfiguration(options: {
  name: string;
  url: string;
  caPem: string;
  excludedNamespace?: string;
  timeoutSeconds?: number;
}): Promise<KubeObject & { webhooks: Record<string, unknown>[] }> {
  const manifest = parse(await readFile(COMPONENT, 'utf8')) as KubeObject & {
    webhooks: Record<string, unknown>[];
  };
  return {
    ...manifest,
    metadata: { ...manifest.metadata, name: options.name },
    webhooks: manifest.webhooks.map((webhook) => ({
      ...webhook,
      clientConfig: { url: options.url, caBundle: Buffer.from(options.caPem).toString('base64') },
      ...(options.timeoutSeconds ? { timeoutSeconds: options.timeoutSeconds } : {}),
      ...(options.excludedNamespace
        ? {
            namespaceSelector: {
              matchExpressions: [
                {
                  key: 'kubernetes.io/metadata.name',
                  operator: 'NotIn',
                  values: [options.excludedNamespace],
                },
              ],
            },
          }
        : {}),
    })),
  };
}

/** Registers the webhook; the API server takes it into use a moment later (its informer). */
export async function registerWebhook(
  admin: KubeAdmin,
  configuration: KubeObject,
): Promise<() => Promise<void>> {
  const collection = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
  await admin.create(collection, configuration as unknown as Record<string, unknown>);
  return async () => {
    await admin.delete(`${collection}/${configuration.metadata.name}`, { ignoreNotFound: true });
  };
}
