// Every rollout followed to its OUTCOME (docs/outcomes.md), on a control plane whose pods really go
// through their states (test/helpers/pod-plane.ts: kube-scheduler and kwok by test/kwok/stages.yaml):
// a good rollout, an image that cannot be pulled, OOM-killed pods, a progress deadline, a rollout
// superseded, a scale; old pods' crashes and Warnings from before the change are not evidence; with
// --state the OUTCOME is in the history, `kubediff why` names the change, and a restart loses no verdict.
//
// Nothing waits on the clock: each OUTCOME is awaited as it arrives on stdout, each pod state as the API
// server shows it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { OutcomeEvent } from '../../src/events/event.ts';
import { openTimelineReader } from '../../src/state/open.ts';
import { type KubediffProcess, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { defaultBinDir } from '../helpers/cluster.ts';
import { changeAt, outcomeFor, outcomeOf, type TestEvent } from '../helpers/events.ts';
import { FakeSlackApi, type FakeSlackMessage } from '../helpers/fake-slack-api.ts';
import { KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';
import { type PodPlane, startPodPlane } from '../helpers/pod-plane.ts';

const run = promisify(execFile);
const READY = /watching \d+ resource types?/;
const TIMEOUT = 60_000;

let plane: PodPlane;
let admin: KubeAdmin;
let scratch: string;

before(async () => {
  plane = await startPodPlane();
  admin = new KubeAdmin(plane.cluster);
  scratch = await mkdtemp(path.join(tmpdir(), 'kubediff-outcomes-'));
});

after(async () => {
  await killAll();
  await admin?.close();
  await plane?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

type Pod = KubeObject & {
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
};

function kubectl(...args: string[]): Promise<{ stdout: string }> {
  return run(path.join(defaultBinDir, 'kubectl'), ['--kubeconfig', plane.cluster.kubeconfigPath, ...args]);
}

async function namespace(prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount of ${ns}`,
  });
  return ns;
}

/** A Deployment `web` of `replicas` pods of `image`, rolled out: its pods exist and are as `settled` says. */
async function deployment(
  ns: string,
  image: string,
  options: { replicas?: number; spec?: Record<string, unknown>; settled?: (pods: Pod[]) => boolean } = {},
): Promise<void> {
  const replicas = options.replicas ?? 2;
  await admin.create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    metadata: { name: 'web' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image }] } },
      ...options.spec,
    },
  });
  const settled = options.settled ?? ((pods) => pods.every(ready));
  await admin.waitFor(
    async () => {
      const pods = await podsOf(ns);
      return pods.length === replicas && settled(pods);
    },
    { what: `the pods of ${ns}/web (${image})`, timeoutMs: TIMEOUT },
  );
}

async function podsOf(ns: string): Promise<Pod[]> {
  return (await admin.list(`/api/v1/namespaces/${ns}/pods`, { labelSelector: 'app=web' })).items as Pod[];
}

const readyCondition = (pod: Pod) => pod.status?.conditions?.find((c) => c.type === 'Ready');
const ready = (pod: Pod) => readyCondition(pod)?.status === 'True';

async function watch(ns: string, ...extra: string[]): Promise<KubediffProcess> {
  const kd = runKubediff(
    ['watch', '--kubeconfig', plane.cluster.kubeconfigPath, '-n', ns, '-o', 'json', ...extra],
    { checkEvents: true, timeoutMs: TIMEOUT },
  );
  await kd.waitForStderr(READY);
  return kd;
}

/** The UPDATED of web that changed its image to `image`. */
function imageChange(kd: KubediffProcess, image: string): Promise<TestEvent> {
  return kd.waitForEvent(
    (event) =>
      event.type === 'UPDATED' &&
      event.object.kind === 'Deployment' &&
      changeAt(event, '/spec/template/spec/containers/0/image')?.to === image,
    { description: `the Deployment's change to ${image}` },
  );
}

async function outcomeOfChange(kd: KubediffProcess, change: TestEvent): Promise<OutcomeEvent> {
  const found = await kd.waitForEvent(outcomeFor({ id: change.id }), {
    description: `the OUTCOME of ${change.id}`,
  });
  return outcomeOf(found) as OutcomeEvent;
}

const setImage = (ns: string, image: string) =>
  kubectl('-n', ns, 'set', 'image', 'deploy/web', `app=${image}`);

describe('outcomes', { timeout: 300_000 }, () => {
  it('a good rollout is healthy, `after` reaching the moment its last pod became Ready', async () => {
    const ns = await namespace('outcome-ok');
    await deployment(ns, 'registry.test/web:1.4');
    const old = new Set((await podsOf(ns)).map((pod) => pod.metadata.name));
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:1.5');
    const change = await imageChange(kd, 'registry.test/web:1.5');
    const outcome = await outcomeOfChange(kd, change);
    assert.equal(outcome.verdict, 'healthy', JSON.stringify(outcome.evidence));
    assert.equal(outcome.id, `outcome:${change.id}`);
    assert.deepEqual(outcome.follows, [change.id]);
    assert.deepEqual(outcome.object, change.object);
    assert.equal(outcome.by?.managers?.[0]?.manager, 'kubectl-set');
    assert.equal(outcome.evidence.summary, '2/2 pods ready');
    // The pods of the new revision, as the API server has them: the evidence names each, Ready since
    // the same transition time.
    const fresh = (await podsOf(ns)).filter((pod) => !old.has(pod.metadata.name));
    const readyAt = new Map(fresh.map((pod) => [pod.metadata.name, readyCondition(pod)?.lastTransitionTime]));
    assert.deepEqual(
      new Map(outcome.evidence.pods.map((pod) => [pod.name, pod.readySince])),
      readyAt,
      'the evidence names the new pods and when each became Ready',
    );
    assert.ok(outcome.evidence.pods.every((pod) => pod.ready && pod.restarts === 0));
    // The verdict came once the last pod was Ready (its transition time has one-second resolution), and
    // `after` is the time from the change to the verdict.
    const lastReady = Math.max(...[...readyAt.values()].map((time) => Date.parse(time ?? '')));
    const changed = Date.parse(change.time);
    assert.ok(
      Date.parse(outcome.time) >= lastReady,
      `${outcome.time} is before the last Ready (${lastReady})`,
    );
    assert.equal(Math.round(outcome.after * 1000), Date.parse(outcome.time) - changed);
    assert.ok(changed + outcome.after * 1000 >= lastReady);
    assert.equal(kd.events.filter((event) => outcomeOf(event)).length, 1, 'one OUTCOME per rollout');
    await kd.stop();
  });

  it('an image that cannot be pulled is degraded, naming ImagePullBackOff', async () => {
    const ns = await namespace('outcome-pull');
    await deployment(ns, 'registry.test/web:1.4', { replicas: 1 });
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:does-not-exist');
    const outcome = await outcomeOfChange(kd, await imageChange(kd, 'registry.test/web:does-not-exist'));
    assert.equal(outcome.verdict, 'degraded');
    assert.equal(outcome.evidence.summary, '1/1 pods ImagePullBackOff');
    const [pod] = outcome.evidence.pods;
    assert.equal(pod?.reason, 'ImagePullBackOff');
    assert.equal(pod?.container, 'app');
    assert.match(pod?.message ?? '', /does-not-exist/);
    assert.ok(
      outcome.evidence.warnings.some((w) => w.reason === 'Failed' && w.object === `Pod/${pod?.name}`),
      JSON.stringify(outcome.evidence.warnings),
    );
    await kd.stop();
  });

  it('OOM-killed pods are degraded, naming OOMKilled, exit 137 and the restarts', async () => {
    const ns = await namespace('outcome-oom');
    await deployment(ns, 'registry.test/web:1.4', { replicas: 1 });
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:oom');
    const outcome = await outcomeOfChange(kd, await imageChange(kd, 'registry.test/web:oom'));
    assert.equal(outcome.verdict, 'degraded');
    const [pod] = outcome.evidence.pods;
    assert.equal(pod?.reason, 'CrashLoopBackOff');
    assert.deepEqual(pod?.lastTermination, { container: 'app', reason: 'OOMKilled', exitCode: 137 });
    assert.ok((pod?.restarts ?? 0) >= 1);
    assert.match(
      outcome.evidence.summary,
      /^1\/1 pods CrashLoopBackOff, last OOMKilled \(exit 137\), \d+ restarts?$/,
    );
    await kd.stop();
  });

  it('a rollout past its progress deadline has failed', async () => {
    const ns = await namespace('outcome-deadline');
    await deployment(ns, 'registry.test/web:1.4', { replicas: 1, spec: { progressDeadlineSeconds: 3 } });
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:never-ready');
    const outcome = await outcomeOfChange(kd, await imageChange(kd, 'registry.test/web:never-ready'));
    assert.equal(outcome.verdict, 'failed', JSON.stringify(outcome.evidence));
    assert.match(outcome.evidence.summary, /has timed out progressing\.; 0\/1 pods ready$/);
    assert.ok(
      outcome.evidence.conditions.some(
        (c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded',
      ),
    );
    assert.equal(outcome.evidence.pods[0]?.reason, 'NotReady');
    await kd.stop();
  });

  it('a second rollout before the first settled supersedes it; the second has its own OUTCOME', async () => {
    const ns = await namespace('outcome-again');
    await deployment(ns, 'registry.test/web:1.4');
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:never-ready');
    const first = await imageChange(kd, 'registry.test/web:never-ready');
    await setImage(ns, 'registry.test/web:1.6');
    const second = await imageChange(kd, 'registry.test/web:1.6');
    const superseded = await outcomeOfChange(kd, first);
    assert.equal(superseded.verdict, 'superseded');
    assert.equal(superseded.evidence.supersededBy, second.id);
    const healthy = await outcomeOfChange(kd, second);
    assert.equal(healthy.verdict, 'healthy');
    assert.ok(kd.events.indexOf(superseded as never) < kd.events.indexOf(healthy as never));
    await kd.stop();
  });

  it('a scale alone is healthy, without a pod restart', async () => {
    const ns = await namespace('outcome-scale');
    await deployment(ns, 'registry.test/web:1.4');
    const kd = await watch(ns);
    await kubectl('-n', ns, 'scale', 'deploy/web', '--replicas=4');
    const scale = await kd.waitForEvent(
      (event) => event.object.kind === 'Deployment' && changeAt(event, '/spec/replicas')?.to === 4,
      { description: 'the scale to 4' },
    );
    const outcome = await outcomeOfChange(kd, scale);
    assert.equal(outcome.verdict, 'healthy');
    assert.equal(outcome.evidence.summary, '4/4 pods ready');
    assert.equal(outcome.evidence.podCount, 4);
    assert.ok(outcome.evidence.pods.every((pod) => pod.ready && pod.restarts === 0));
    assert.deepEqual(outcome.evidence.replicas, { desired: 4, updated: 4, ready: 4, available: 4 });
    await kd.stop();
  });

  it("old pods' crashes and Warning events from before the change are not evidence", async () => {
    const ns = await namespace('outcome-before');
    // The old revision crash-loops, with Warning BackOff events, before kubediff even starts…
    await deployment(ns, 'registry.test/web:crash', {
      replicas: 1,
      settled: (pods) => pods.every((pod) => JSON.stringify(pod.status).includes('"restartCount":2')),
    });
    const deployed = await admin.get(`/apis/apps/v1/namespaces/${ns}/deployments/web`);
    // …and the Deployment has a Warning of its own from before the change.
    await admin.create(`/api/v1/namespaces/${ns}/events`, {
      metadata: { name: 'web.before' },
      type: 'Warning',
      reason: 'SomethingOld',
      message: 'a warning from before the change',
      count: 3,
      involvedObject: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'web',
        namespace: ns,
        uid: deployed.metadata.uid,
      },
      source: { component: 'test' },
    });
    const kd = await watch(ns);
    await setImage(ns, 'registry.test/web:1.5');
    const outcome = await outcomeOfChange(kd, await imageChange(kd, 'registry.test/web:1.5'));
    assert.equal(outcome.verdict, 'healthy', JSON.stringify(outcome.evidence));
    assert.deepEqual(outcome.evidence.warnings, [], 'no Warning from before the change');
    assert.ok(outcome.evidence.pods.every((pod) => pod.restarts === 0 && pod.ready));
    assert.equal(outcome.evidence.summary, '1/1 pods ready');
    await kd.stop();
  });

  it('with --state: recorded in the history, `kubediff why` names the image change, and a restart loses no verdict', async () => {
    const ns = await namespace('outcome-why');
    const state = path.join(scratch, 'why.db');
    // Its pods read a ConfigMap (envFrom): a change to it is a cause `why` names too (through usedBy's references).
    await admin.create(`/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'web-config' },
      data: { MODE: 'a' },
    });
    await deployment(ns, 'registry.test/web:1.4', {
      replicas: 1,
      spec: {
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              {
                name: 'app',
                image: 'registry.test/web:1.4',
                envFrom: [{ configMapRef: { name: 'web-config' } }],
              },
            ],
          },
        },
      },
    });
    const kd = await watch(ns, '--state', state);
    await admin.patch(`/api/v1/namespaces/${ns}/configmaps/web-config`, { data: { MODE: 'b' } });
    const configChange = await kd.waitForEvent(
      (event) =>
        event.type === 'UPDATED' && event.object.kind === 'ConfigMap' && event.object.name === 'web-config',
      { description: 'the change of web-config' },
    );
    await setImage(ns, 'registry.test/web:oom');
    const change = await imageChange(kd, 'registry.test/web:oom');
    const degraded = await outcomeOfChange(kd, change);
    assert.equal(degraded.verdict, 'degraded');
    const crashing = degraded.evidence.pods[0]?.name ?? '';
    // A rollout still waiting when kubediff stops: with --state it is not reported, but followed again.
    await kubectl('-n', ns, 'create', 'deployment', 'api', '--image=registry.test/api:never-ready');
    const pending = await kd.waitForEvent(
      (event) => event.type === 'ADDED' && event.object.kind === 'Deployment' && event.object.name === 'api',
      { description: 'the creation of api' },
    );
    await admin.waitFor(
      async () =>
        (await admin.list(`/api/v1/namespaces/${ns}/pods`, { labelSelector: 'app=api' })).items.some((pod) =>
          JSON.stringify(pod).includes('"phase":"Running"'),
        ),
      { what: 'the pod of api running, not ready' },
    );
    const stopped = await kd.stop();
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(kd.events.filter(outcomeFor({ id: pending.id })).length, 0, 'no OUTCOME of api yet');

    const history = await runKubediffToCompletion([
      'history',
      '--state',
      state,
      '--outcome',
      'degraded',
      '-o',
      'json',
    ]);
    assert.equal(history.code, 0, history.stderr);
    const recorded = history.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as OutcomeEvent);
    assert.deepEqual(recorded, [degraded]);

    // The UI's events table and timeline read the change with the verdict of the rollout it started.
    const reader = await openTimelineReader({ path: state });
    try {
      const page = await reader.events({}, { limit: 100 });
      const row = page.events.find((summary) => summary.id === change.id);
      assert.equal(row?.outcome?.verdict, 'degraded', JSON.stringify(row));
      assert.equal(row?.outcome?.summary, degraded.evidence.summary);
    } finally {
      await reader.close();
    }

    const why = await runKubediffToCompletion([
      'why',
      `pod/${crashing}`,
      '-n',
      ns,
      '--state',
      state,
      '-o',
      'json',
    ]);
    assert.equal(why.code, 0, why.stderr);
    const candidates = why.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(candidates[0]?.id, change.id, why.stdout);
    assert.equal(candidates[0]?.relation, 'owner');
    assert.deepEqual((candidates[0]?.changes as unknown[] | undefined)?.[0], {
      op: 'replace',
      path: '/spec/template/spec/containers/0/image',
      from: 'registry.test/web:1.4',
      to: 'registry.test/web:oom',
      manager: 'kubectl-set',
    });
    const used = candidates.find((candidate) => candidate.id === configChange.id);
    assert.equal(used?.relation, 'uses', why.stdout);
    assert.equal(used?.role, 'its ConfigMap (envFrom)', why.stdout);
    assert.match(why.stderr, new RegExp(`was degraded at ${degraded.time.replace(/\./g, '\\.')}`));
    const text = await runKubediffToCompletion(['why', `pod/${crashing}`, '-n', ns, '--state', state]);
    assert.match(
      text.stdout,
      /UPDATED Deployment .*\/web \(its Deployment\) by kubectl-set\n +~ spec\.template\.spec\.containers\[0\]\.image: "registry\.test\/web:1\.4" → "registry\.test\/web:oom"/,
    );
    // Nothing in the last millisecond before it became degraded: exit 1.
    const none = await runKubediffToCompletion([
      'why',
      `pod/${crashing}`,
      '-n',
      ns,
      '--state',
      state,
      '--window',
      '1ms',
    ]);
    assert.equal(none.code, 1, `${none.stdout}${none.stderr}`);
    assert.match(none.stdout, /: no change in the 1ms before/);

    // Restarted: api's rollout is followed again; its deletion is the change that comes first.
    const again = await watch(ns, '--state', state);
    await kubectl('-n', ns, 'delete', 'deployment', 'api');
    const resumed = outcomeOf(
      await again.waitForEvent(outcomeFor({ id: pending.id }), { description: 'the OUTCOME of api' }),
    ) as OutcomeEvent;
    assert.equal(resumed.verdict, 'superseded');
    assert.match(resumed.evidence.note ?? '', /followed again after kubediff restarted/);
    // `after` still counts from the change, made before the restart.
    assert.equal(Math.round(resumed.after * 1000), Date.parse(resumed.time) - Date.parse(pending.time));
    await again.stop();
  });

  it("a Slack bot: the rollout's story is one message, its OUTCOME a reply in that thread, its first line the verdict", async () => {
    const ns = await namespace('outcome-slack');
    const slack = await FakeSlackApi.start({ token: 'xoxb-outcomes-test' });
    try {
      await deployment(ns, 'registry.test/shop:1.4', { replicas: 2 });
      const kd = runKubediff(
        [
          'watch',
          '--kubeconfig',
          plane.cluster.kubeconfigPath,
          '-n',
          ns,
          '-o',
          'json',
          '--slack-channel',
          '#alerts',
        ],
        {
          checkEvents: true,
          timeoutMs: TIMEOUT,
          env: { KUBEDIFF_SLACK_TOKEN: 'xoxb-outcomes-test', KUBEDIFF_SLACK_API_URL: slack.apiUrl },
        },
      );
      await kd.waitForStderr(READY);
      await setImage(ns, 'registry.test/shop:oom');
      const change = await imageChange(kd, 'registry.test/shop:oom');
      const outcome = await outcomeOfChange(kd, change);
      assert.equal(outcome.verdict, 'degraded');
      // At the stop, the open story is told, then its OUTCOME follows it.
      const stopped = await kd.stop();
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.deepEqual(slack.refused, []);
      const header = (blocks: unknown[]) => (blocks[0] as { text: { text: string } }).text.text;
      const stories = slack
        .topLevel()
        .filter((m) => header(m.posted.blocks).includes(`Deployment ${ns}/web`));
      assert.equal(stories.length, 1, JSON.stringify(slack.messages.map((m) => m.posted.text)));
      const [story] = stories as [FakeSlackMessage];
      const replies = slack.repliesTo(story);
      assert.equal(replies.length, 1, "one OUTCOME, in the story's thread");
      assert.equal(slack.messages.filter((m) => m.threadTs !== undefined).length, 1);
      assert.match(header(replies[0]?.blocks ?? []), new RegExp(`Deployment ${ns}/web degraded in `));
      assert.match(replies[0]?.text ?? '', /OOMKilled \(exit 137\)/);
      assert.equal(story.edits.length, 1);
      const headline = new RegExp(
        `^(\\[[^\\]]+\\] )?web shop:oom by kubectl-set → degraded in [\\d.]+m?s: ${outcome.evidence.summary.replace(/[()]/g, '\\$&')}$`,
      );
      assert.match(header(story.blocks), headline);
      assert.match(story.text, headline);
    } finally {
      await slack.close();
    }
  });
});
