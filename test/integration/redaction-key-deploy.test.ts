// KUBEDIFF_REDACTION_KEY as deploy/ and the Helm chart wire it: from the optional key `redaction-key` of
// the Secret the manifests name. The rendered Deployment's environment is resolved against a real Secret
// on the test API server, the way the kubelet resolves it, and kubediff runs with it: with the key its
// markers are the HMAC-SHA256 of the values under that key (`<redacted hmac:…>`), without it (the key is
// optional) plain SHA-256, and the key itself is never printed.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { HELM_CHART, helm, kubectl } from '../helpers/deploy.ts';
import { matching } from '../helpers/events.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

const DEPLOY_DIR = fileURLToPath(new URL('../../deploy/', import.meta.url));
const KEY = 'e2f1c0d9b8a7f6e5d4c3b2a1f0e9d8c7';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}

let admin: KubeAdmin;
let kubeconfig: string;

before(() => {
  admin = adminClient();
  kubeconfig = testCluster().kubeconfigPath;
});

after(async () => {
  await killAll();
  await admin.close();
});

/** The kubediff container's environment in rendered manifests (YAML documents). */
function containerEnv(rendered: string): EnvVar[] {
  for (const document of parseAllDocuments(rendered)) {
    const object = document.toJS() as {
      kind?: string;
      spec?: { template: { spec: { containers: { name: string; env?: EnvVar[] }[] } } };
    } | null;
    if (object?.kind !== 'Deployment') continue;
    const container = object.spec?.template.spec.containers.find((c) => c.name === 'kubediff');
    return container?.env ?? [];
  }
  throw new Error('no Deployment in the rendered manifests');
}

/** What the kubelet makes of `env`: values, and Secret keys read from `namespace` (optional ones may be missing). */
async function resolveEnv(env: EnvVar[], namespace: string): Promise<Record<string, string | undefined>> {
  const resolved: Record<string, string | undefined> = {};
  for (const variable of env) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (variable.value !== undefined) resolved[variable.name] = variable.value;
    if (!ref) continue;
    const secret = await admin.tryGet(`/api/v1/namespaces/${namespace}/secrets/${ref.name}`);
    const data = (secret?.data ?? {}) as Record<string, string>;
    if (data[ref.key] !== undefined)
      resolved[variable.name] = Buffer.from(data[ref.key]!, 'base64').toString();
    else if (ref.optional) resolved[variable.name] = undefined;
    else throw new Error(`${variable.name}: Secret ${ref.name} has no key ${ref.key} and it is not optional`);
  }
  return resolved;
}

async function rendered(source: 'deploy' | 'helm', namespace: string): Promise<string> {
  const result =
    source === 'deploy'
      ? await kubectl(['kustomize', DEPLOY_DIR])
      : await helm(['template', 'kd', HELM_CHART, '--namespace', namespace]);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

/** Runs kubediff with the resolved environment; returns the markers of a Secret value's change. */
async function markersOfAChange(env: Record<string, string | undefined>, namespace: string) {
  const secrets = `/api/v1/namespaces/${namespace}/secrets`;
  const kd = runKubediff(
    ['watch', '--kubeconfig', kubeconfig, '-n', namespace, '-r', 'secrets', '-o', 'json'],
    {
      env: { ...env, KUBEDIFF_LOG_FORMAT: 'text', NODE_OPTIONS: undefined },
      timeoutMs: 30_000,
    },
  );
  await kd.waitForStderr(/watching \d+ resource type/, 60_000);
  await admin.create(secrets, { metadata: { name: 'creds' }, stringData: { password: 'hunter2' } });
  await admin.patch(`${secrets}/creds`, { stringData: { password: 'hunter3' } });
  const updated = await kd.waitForEvent(matching({ type: 'UPDATED', name: 'creds' }));
  const result = await kd.stop();
  assert.equal(result.code, 0, result.stderr);
  assert.ok(!result.stdout.includes(KEY) && !result.stderr.includes(KEY), 'the key is never printed');
  await admin.delete(`${secrets}/creds`);
  return updated.changes;
}

/** The marker of a Secret value (its base64, as the API server serves `data`). */
function marker(kind: 'hmac' | 'sha256', value: string): string {
  const served = Buffer.from(value).toString('base64');
  const hash = kind === 'hmac' ? createHmac('sha256', KEY) : createHash('sha256');
  return `<redacted ${kind}:${hash.update(served).digest('hex').slice(0, 8)}>`;
}

/** The change markersOfAChange makes, hashed one way or the other. */
function passwordChange(kind: 'hmac' | 'sha256') {
  return {
    op: 'replace',
    path: '/data/password',
    from: marker(kind, 'hunter2'),
    to: marker(kind, 'hunter3'),
    manager: ADMIN_FIELD_MANAGER,
  };
}

describe('KUBEDIFF_REDACTION_KEY from the Secret deploy/ and the Helm chart name', () => {
  for (const source of ['deploy', 'helm'] as const) {
    test(`${source}: the optional key redaction-key switches the markers to a keyed HMAC`, async () => {
      const namespace = await admin.createNamespace(`redkey-${source}`);
      const env = containerEnv(await rendered(source, namespace));
      const variable = env.find((entry) => entry.name === 'KUBEDIFF_REDACTION_KEY');
      const ref = variable?.valueFrom?.secretKeyRef;
      assert.equal(ref?.key, 'redaction-key');
      assert.equal(ref?.optional, true);
      const secretName = ref?.name ?? '';
      const secrets = `/api/v1/namespaces/${namespace}/secrets`;

      // Without the key (it is optional): plain SHA-256.
      await admin.create(secrets, { metadata: { name: secretName }, stringData: { 'webhook-secret': 'w' } });
      const plain = await markersOfAChange(await resolveEnv(env, namespace), namespace);
      assert.deepEqual(plain, [passwordChange('sha256')]);

      // With it: the HMAC under that key.
      await admin.patch(`${secrets}/${secretName}`, { stringData: { 'redaction-key': KEY } });
      const keyed = await markersOfAChange(await resolveEnv(env, namespace), namespace);
      assert.deepEqual(keyed, [passwordChange('hmac')]);
      await admin.deleteNamespace(namespace);
    });
  }
});
