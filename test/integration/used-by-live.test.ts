// Whether a ConfigMap change is live (docs/used-by.md, "Live"), on the pod plane (test/helpers/pod-plane.ts):
// pods that really run, scheduled on kwok's fake nodes, with their containers' start times. A value
// read through env stays old in pods started before the change (`live: false` with their count) until a
// rollout, which carries the link to the change (`rollsOut`) and after which the pods see it (`kubediff
// resources --used-by` says live); a mounted volume follows at the kubelet's next sync (`eventually`).
//
// Start times have a one-second resolution (a change in the second a container started counts as made
// before it): where the test needs a change to come after a start, it waits for the next second of the
// clock the API server's timestamps are read from, the only thing that can be awaited there.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { UsedBy, UsingWorkload } from '../../src/events/event.ts';
import type { ChatPlatformName } from '../helpers/chat-platforms.ts';
import { startChatReceiver } from '../helpers/chat-receivers.ts';
import { killAll, runKubediff, runKubediffToCompletion, WATCHING } from '../helpers/cli.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';
import { type PodPlane, startPodPlane } from '../helpers/pod-plane.ts';
import { blockKitProblems, type SlackPayload } from '../helpers/slack-payload.ts';

let plane: PodPlane;
let admin: KubeAdmin;
const receivers: HttpReceiver[] = [];

before(async () => {
  plane = await startPodPlane();
  admin = new KubeAdmin(plane.cluster);
});

after(async () => {
  await killAll();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await admin?.close();
  await plane?.stop();
});

type Pod = KubeObject & {
  metadata: { annotations?: Record<string, string> };
  spec: { containers: { name: string }[] };
  status?: { phase?: string; containerStatuses?: { state?: { running?: { startedAt?: string } } }[] };
};

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;
const RESTARTED = 'kubectl.kubernetes.io/restartedAt';

async function podsOf(ns: string, app: string): Promise<Pod[]> {
  return (await admin.list(`/api/v1/namespaces/${ns}/pods`, { labelSelector: `app=${app}` })).items as Pod[];
}

/** When each container of the pod started (ms), once every one of them runs. */
function starts(pod: Pod): number[] | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  const times = statuses.map((status) => Date.parse(status.state?.running?.startedAt ?? ''));
  return pod.status?.phase === 'Running' && times.length > 0 && times.every((time) => !Number.isNaN(time))
    ? times
    : undefined;
}

/** Waits until `app` has exactly `count` pods, each running and accepted by `check`; returns them. */
async function runningPods(
  ns: string,
  app: string,
  count: number,
  what: string,
  check: (pod: Pod) => boolean = () => true,
) {
  return admin.waitFor(
    async () => {
      const pods = await podsOf(ns, app);
      return pods.length === count && pods.every((pod) => starts(pod) && check(pod)) ? pods : undefined;
    },
    { what: `${count} running pods of ${ns}/${app} ${what}`, timeoutMs: 120_000 },
  );
}

/** Resolves once the clock is past the second that `ms` falls in (timestamps have one-second resolution). */
async function pastTheSecondOf(ms: number): Promise<void> {
  const next = Math.floor(ms / 1000) * 1000 + 1000;
  const wait = next - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

function deployment(name: string, container: Record<string, unknown>, volumes: unknown[] = []) {
  return {
    metadata: { name },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'registry.test/web:1.5', ...container }], volumes },
      },
    },
  };
}

function workload(usedBy: UsedBy | undefined, name: string): UsingWorkload {
  const found = usedBy?.workloads.find(
    (entry) => entry.object.kind === 'Deployment' && entry.object.name === name,
  );
  assert.ok(found, `Deployment/${name} in usedBy: ${JSON.stringify(usedBy)}`);
  return found;
}

const CHAT: ChatPlatformName[] = ['teams', 'discord', 'mattermost', 'google-chat'];

/** A loopback receiver for each chat platform, refusing (400) what breaks that platform's rules. */
async function chatReceivers(): Promise<Record<'slack' | ChatPlatformName, HttpReceiver>> {
  const slack = await HttpReceiver.start({
    respond: (request) => {
      const problems = blockKitProblems(JSON.parse(request.body) as SlackPayload);
      return problems.length > 0 ? { status: 400, body: problems.join('; ') } : undefined;
    },
  });
  const started = { slack } as Record<'slack' | ChatPlatformName, HttpReceiver>;
  for (const platform of CHAT) started[platform] = await startChatReceiver(platform, 0);
  receivers.push(...Object.values(started));
  return started;
}

