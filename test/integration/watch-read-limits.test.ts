// Reads from the API server are bounded (KUBEDIFF_MAX_READ_SIZE, docs/watching.md, "Tuning"), against the real
// API server with large ConfigMaps and a small bound: LIST pages shrink to fit, one object too large
// to read fails its resource type alone, once, naming the object, while every other type goes on;
// once it is gone, the type recovers and reports what changed meanwhile.
import assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { killAll, runKubediff } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { assertStreamInvariants, describeEvent, matching } from '../helpers/events.ts';
import { adminClient, type KubeObject, waitFor } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const admin = adminClient();

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

const id = (object: KubeObject) => `${object.metadata.uid}:${object.metadata.resourceVersion}`;
const KiB = 1024;

test('with a 512 KiB read limit: large LIST pages shrink, an object over the limit fails only its type, once, by name, and nothing is lost', async (t) => {
  const ns = await admin.namespaceFor(t, 'read-limit');
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  // Twelve ConfigMaps of 100 KiB: a first LIST page of 500 would be 1.2 MB.
  const small: KubeObject[] = [];
  for (let index = 0; index < 12; index++) {
    small.push(
      await admin.create(configMaps, {
        metadata: { name: `small-${index}` },
        data: { v: 'x'.repeat(100 * KiB) },
      }),
    );
  }
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      testCluster().kubeconfigPath,
      '-o',
      'json',
      '--initial',
      '-n',
      ns,
      '-r',
      'configmaps',
      '-r',
      'secrets',
      '--listen',
      '127.0.0.1:0',
    ],
    {
      env: { KUBEDIFF_MAX_READ_SIZE: '512KB', KUBEDIFF_SLOW_RETRY: '1s' },
      checkEvents: true,
      timeoutMs: 30_000,
    },
  );
  const [, base] = await kd.waitForStderr(SERVING);
  await kd.waitForStderr(/watching 2 resource types/);
  assert.deepEqual(
    kd.events.map((event) => event.id).sort(),
    small.map(id).sort(),
    'every ConfigMap listed, in pages small enough to read',
  );

  // 700 KiB: the watch event is over the limit.
  const huge = await admin.create(configMaps, {
    metadata: { name: 'huge' },
    data: { v: 'y'.repeat(700 * KiB) },
  });
  const warning = `kubediff: warning: configmaps in namespace ${ns}: the object ${ns}/huge is larger than 512 KiB, the most kubediff reads at once; raise KUBEDIFF_MAX_READ_SIZE, or leave this type out with --exclude-resource; retrying every 1s.`;
  await kd.waitForStderr(warning);
  // Retried (the relist meets it too) and still failing: several failures, counted, one line.
  await waitFor(
    async () =>
      ((await scrapeMetrics(base ?? '')).get(
        'kubediff_watch_failures_total{cluster="kubediff-test",resource="configmaps",reason="too-large"}',
      ) ?? 0) >= 3,
    { what: 'three failed attempts of configmaps', timeoutMs: 20_000 },
  );
  // Meanwhile: another type carries on, and a change to the failing one waits for its recovery.
  const secret = await admin.create(`/api/v1/namespaces/${ns}/secrets`, {
    metadata: { name: 's' },
    stringData: { k: 'v' },
  });
  await kd.waitForEvent((event) => event.id === id(secret), {
    description: 'the Secret, while configmaps fail',
  });
  const changed = await admin.patch(`${configMaps}/small-1`, { data: { v: 'changed' } });

  await admin.delete(`${configMaps}/huge`);
  await kd.waitForStderr(`kubediff: configmaps in namespace ${ns}: watching again.`);
  await kd.waitForEvent(matching({ type: 'UPDATED', name: 'small-1', offline: true }), {
    description: 'the change made while configmaps failed, found by the relist',
  });
  const marker = await admin.patch(`${configMaps}/small-2`, { data: { v: 'marker' } });
  await kd.waitForEvent((event) => event.id === id(marker), { description: 'the marker' });

  const listing = `the events were:\n${kd.events.map(describeEvent).join('\n')}`;
  assert.equal(
    kd.stderr.split(warning).length - 1,
    1,
    `one warning for the whole outage of configmaps:\n${kd.stderr}`,
  );
  assert.ok(
    !kd.events.some((event) => event.object.uid === huge.metadata.uid),
    `huge was never read:\n${listing}`,
  );
  assert.deepEqual(
    kd.events.slice(small.length).map((event) => event.id),
    [id(secret), id(changed), id(marker)],
    listing,
  );
  assert.equal(kd.events.find((event) => event.id === id(changed))?.offline, true, listing);
  assertStreamInvariants(kd.events);
});
