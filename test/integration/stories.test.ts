// Stories end to end (docs/stories.md): real rollouts on a control plane of its own that runs the
// deployment, replicaset, job and cronjob controllers (the shared test cluster does not: its tests count
// on a Deployment creating nothing), `kubectl` as a person runs it, and a loopback "Slack".
//
// No test waits on the clock: the story window is a short flag, each story is awaited as a Slack
// message, and "exactly one message" is checked against a later sentinel (a ConfigMap whose own story
// can only close after every story that closed before it).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Story } from '../../src/events/story.ts';
import { type KubediffProcess, killAll, runKubediff } from '../helpers/cli.ts';
import {
  type ClusterInfo,
  DEFAULT_CONTROLLERS,
  defaultBinDir,
  type RunningCluster,
  startCluster,
  useExistingCluster,
  WORKLOAD_CONTROLLERS,
} from '../helpers/cluster.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import type { TestEvent } from '../helpers/events.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { KubeAdmin, type KubeObject } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';
import { nonEmpty } from '../helpers/non-empty.ts';
import { blockKitProblems, type SlackPayload, visibleText } from '../helpers/slack-payload.ts';

const run = promisify(execFile);
const READY = /watching \d+ resource types?/;
const WINDOW = '1s';

let cluster: ClusterInfo;
let started: RunningCluster | undefined;
let admin: KubeAdmin;
let slack: HttpReceiver;
let scratch: string;

before(async () => {
  if (useExistingCluster()) cluster = testCluster();
  else {
    started = await startCluster({ controllers: [...DEFAULT_CONTROLLERS, ...WORKLOAD_CONTROLLERS] });
    cluster = started;
  }
  admin = new KubeAdmin(cluster);
  slack = await HttpReceiver.start();
  scratch = await mkdtemp(path.join(tmpdir(), 'kubediff-stories-'));
});

after(async () => {
  await killAll();
  await slack?.close();
  await admin?.close();
  await started?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function kubectl(...args: string[]): Promise<{ stdout: string }> {
  const binary = cluster.binaries?.kubectl ?? path.join(defaultBinDir, 'kubectl');
  return run(binary, ['--kubeconfig', cluster.kubeconfigPath, ...args]);
}

/** A namespace whose `default` ServiceAccount exists (pods cannot be created before it). */
async function namespace(prefix: string): Promise<string> {
  const ns = await admin.createNamespace(prefix);
  await admin.waitFor(() => admin.tryGet(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
    what: `the default ServiceAccount of ${ns}`,
  });
  return ns;
}

/**
 * A Deployment of `replicas` pods that rolls out all at once (pods stay Pending without a kubelet, so a
 * surge-by-one rollout would wait for them forever), settled: its ReplicaSet and pods exist.
 */
async function deployment(ns: string, name: string, replicas: number, image: string): Promise<KubeObject> {
  const created = await admin.create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%', maxSurge: 0 } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image }] },
      },
    },
  });
  await admin.waitFor(async () => (await pods(ns, name)).length === replicas, {
    what: `${replicas} pods of Deployment ${ns}/${name}`,
  });
  return created;
}

async function pods(ns: string, app: string): Promise<KubeObject[]> {
  const list = await admin.list(`/api/v1/namespaces/${ns}/pods`, { labelSelector: `app=${app}` });
  return list.items;
}

async function replicaSets(ns: string): Promise<string[]> {
  const list = await admin.list(`/apis/apps/v1/namespaces/${ns}/replicasets`);
  return list.items.map((item) => item.metadata.name);
}

function watch(ns: string, ...extra: string[]): Promise<KubediffProcess> {
  const process = runKubediff(
    [
      'watch',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-n',
      ns,
      '--story-window',
      WINDOW,
      '--slack-webhook',
      slack.url(`/services/T/B/${ns}`),
      ...extra,
    ],
    { checkEvents: true, timeoutMs: 30_000 },
  );
  return process.waitForStderr(READY).then(() => process);
}

