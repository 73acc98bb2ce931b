// Realistic objects for the benchmark workloads: what a production namespace holds (labels and
// annotations of the usual tools, several containers with env, ports, probes and mounts), so that
// the API server adds managedFields, defaults and statuses as it does in a real cluster.
import type { KubeAdmin } from '../../test/helpers/kube-admin.ts';

export const CR_GROUP = 'bench.kubediff.io';
export const CR_PLURAL = 'widgets';
const CR_KIND = 'Widget';

function labels(app: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': app,
    'app.kubernetes.io/instance': `${app}-prod`,
    'app.kubernetes.io/part-of': 'shop',
    'app.kubernetes.io/managed-by': 'Helm',
    'helm.sh/chart': `${app}-1.4.2`,
  };
}

function container(name: string, image: string, index: number): Record<string, unknown> {
  return {
    name,
    image,
    imagePullPolicy: 'IfNotPresent',
    args: ['--port=8080', '--log-level=info', `--shard=${index}`],
    ports: [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ],
    env: [
      { name: 'LOG_FORMAT', value: 'json' },
      { name: 'REGION', value: 'eu-west-1' },
      { name: 'DB_HOST', value: 'postgres.shop.svc.cluster.local' },
      { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'FEATURE_FLAGS', value: 'checkout-v2,search-v3,cart-cache' },
    ],
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
    readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 5 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 10 },
    volumeMounts: [
      { name: 'config', mountPath: '/etc/app' },
      { name: 'tmp', mountPath: '/tmp' },
    ],
    securityContext: { runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
  };
}

export function deployment(name: string, replicas: number, version: string): Record<string, unknown> {
  const appLabels = labels(name);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      labels: appLabels,
      annotations: { 'meta.helm.sh/release-name': `${name}-prod`, 'meta.helm.sh/release-namespace': 'shop' },
    },
    spec: {
      replicas,
      selector: { matchLabels: { 'app.kubernetes.io/name': name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } },
      template: {
        metadata: { labels: appLabels, annotations: { 'prometheus.io/scrape': 'true' } },
        spec: {
          serviceAccountName: 'default',
          containers: [
            container('app', `registry.example.com/shop/${name}:${version}`, 0),
            container('proxy', 'registry.example.com/envoy:1.31.2', 1),
          ],
          volumes: [
            { name: 'config', configMap: { name: `${name}-config` } },
            { name: 'tmp', emptyDir: {} },
          ],
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }],
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: 'kubernetes.io/hostname',
                    labelSelector: { matchLabels: { 'app.kubernetes.io/name': name } },
                  },
                },
              ],
            },
          },
        },
      },
    },
  };
}

/** A ConfigMap of `keys` entries, one of them a config file of about `fileBytes`. */
export function configMap(name: string, keys: number, fileBytes: number, seed = 0): Record<string, unknown> {
  const data: Record<string, string> = {};
  for (let index = 0; index < keys; index++) data[`setting_${index}`] = `value-${seed}-${index}`;
  data['app.yaml'] = configFile(fileBytes, seed);
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, labels: labels(name.replace(/-\d+$/, '')) },
    data,
  };
}

function configFile(bytes: number, seed: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let index = 0; size < bytes; index++) {
    const line = `section${index % 7}.option${index}: "${(seed * 31 + index).toString(36)}-enabled"`;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

/** A large custom resource: `items` named entries (a realistic ~100 KB object at 400). */
export function widget(name: string, items: number, round = 0): Record<string, unknown> {
  const entries = [];
  for (let index = 0; index < items; index++) {
    entries.push({
      name: `route-${index}`,
      match: {
        pathPrefix: `/api/v${index % 3}/resource-${index}`,
        headers: { 'x-tenant': `t${index % 17}` },
      },
      backend: {
        service: `svc-${index % 23}`,
        port: 8080 + (index % 4),
        weight: index === 0 ? 100 - round : 100,
      },
      timeouts: { connect: '2s', request: `${15 + (index % 5)}s` },
      retries: { attempts: 3, on: ['5xx', 'reset', 'connect-failure'] },
    });
  }
  return {
    apiVersion: `${CR_GROUP}/v1`,
    kind: CR_KIND,
    metadata: { name, labels: labels('gateway') },
    spec: { revision: round, routes: entries },
  };
}

/** The Widget CRD, with a status subresource as real operators' CRDs have; waits until Established. */
export async function ensureWidgetCRD(admin: KubeAdmin): Promise<void> {
  const name = `${CR_PLURAL}.${CR_GROUP}`;
  await admin.createOrKeep('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: CR_GROUP,
      scope: 'Namespaced',
      names: { kind: CR_KIND, plural: CR_PLURAL, singular: 'widget', listKind: `${CR_KIND}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  await admin.waitFor(
    async () => {
      const crd = await admin.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      const conditions = (crd.status as { conditions?: { type: string; status: string }[] } | undefined)
        ?.conditions;
      return conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    },
    { what: `CRD ${name} to be Established` },
  );
  // Discovery (and so kubediff) serves the new type a moment after Established.
  await admin.waitFor(async () => (await admin.request('GET', `/apis/${CR_GROUP}/v1`)).status === 200, {
    what: `${CR_GROUP}/v1 to be served`,
  });
}

/** Runs `task` for every item with at most `limit` at once. */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
