// deploy/ on the test cluster: the manifests rendered into a unique namespace (an overlay that adds a
// name suffix, so that cluster-scoped objects do not collide with other tests), kubectl to apply them,
// and a pod's view of a ServiceAccount (token file, CA file, namespace file, KUBERNETES_SERVICE_*).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClusterInfo } from './cluster.ts';
import { resolveBinaries } from './cluster.ts';
import type { KubeAdmin, KubeObject } from './kube-admin.ts';

const DEPLOY_DIR = fileURLToPath(new URL('../../deploy/', import.meta.url));
/** The Helm chart, and helm built from its Go module (test/helm). */
export const HELM_CHART = fileURLToPath(new URL('../../deploy/helm/kubediff', import.meta.url));
const HELM =
  process.env.KUBEDIFF_TEST_HELM ?? fileURLToPath(new URL('../../.cache/helm/bin/helm', import.meta.url));

/**
 * The Kubernetes version of the test control plane (test/cluster/go.mod), which `helm template` is told as
 * Argo CD tells it its cluster's (`--kube-version`): the chart declares a kubeVersion, and helm checks it
 * against v1.20 when told nothing.
 */
export const KUBE_VERSION = /^\s*k8s\.io\/kubernetes (v\S+)$/m.exec(
  readFileSync(fileURLToPath(new URL('../cluster/go.mod', import.meta.url)), 'utf8'),
)?.[1] as string;

/**
 * helm, which `npm test` builds before the tests that need it (scripts/helm-build.ts); `helm template` with
 * the test cluster's version unless the arguments give one.
 */