/** The Slack messages of one namespace's kubediff (each test has its own webhook path). */
function messages(ns: string): SlackPayload[] {
  return slack.requests
    .filter((request) => request.path.endsWith(`/${ns}`))
    .map((request) => JSON.parse(request.body) as SlackPayload);
}

function waitForMessage(ns: string, what: string, match: (text: string) => boolean): Promise<SlackPayload> {
  return slack.waitUntil(
    () => messages(ns).find((message) => match(visibleText(message))),
    30_000,
    () =>
      `a Slack message ${what} (got: ${
        messages(ns)
          .map((m) => String(m.text))
          .join(' | ') || 'none'
      })`,
  );
}

/**
 * Everything Slack got for `ns` until a sentinel ConfigMap's story: what came before it is all there
 * will be of the stories that closed before it.
 */
async function messagesUntilSentinel(ns: string): Promise<SlackPayload[]> {
  const name = `sentinel-${Date.now()}`;
  await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name }, data: { a: '1' } });
  const sentinel = await waitForMessage(ns, `for the sentinel ${name}`, (text) => text.includes(name));
  const all = messages(ns);
  for (const message of all) assert.deepEqual(blockKitProblems(message), []);
  return all.slice(0, all.indexOf(sentinel));
}

function ownedBy(events: readonly TestEvent[], uid: string, kinds: readonly string[]): TestEvent[] {
  return events.filter((event) => kinds.includes(event.object.kind) && event.owner?.uid === uid);
}

