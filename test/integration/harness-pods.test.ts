// The pod plane (test/helpers/pod-plane.ts) does what the tests of outcomes and "used by" count on: pods
// are scheduled on kwok's fake nodes and go through the states test/kwok/stages.yaml gives them, with
// the Warning Events a kubelet sends. Each case waits for the state itself (a watch of the API server,
// no clock).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubeAdmin as Admin, KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';
import { type PodPlane, startPodPlane } from '../helpers/pod-plane.ts';

let plane: PodPlane;
let admin: Admin;

before(async () => {
  plane = await startPodPlane();
  admin = new KubeAdmin(plane.cluster);
});

after(async () => {
  await admin?.close();
  await plane?.stop();
});

interface ContainerStatus {
  name: string;
  ready?: boolean;
  restartCount?: number;
  state?: {
    waiting?: { reason?: string };
    running?: object;
    terminated?: { reason?: string; exitCode?: number };
  };
  lastState?: { terminated?: { reason?: string; exitCode?: number } };
}
interface PodStatus {
  phase?: string;
  conditions?: { type: string; status: string }[];
  containerStatuses?: ContainerStatus[];
}
type Pod = KubeObject & { spec: { nodeName?: string }; status?: PodStatus };

async function namespace(prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount of ${ns}`,
  });
  return ns;
}

async function deployment(ns: string, name: string, image: string, replicas = 2): Promise<void> {
  await admin.create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image }] } },
    },
  });
}

async function podsOf(ns: string, app: string): Promise<Pod[]> {
  const list = await admin.list(`/api/v1/namespaces/${ns}/pods`, { labelSelector: `app=${app}` });
  return list.items as Pod[];
}

/** Waits until `app`'s pods number `count` and each satisfies `check`; returns them. */
async function podsUntil(ns: string, app: string, count: number, what: string, check: (pod: Pod) => boolean) {
  return admin.waitFor(
    async () => {
      const pods = await podsOf(ns, app);
      return pods.length === count && pods.every(check) ? pods : undefined;
    },
    { what: `${count} pods of ${ns}/${app} ${what}`, timeoutMs: 120_000 },
  );
}

async function warnings(
  ns: string,
): Promise<{ reason: string; type: string; involved: string; count: number }[]> {
  const list = await admin.list(`/api/v1/namespaces/${ns}/events`);
  return list.items.map((item) => {
    const event = item as unknown as {
      reason: string;
      type: string;
      count?: number;
      involvedObject: { kind: string; name: string };
    };
    return {
      reason: event.reason,
      type: event.type,
      involved: `${event.involvedObject.kind}/${event.involvedObject.name}`,
      count: event.count ?? 1,
    };
  });
}

const ready = (pod: Pod) =>
  pod.status?.phase === 'Running' &&
  pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

describe('the pod plane', () => {
  it('schedules a Deployment on the fake nodes and its pods become Running and Ready', async () => {
    const ns = await namespace('pods-ok');
    await deployment(ns, 'web', 'registry.test/web:1.5', 3);
    const pods = await podsUntil(ns, 'web', 3, 'Ready', ready);
    for (const pod of pods) assert.ok(plane.nodes.includes(pod.spec.nodeName ?? ''), pod.spec.nodeName);
  });

  it('an image that does not exist waits in ImagePullBackOff, with Failed and BackOff events', async () => {
    const ns = await namespace('pods-pull');
    await deployment(ns, 'web', 'registry.test/web:does-not-exist', 1);
    const [pod] = await podsUntil(
      ns,
      'web',
      1,
      'in ImagePullBackOff',
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff',
    );
    assert.equal(pod?.status?.phase, 'Pending');
    const events = await admin.waitFor(
      async () => {
        const seen = await warnings(ns);
        const failed = seen.find((e) => e.reason === 'Failed' && e.type === 'Warning');
        const backOff = seen.find((e) => e.reason === 'BackOff');
        return failed && backOff ? { failed, backOff } : undefined;
      },
      { what: 'the Failed and BackOff events of the pod' },
    );
    assert.equal(events.failed.involved, `Pod/${pod?.metadata.name}`);
  });

  it('an OOM-killed container crash-loops: restarts rise, last termination OOMKilled 137, Warning BackOff', async () => {
    const ns = await namespace('pods-oom');
    await deployment(ns, 'web', 'registry.test/web:oom', 1);
    const [pod] = await podsUntil(ns, 'web', 1, 'restarted twice', (p) => {
      const status = p.status?.containerStatuses?.[0];
      return (status?.restartCount ?? 0) >= 2;
    });
    const status = pod?.status?.containerStatuses?.[0];
    assert.equal(status?.lastState?.terminated?.reason, 'OOMKilled');
    assert.equal(status?.lastState?.terminated?.exitCode, 137);
    assert.equal(pod?.status?.phase, 'Running');
    const backOff = await admin.waitFor(
      async () => (await warnings(ns)).find((e) => e.reason === 'BackOff' && e.type === 'Warning'),
      { what: 'a Warning BackOff event' },
    );
    assert.equal(backOff.involved, `Pod/${pod?.metadata.name}`);
  });

  it('a container that never gets ready runs, unready, with Warning Unhealthy', async () => {
    const ns = await namespace('pods-unready');
    await deployment(ns, 'web', 'registry.test/web:never-ready', 1);
    await podsUntil(
      ns,
      'web',
      1,
      'Running and not Ready',
      (p) =>
        p.status?.phase === 'Running' &&
        p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'False') === true,
    );
    await admin.waitFor(async () => (await warnings(ns)).find((e) => e.reason === 'Unhealthy'), {
      what: 'a Warning Unhealthy event',
    });
  });

  it("a Job's pod completes, and one with :fail fails", async () => {
    const ns = await namespace('pods-job');
    for (const [name, image] of [
      ['ok', 'registry.test/report:1.0'],
      ['bad', 'registry.test/report:fail'],
    ] as const) {
      await admin.create(`/apis/batch/v1/namespaces/${ns}/jobs`, {
        metadata: { name },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { app: name } },
            spec: { restartPolicy: 'Never', containers: [{ name: 'main', image }] },
          },
        },
      });
    }
    await podsUntil(ns, 'ok', 1, 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    await podsUntil(ns, 'bad', 1, 'Failed', (p) => p.status?.phase === 'Failed');
    const job = await admin.waitFor(
      async () => {
        const found = (await admin.get(`/apis/batch/v1/namespaces/${ns}/jobs/ok`)) as KubeObject & {
          status?: { succeeded?: number };
        };
        return found.status?.succeeded === 1 ? found : undefined;
      },
      { what: 'Job ok to count its success' },
    );
    assert.equal((job as { status?: { succeeded?: number } }).status?.succeeded, 1);
  });

  it('a rollout replaces the pods: the old ones are removed, the new ones Ready', async () => {
    const ns = await namespace('pods-roll');
    await deployment(ns, 'web', 'registry.test/web:1.4', 2);
    const before = await podsUntil(ns, 'web', 2, 'Ready', ready);
    await admin.patch(
      `/apis/apps/v1/namespaces/${ns}/deployments/web`,
      {
        spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.test/web:1.5' }] } } },
      },
      'strategic',
    );
    const old = new Set(before.map((pod) => pod.metadata.name));
    const after = await podsUntil(
      ns,
      'web',
      2,
      'replaced and Ready',
      (p) => !old.has(p.metadata.name) && ready(p),
    );
    for (const pod of after)
      assert.equal(
        (pod as unknown as { spec: { containers: { image: string }[] } }).spec.containers[0]?.image,
        'registry.test/web:1.5',
      );
  });
});