/** The text a person reads in a chat payload: its strings, without markup, escapes and entities. */
function readText(body: string): string {
  const strings: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') strings.push(value);
    else if (value && typeof value === 'object') for (const item of Object.values(value)) walk(item);
  };
  walk(JSON.parse(body));
  return strings
    .join('\n')
    .replace(/<\/?font[^>]*>/g, '')
    .replace(/[\\`]/g, '')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&');
}

/** Waits until every receiver took (2xx) a message whose text matches `pattern`. */
async function everyChatSays(chat: Record<string, HttpReceiver>, pattern: RegExp, what: string) {
  for (const [platform, receiver] of Object.entries(chat)) {
    await receiver.waitUntil(
      () =>
        receiver.requests.find(
          (request) =>
            'status' in request.reply && request.reply.status < 300 && pattern.test(readText(request.body)),
        ),
      60_000,
      () =>
        `${platform}: ${what}; got ${receiver.requests.map((r) => `${JSON.stringify(r.reply)} ${readText(r.body)}`).join(' | ')}`,
    );
  }
}

test('env read by pods older than the change: live false with their count; a rollout links the change and makes it live; a volume is live eventually', async () => {
  const ns = await admin.createNamespace('used-by-live');
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount of ${ns}`,
  });
  const cm = `/api/v1/namespaces/${ns}/configmaps`;
  await admin.create(cm, { metadata: { name: 'cfg' }, data: { mode: 'a' } });
  const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;
  await admin.create(
    deployments,
    deployment('env-web', {
      env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } }],
    }),
  );
  await admin.create(
    deployments,
    deployment('vol-web', { volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg' }] }, [
      { name: 'cfg', configMap: { name: 'cfg' } },
    ]),
  );
  const running = [
    ...(await runningPods(ns, 'env-web', 2, 'before the change')),
    ...(await runningPods(ns, 'vol-web', 2, 'before the change')),
  ];

  // Every chat platform, each on its own loopback receiver, posting per story (their default).
  const chat = await chatReceivers();
  const watch = runKubediff(
    [
      'watch',
      '--kubeconfig',
      plane.cluster.kubeconfigPath,
      '-o',
      'json',
      '-n',
      ns,
      ...['configmaps', 'deployments', 'replicasets', 'pods'].flatMap((resource) => ['-r', resource]),
      ...(['slack', ...CHAT] as const).flatMap((platform) => [
        `--${platform}-webhook`,
        chat[platform].url(`/hook/${platform}`),
      ]),
    ],
    { checkEvents: true, timeoutMs: 60_000 },
  );
  await watch.waitForStderr(WATCHING);
  await pastTheSecondOf(Math.max(...running.flatMap((pod) => starts(pod) ?? [])));

  // The change: the env pods run the old value, the volume's see it at the kubelet's next sync.
  const changed = await admin.patch(`${cm}/cfg`, { data: { mode: 'b' } });
  const event = await watch.waitForEvent((e) => e.id === id(changed), { description: 'UPDATED cfg' });
  const envWeb = workload(event.usedBy, 'env-web');
  assert.equal(envWeb.live, false);
  assert.deepEqual(envWeb.pods, { total: 2, old: 2 });
  assert.deepEqual(envWeb.keys, ['mode']);
  const volWeb = workload(event.usedBy, 'vol-web');
  assert.equal(volWeb.live, 'eventually');
  assert.deepEqual(volWeb.pods, { total: 2, old: 2 });
  // …and every chat platform says so, as the issue words it.
  await everyChatSays(
    chat,
    new RegExp(
      `ConfigMap ${ns}/cfg [\\s\\S]*→ used by deployment/env-web \\(env MODE: 2 pods still run the old value\\), deployment/vol-web \\(volume cfg: 2 pods see it at the kubelet's next sync\\)`,
    ),
    'the change of cfg, used by env-web and vol-web',
  );

  // The rollout (as `kubectl rollout restart` makes it), after the second of the change's write.
  const written = Math.max(...(event.by?.managers ?? []).map((manager) => Date.parse(manager.time ?? '')));
  assert.ok(Number.isFinite(written), 'the change has the time of its write');
  await pastTheSecondOf(written);
  const restartedAt = new Date().toISOString();
  const restarted = await admin.patch(`${deployments}/env-web`, {
    spec: { template: { metadata: { annotations: { [RESTARTED]: restartedAt } } } },
  });
  const rollout = await watch.waitForEvent((e) => e.id === id(restarted), {
    description: 'UPDATED env-web (rollout)',
  });
  assert.deepEqual(rollout.rollsOut, [
    { object: { kind: 'ConfigMap', namespace: ns, name: 'cfg' }, id: event.id, time: event.time },
  ]);
  await everyChatSays(
    chat,
    new RegExp(`→ rolls out configmap ${ns}/cfg \\(changed \\d\\d:\\d\\d:\\d\\dZ\\)`),
    'the rollout of env-web, bringing the change of cfg',
  );

  // Once the new pods run, what uses cfg sees the change: env-web is live, vol-web is still eventual.
  await runningPods(
    ns,
    'env-web',
    2,
    'of the rollout',
    (pod) => pod.metadata.annotations?.[RESTARTED] === restartedAt,
  );
  const now = await runKubediffToCompletion(
    [
      'resources',
      '--kubeconfig',
      plane.cluster.kubeconfigPath,
      '-n',
      ns,
      '--used-by',
      'configmap/cfg',
      '-o',
      'json',
    ],
    { timeoutMs: 30_000 },
  );
  assert.equal(now.code, 0, now.stderr);
  const answer = JSON.parse(now.stdout) as { usedBy: UsedBy };
  assert.equal(workload(answer.usedBy, 'env-web').live, true);
  assert.deepEqual(workload(answer.usedBy, 'env-web').pods, { total: 2, old: 0 });
  assert.equal(workload(answer.usedBy, 'vol-web').live, 'eventually');
});