describe('stories', { timeout: 240_000 }, () => {
  it('kubectl set image: one Slack message naming the Deployment, the image, the ReplicaSets, the pods', async () => {
    const ns = await namespace('story-image');
    const web = await deployment(ns, 'web', 3, 'shop:1.4');
    const [oldReplicaSet] = await replicaSets(ns);
    const hook = await HttpReceiver.start();
    const kd = await watch(ns, '-o', 'json', '--webhook', hook.url('/stories'), '--webhook-stories');
    // The same rollout in the terminal, without pods: the story says what it saw.
    const terminal = runKubediff(
      [
        'watch',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '-n',
        ns,
        '-o',
        'pretty',
        '--stories',
        '--story-window',
        WINDOW,
        '--exclude-resource',
        'pods',
      ],
      { timeoutMs: 30_000 },
    );
    await terminal.waitForStderr(READY);

    await kubectl('-n', ns, 'set', 'image', 'deploy/web', 'app=shop:1.5');
    await admin.waitFor(
      async () =>
        (await pods(ns, 'web')).every((pod) => JSON.stringify(pod).includes('shop:1.5')) &&
        (await pods(ns, 'web')).length === 3,
      {
        what: 'the rollout to shop:1.5',
      },
    );
    const replicaSetNames = await replicaSets(ns);
    const newReplicaSet = replicaSetNames.find((name) => name !== oldReplicaSet);
    assert.ok(oldReplicaSet && newReplicaSet, `two ReplicaSets: ${replicaSetNames.join(', ')}`);

    const before = await messagesUntilSentinel(ns);
    const about = before.filter((message) => visibleText(message).includes(`Deployment ${ns}/web`));
    assert.equal(
      about.length,
      1,
      `one message for the rollout, got:\n${before.map(visibleText).join('\n---\n')}`,
    );
    assert.equal(before.length, 1, 'nothing but the story before the sentinel');
    const text = visibleText(about[0]!);
    assert.match(text, /spec\.template\.spec\.containers\[0\]\.image`: `"shop:1\.4"` → `"shop:1\.5"`/);
    assert.match(text, new RegExp(`ReplicaSet ${newReplicaSet} created, scaled \\d→3`));
    assert.match(text, new RegExp(`ReplicaSet ${oldReplicaSet} scaled 3→0`));
    assert.match(text, /3 pods replaced/);

    // stdout: every event of the rollout, each with the Deployment as owner.
    const uid = web.metadata.uid;
    const rollout = kd.events.filter((event) => event.object.kind !== 'ConfigMap');
    assert.ok(rollout.length >= 9, `the rollout's events: ${rollout.length}`);
    for (const event of rollout)
      assert.deepEqual(
        event.owner,
        { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid },
        `${event.type} ${event.object.kind} ${event.object.name}`,
      );
    assert.equal(ownedBy(rollout, uid, ['Pod']).filter((event) => event.type === 'ADDED').length, 3);
    assert.equal(ownedBy(rollout, uid, ['Pod']).filter((event) => event.type === 'DELETED').length, 3);
    assert.ok(ownedBy(rollout, uid, ['ReplicaSet']).some((event) => event.object.name === newReplicaSet));

    // The webhook: one STORY payload that carries every event of the rollout, by id and in full.
    const payloads = hook.jsonBodies() as Story[];
    const stories = payloads.filter((payload) => payload.type === 'STORY' && payload.owner.uid === uid);
    assert.equal(stories.length, 1, JSON.stringify(payloads.map((p) => p.id)));
    const story = stories[0]!;
    assert.deepEqual(
      story.events.map((event) => event.id),
      rollout.map((event) => event.id),
    );
    assert.equal(story.count, rollout.length);
    assert.equal(story.summary.includes('3 pods replaced'), true, story.summary);
    assert.equal(hook.requests.find((r) => r.body.includes(story.id))?.headers['x-kubediff-kind'], 'story');
    await hook.close();

    await terminal.waitForStdout(/STORY/);
    const shown = terminal.stdout;
    assert.match(shown, new RegExp(`STORY +Deployment ${ns}/web updated`));
    assert.match(shown, /~ spec\.template\.spec\.containers\[0\]\.image: "shop:1\.4" → "shop:1\.5"/);
    assert.match(
      shown,
      new RegExp(
        `↳ ReplicaSet ${newReplicaSet} created, scaled \\d→3; ReplicaSet ${oldReplicaSet} scaled 3→0`,
      ),
    );
    assert.doesNotMatch(shown, /pod/i);
    assert.equal((await terminal.stop()).code, 0);
    assert.equal((await kd.stop()).code, 0);
  });

  it('kubectl scale 3→5→3 inside one window: one story that says nothing changed net', async () => {
    const ns = await namespace('story-scale');
    await deployment(ns, 'web', 3, 'shop:1.4');
    const kd = await watch(ns, '-o', 'json', '--story-window', '3s');
    await kubectl('-n', ns, 'scale', 'deploy/web', '--replicas=5');
    await kubectl('-n', ns, 'scale', 'deploy/web', '--replicas=3');
    await kd.waitForEvent(
      (event) => event.object.kind === 'ReplicaSet' && event.changes?.some((c) => c.to === 3) === true,
    );
    // The two pods of the scale-up deleted too: the rollout's last events, so that its story closes
    // before the sentinel's (the sentinel's window starts after them).
    let podsDeleted = 0;
    await kd.waitForEvent(
      (event) => event.object.kind === 'Pod' && event.type === 'DELETED' && ++podsDeleted === 2,
      { description: 'the two scaled-up pods deleted' },
    );
    const before = await messagesUntilSentinel(ns);
    assert.equal(before.length, 1, `one message, got:\n${before.map(visibleText).join('\n---\n')}`);
    const text = visibleText(before[0]!);
    // The Deployment and its ReplicaSet end where they began. The pods may not: the ReplicaSet controller
    // ranks pods of about the same age at random when it scales down, so it may delete one or two of the
    // older ones. Then the story says so and its headline is the owner's state alone.
    const replaced = /\d pods? replaced/.test(text);
    assert.match(text, new RegExp(`Deployment ${ns}/web${replaced ? '' : ':'} no net change`));
    if (replaced) {
      assert.match(
        text,
        /ReplicaSet web-\w+ no net change; (2 pods replaced|1 pod replaced, 1 pod created and deleted)\n/,
      );
    }
    assert.doesNotMatch(text, /spec\.replicas/);
    assert.equal((await kd.stop()).code, 0);
  });

  it('two Deployments rolled out at once: two stories, never mixed', async () => {
    const ns = await namespace('story-two');
    await Promise.all([deployment(ns, 'alpha', 2, 'shop:1.4'), deployment(ns, 'beta', 2, 'shop:1.4')]);
    const kd = await watch(ns, '-o', 'json');
    await Promise.all([
      kubectl('-n', ns, 'set', 'image', 'deploy/alpha', 'app=shop:2'),
      kubectl('-n', ns, 'set', 'image', 'deploy/beta', 'app=shop:3'),
    ]);
    await waitForMessage(ns, 'for alpha', (text) => text.includes(`Deployment ${ns}/alpha`));
    await waitForMessage(ns, 'for beta', (text) => text.includes(`Deployment ${ns}/beta`));
    const before = (await messagesUntilSentinel(ns)).map(visibleText);
    assert.equal(before.length, 2, before.join('\n---\n'));
    for (const [mine, other, image] of [
      ['alpha', 'beta', 'shop:2'],
      ['beta', 'alpha', 'shop:3'],
    ] as const) {
      const text = before.find((message) => message.includes(`Deployment ${ns}/${mine}`));
      assert.ok(text, `a story for ${mine}`);
      assert.ok(text.includes(`"${image}"`), text);
      assert.ok(!text.includes(other), `${mine}'s story mentions ${other}: ${text}`);
      assert.match(text, /2 pods replaced/);
    }
    assert.equal((await kd.stop()).code, 0);
  });

  it('a CronJob firing a Job: the Job and its pods under the CronJob', async () => {
    const ns = await namespace('story-cron');
    const cron = await admin.create(`/apis/batch/v1/namespaces/${ns}/cronjobs`, {
      metadata: { name: 'nightly' },
      spec: {
        // Suspended: the Job is fired by hand below, with the ownerReference the controller sets.
        suspend: true,
        schedule: '0 3 * * *',
        jobTemplate: {
          spec: {
            template: { spec: { restartPolicy: 'Never', containers: [{ name: 'job', image: 'busybox' }] } },
          },
        },
      },
    });
    const kd = await watch(ns, '-o', 'json');
    // What the cronjob controller does at the schedule: a Job controlled by the CronJob.
    await kubectl('-n', ns, 'create', 'job', 'nightly-manual', '--from=cronjob/nightly');
    const message = await waitForMessage(ns, 'for the CronJob', (text) =>
      text.includes(`CronJob ${ns}/nightly`),
    );
    const text = visibleText(message);
    assert.match(text, /Job nightly-manual created/);
    assert.match(text, /1 pod created/);
    const owner = { apiVersion: 'batch/v1', kind: 'CronJob', name: 'nightly', uid: cron.metadata.uid };
    const job = await kd.waitForEvent((event) => event.object.kind === 'Job' && event.type === 'ADDED');
    assert.deepEqual(job.owner, owner);
    const pod = await kd.waitForEvent((event) => event.object.kind === 'Pod' && event.type === 'ADDED');
    assert.deepEqual(pod.owner, owner);
    assert.equal((await kd.stop()).code, 0);
  });

  it('catch-up after a restart: the rollout made meanwhile is one offline story', async () => {
    const ns = await namespace('story-offline');
    const web = await deployment(ns, 'web', 2, 'shop:1.4');
    const state = path.join(scratch, 'state.db');
    const first = await watch(ns, '-o', 'json', '--state', state);
    assert.equal((await first.stop()).code, 0);
    await kubectl('-n', ns, 'set', 'image', 'deploy/web', 'app=shop:1.5');
    await admin.waitFor(
      async () => {
        // Both pods of the new ReplicaSet, and no other: with none listed, `every` would hold mid-rollout.
        const now = await pods(ns, 'web');
        return (
          (await replicaSets(ns)).length === 2 &&
          now.length === 2 &&
          now.every((pod) => JSON.stringify(pod).includes('shop:1.5'))
        );
      },
      {
        what: 'the rollout to shop:1.5',
      },
    );
    const second = await watch(ns, '-o', 'json', '--state', state);
    const message = await waitForMessage(ns, 'for the offline rollout', (text) =>
      text.includes(`Deployment ${ns}/web`),
    );
    const text = visibleText(message);
    assert.match(text, /happened while kubediff was not watching/);
    assert.match(text, /"shop:1\.4"` → `"shop:1\.5"/);
    assert.match(text, /2 pods replaced/);
    // Every informer relists at once: a new pod may be listed before its new ReplicaSet, and then has
    // that ReplicaSet as owner (the nearest known), never a guess; the story still holds them all.
    const offline = second.events.filter((event) => event.object.kind !== 'ConfigMap');
    const replicaSetUids = new Set(
      (await admin.list(`/apis/apps/v1/namespaces/${ns}/replicasets`)).items.map((item) => item.metadata.uid),
    );
    for (const event of nonEmpty(offline, 'offline events of the rollout')) {
      assert.equal(event.offline, true);
      const uid = event.owner?.uid ?? '';
      assert.ok(
        uid === web.metadata.uid || (event.object.kind === 'Pod' && replicaSetUids.has(uid)),
        `${event.object.kind} ${event.object.name} owned by ${JSON.stringify(event.owner)}`,
      );
    }
    assert.match(text, /\b\d+ events?: /);
    assert.equal((await second.stop()).code, 0);
  });

  it('the open stories are bounded: at the limit the oldest is told early, logged once, counted', async () => {
    const ns = await namespace('story-bound');
    const config = path.join(scratch, 'bound.yaml');
    await writeFile(
      config,
      JSON.stringify({ stories: { window: '10m', maxLength: '10m', maxOpenEvents: 3 } }),
    );
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '-c',
        config,
        '-n',
        ns,
        '-r',
        'configmaps',
        '-o',
        'pretty',
        '--stories',
        '--listen',
        '127.0.0.1:0',
      ],
      { timeoutMs: 30_000 },
    );
    const base = (await kd.waitForStderr(SERVING))[1]!;
    await kd.waitForStderr(READY);
    for (let n = 1; n <= 8; n++)
      await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `cm-${n}` } });
    // Eight owners, three open at most: the first five are told at once, oldest first.
    await kd.waitForStdout(new RegExp(`STORY +ConfigMap ${ns}/cm-5 created`));
    const told = [...kd.stdout.matchAll(/STORY +ConfigMap \S+\/(cm-\d) created/g)].map((match) => match[1]);
    assert.deepEqual(told, ['cm-1', 'cm-2', 'cm-3', 'cm-4', 'cm-5']);
    assert.match(kd.stdout, /closed early: too many changes at once/);
    const metrics = await scrapeMetrics(base);
    assert.equal(metrics.get('kubediff_stories_closed_early_total{sink="stdout",reason="buffer"}'), 5);
    assert.equal(metrics.get('kubediff_stories_open_events{sink="stdout"}'), 3);
    assert.equal(
      kd.stderr
        .split('\n')
        .filter((line) => line.includes('open stories reached their bound (3 events or 16 MiB')).length,
      1,
    );
    // Nothing dropped: the stop tells the three still open.
    const stopped = await kd.stop();
    assert.equal(stopped.code, 0);
    assert.equal([...stopped.stdout.matchAll(/STORY +ConfigMap/g)].length, 8);
  });
});