export function helm(args: string[]): Promise<CommandResult> {
  if (!existsSync(HELM))
    throw new Error(`helm is not built at ${HELM}: npm test builds it (or npm run helm:build)`);
  const template = args[0] === 'template' && !args.includes('--kube-version');
  return runCommand(HELM, template ? [...args, '--kube-version', KUBE_VERSION] : args);
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function kubectl(args: string[], options: { input?: string } = {}): Promise<CommandResult> {
  const file = resolveBinaries().kubectl.path;
  if (!existsSync(file))
    throw new Error(`kubectl is not built at ${file}: npm test builds it (or npm run cluster:build)`);
  return runCommand(file, args, options);
}

/** Runs `file` with `args`, `input` on its stdin, and collects its output. */
export function runCommand(
  file: string,
  args: string[],
  options: { input?: string } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

export interface Overlay {
  dir: string;
  namespace: string;
  /** Appended to every name (ServiceAccount `kubediff<suffix>`, ClusterRole `kubediff-read-all<suffix>`…). */
  suffix: string;
  remove(): Promise<void>;
}

/** What an overlay adds to deploy/: components of deploy/components, JSON patches. */
export interface OverlayOptions {
  /** Names of deploy/components/* (e.g. `no-secrets`), in this order. */
  components?: readonly string[];
  /** JSON 6902 patches of the objects named (before the suffix), as a user's overlay would add them. */
  patches?: readonly { kind: string; name: string; operations: readonly Record<string, unknown>[] }[];
  /**
   * The AdmissionSources the admission component needs (deploy/components/admission/kustomization.yaml):
   * where the control plane calls the webhook from, as NetworkPolicy peers.
   */
  admissionFrom?: readonly Record<string, unknown>[];
  /** Folders of deploy/components/* the overlay lists as transformers (e.g. `admission-cert-manager/names`). */
  transformers?: readonly string[];
}

/** The file an overlay writes for `admissionFrom`: read by kustomize, never applied. */
const ADMISSION_SOURCES_FILE = 'admission-from.yaml';

/** A kustomize overlay of deploy/ into `namespace`, every name suffixed with `suffix`. */
export async function deployOverlay(
  namespace: string,
  suffix: string,
  options: OverlayOptions = {},
): Promise<Overlay> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-overlay-'));
  const base = path.relative(dir, DEPLOY_DIR);
  // JSON is YAML: kustomize reads it as it is.
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace,
    nameSuffix: suffix,
    resources: [base, ...(options.admissionFrom ? [ADMISSION_SOURCES_FILE] : [])],
    ...(options.components?.length
      ? { components: options.components.map((component) => path.join(base, 'components', component)) }
      : {}),
    ...(options.transformers?.length
      ? { transformers: options.transformers.map((folder) => path.join(base, 'components', folder)) }
      : {}),
    ...(options.patches?.length
      ? {
          patches: options.patches.map(({ kind, name, operations }) => ({
            target: { kind, name },
            patch: JSON.stringify(operations),
          })),
        }
      : {}),
  };
  await writeFile(path.join(dir, 'kustomization.yaml'), `${JSON.stringify(kustomization, null, 2)}\n`);
  if (options.admissionFrom) {
    const sources = {
      apiVersion: 'kubediff.io/v1',
      kind: 'AdmissionSources',
      metadata: {
        name: 'kubediff-admission-from',
        annotations: { 'config.kubernetes.io/local-config': 'true' },
      },
      from: options.admissionFrom,
    };
    await writeFile(path.join(dir, ADMISSION_SOURCES_FILE), `${JSON.stringify(sources, null, 2)}\n`);
  }
  return { dir, namespace, suffix, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** The overlay as the API server would store it (`kubectl apply --dry-run=server -o json`). */
export async function serverDryRun(kubeconfig: string, overlay: Overlay): Promise<KubeObject[]> {
  const result = await kubectl([
    '--kubeconfig',
    kubeconfig,
    'apply',
    '--dry-run=server',
    '-o',
    'json',
    '-k',
    overlay.dir,
  ]);
  if (result.code !== 0) throw new Error(`kubectl apply --dry-run=server failed: ${result.stderr}`);
  const parsed = JSON.parse(result.stdout) as { kind: string; items?: KubeObject[] } & KubeObject;
  return parsed.kind === 'List' ? (parsed.items ?? []) : [parsed];
}

/**
 * `helm template <release> <chart> --namespace <namespace> ...args`, as the API server would store it
 * (`kubectl apply --dry-run=server -o json`): the rendered objects, or a single one.
 */
export async function helmDryRun(
  kubeconfig: string,
  release: string,
  namespace: string,
  args: readonly string[] = [],
): Promise<KubeObject[]> {
  const rendered = await helm(['template', release, HELM_CHART, '--namespace', namespace, ...args]);
  if (rendered.code !== 0) throw new Error(`helm template failed: ${rendered.stderr}`);
  const dryRun = await kubectl(
    ['--kubeconfig', kubeconfig, 'apply', '--dry-run=server', '-n', namespace, '-o', 'json', '-f', '-'],
    { input: rendered.stdout },
  );
  if (dryRun.code !== 0) throw new Error(`kubectl apply --dry-run=server failed: ${dryRun.stderr}`);
  const parsed = JSON.parse(dryRun.stdout) as { kind: string; items?: KubeObject[] } & KubeObject;
  return parsed.kind === 'List' ? (parsed.items ?? []) : [parsed];
}

/** Creates (for real) the objects of these kinds from a dry run's output; returns them. */
export async function applyObjects(kubeconfig: string, objects: KubeObject[]): Promise<void> {
  const cleaned = objects.map((object) => {
    const { uid, resourceVersion, creationTimestamp, managedFields, generation, ...metadata } =
      object.metadata as Record<string, unknown>;
    void uid;
    void resourceVersion;
    void creationTimestamp;
    void managedFields;
    void generation;
    const { status, ...rest } = object as Record<string, unknown>;
    void status;
    return { ...rest, metadata };
  });
  const result = await kubectl(['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cleaned }),
  });
  if (result.code !== 0) throw new Error(`kubectl apply failed: ${result.stderr}`);
}

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

/** The ServiceAccount and RBAC objects among `objects`. */
export function rbacObjects<T extends KubeObject>(objects: readonly T[]): T[] {
  return objects.filter((object) => RBAC_KINDS.has(object.kind ?? ''));
}

/** The API paths of the ClusterRoles and ClusterRoleBindings among `objects`, to delete afterwards. */
export function clusterScopedPaths(objects: readonly KubeObject[]): string[] {
  const paths: string[] = [];
  for (const object of objects) {
    if (object.kind === 'ClusterRole')
      paths.push(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${object.metadata.name}`);
    if (object.kind === 'ClusterRoleBinding')
      paths.push(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${object.metadata.name}`);
  }
  return paths;
}

/** A token for a ServiceAccount (TokenRequest API), optionally bound to an object so that deleting it revokes the token. */
export async function mintToken(
  admin: KubeAdmin,
  namespace: string,
  serviceAccount: string,
  options: { seconds?: number; boundSecret?: { name: string; uid: string } } = {},
): Promise<string> {
  const review = (await admin.create(
    `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: options.seconds ?? 3600,
        ...(options.boundSecret
          ? { boundObjectRef: { apiVersion: 'v1', kind: 'Secret', ...options.boundSecret } }
          : {}),
      },
    },
  )) as unknown as { status: { token: string } };
  return review.status.token;
}

export interface PodFiles {
  /** Stands in for `/` (KUBEDIFF_IN_CLUSTER_ROOT). */
  root: string;
  tokenFile: string;
  /** The environment of a process in a pod: no kubeconfig, only KUBERNETES_SERVICE_HOST/PORT. */
  env: Record<string, string | undefined>;
  writeToken(token: string): Promise<void>;
  remove(): Promise<void>;
}

/** The files a kubelet mounts for a ServiceAccount, in a temp folder, and the environment of a pod. */
export async function podFiles(cluster: ClusterInfo, namespace: string, token: string): Promise<PodFiles> {
  const root = await mkdtemp(path.join(tmpdir(), 'kubediff-pod-'));
  const dir = path.join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
  await mkdir(dir, { recursive: true });
  const tokenFile = path.join(dir, 'token');
  // The kubelet swaps the token atomically (a symlink flip); a rename is the same for a reader.
  const writeToken = async (value: string) => {
    const next = `${tokenFile}.next`;
    await writeFile(next, value);
    const { rename } = await import('node:fs/promises');
    await rename(next, tokenFile);
  };
  await writeToken(token);
  if (!cluster.caPem) throw new Error('the test cluster has no CA certificate to mount');
  await writeFile(path.join(dir, 'ca.crt'), cluster.caPem);
  await writeFile(path.join(dir, 'namespace'), namespace);
  const url = new URL(cluster.server);
  const home = path.join(root, 'home');
  await mkdir(home);
  return {
    root,
    tokenFile,
    env: {
      KUBEDIFF_IN_CLUSTER_ROOT: root,
      KUBERNETES_SERVICE_HOST: url.hostname,
      KUBERNETES_SERVICE_PORT: url.port || '443',
      KUBECONFIG: undefined,
      HOME: home,
    },
    writeToken,
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

/** A Kubernetes quantity in bytes: `64Mi`, `1Gi`, `500M`, `1024`. */
export function quantityBytes(quantity: string): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!match) throw new Error(`not a quantity: ${quantity}`);
  const units: Record<string, number> = {
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Number(match[1]) * (match[2] ? (units[match[2]] ?? Number.NaN) : 1);
}

/** One question for the authorizer: may this identity do `verb` on this resource (and subresource)? */
export interface AccessQuestion {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** `get pods/log in shop`, for messages. */
export function describeAccess(question: AccessQuestion): string {
  const what = `${question.resource}${question.subresource ? `/${question.subresource}` : ''}${question.group ? `.${question.group}` : ''}`;
  return `${question.verb} ${what}${question.name ? ` named ${question.name}` : ''}${question.namespace ? ` in ${question.namespace}` : ' (cluster-wide)'}`;
}

/** The API server's answer for the client's own identity (a SelfSubjectAccessReview, as `kubectl auth can-i`). */
export async function canI(client: KubeAdmin, question: AccessQuestion): Promise<boolean> {
  const review = (await client.create('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: question },
  })) as unknown as { status: { allowed?: boolean } };
  return review.status.allowed === true;
}

/** Answers many questions, a few at a time. */
export async function canIAll(client: KubeAdmin, questions: readonly AccessQuestion[]): Promise<boolean[]> {
  const answers: boolean[] = new Array(questions.length);
  let next = 0;
  const worker = async () => {
    while (next < questions.length) {
      const index = next++;
      answers[index] = await canI(client, questions[index] as AccessQuestion);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return answers;
}

/** A resource type or subresource the API server serves, as discovery lists it. */
export interface ServedResource {
  group: string;
  resource: string;
  subresource?: string;
  namespaced: boolean;
  verbs: string[];
}

/**
 * Everything the API server serves now, subresources included (the preferred version of each group;
 * RBAC does not look at versions). A group whose discovery fails (an aggregated API with no backend)
 * is left out.
 */
export async function servedResources(admin: KubeAdmin): Promise<ServedResource[]> {
  interface ResourceList {
    resources: { name: string; namespaced: boolean; verbs: string[] }[];
  }
  const groups = (
    await admin.send<{
      groups: { name: string; preferredVersion: { groupVersion: string } }[];
    }>('GET', '/apis')
  ).groups;
  const lists = await Promise.all([
    admin.send<ResourceList>('GET', '/api/v1').then((list) => ({ group: '', list })),
    ...groups.map((group) =>
      admin
        .send<ResourceList>('GET', `/apis/${group.preferredVersion.groupVersion}`)
        .then((list) => ({ group: group.name, list }))
        .catch(() => undefined),
    ),
  ]);
  const served: ServedResource[] = [];
  for (const entry of lists) {
    if (!entry) continue;
    for (const item of entry.list.resources) {
      const [resource = '', subresource] = item.name.split('/');
      served.push({
        group: entry.group,
        resource,
        ...(subresource ? { subresource } : {}),
        namespaced: item.namespaced,
        verbs: item.verbs,
      });
    }
  }
  return served;
}

/**
 * The rendered Deployment's arguments as the kubelet passes them to kubediff: each `$(NAME)` replaced by the
 * value of the container's environment variable NAME (kustomize's overlays name objects to kubediff through
 * variables, which a namePrefix/nameSuffix renames); a variable without a value (a fieldRef) stays as written.
 */
export function expandedArgs(objects: readonly KubeObject[]): string[] {
  const deployment = objects.find((object) => object.kind === 'Deployment') as
    | (KubeObject & {
        spec: {
          template: { spec: { containers: { args?: string[]; env?: { name: string; value?: string }[] }[] } };
        };
      })
    | undefined;
  const container = deployment?.spec.template.spec.containers[0];
  if (!container) throw new Error('no Deployment among the rendered objects');
  const values = new Map(
    (container.env ?? []).flatMap((entry) =>
      entry.value === undefined ? [] : [[entry.name, entry.value] as const],
    ),
  );
  return (container.args ?? []).map((arg) =>
    arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (written, name: string) => values.get(name) ?? written),
  );
}

/**
 * The rendered Deployment's command line, for running kubediff "in" `pod`: its config file (from the
 * rendered ConfigMap) written where the pod's root stands in for `/`, and --listen on a port the
 * system chooses.
 */
export async function podCommand(objects: readonly KubeObject[], pod: PodFiles): Promise<string[]> {
  const deployment = objects.find((object) => object.kind === 'Deployment') as
    | (KubeObject & { spec: { template: { spec: { containers: { args: string[] }[] } } } })
    | undefined;
  const configMap = objects.find((object) => object.kind === 'ConfigMap') as
    | (KubeObject & { data: Record<string, string> })
    | undefined;
  if (!deployment || !configMap) throw new Error('no Deployment and ConfigMap among the rendered objects');
  const configDir = path.join(pod.root, 'etc/kubediff');
  await mkdir(configDir, { recursive: true });
  await writeFile(path.join(configDir, 'config.yaml'), configMap.data['config.yaml'] ?? '');
  return (deployment.spec.template.spec.containers[0]?.args ?? []).map((arg) =>
    arg.startsWith('--listen=') ? '--listen=127.0.0.1:0' : arg.replace('/etc/kubediff/', `${configDir}/`),
  );
}
