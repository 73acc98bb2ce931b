// An exception while processing one change costs that change at that stage, never the watch (PRODUCT.md,
// "Correctness" 7: kubediff never stops silently). The trigger is real and reproducible: a custom resource
// nested 4,000 levels deep, which the API server accepts and the diff's recursion cannot walk. Before, the
// exception ended the watch connection ("the watch connection broke") and the update was lost.
import assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { killAll, runKubediff, watchArgs } from '../helpers/cli.ts';
import { adminClient } from '../helpers/kube-admin.ts';
import { SERVING, scrapeMetrics } from '../helpers/metrics.ts';

const admin = adminClient();
const GROUP = 'failures.kubediff.example.com';

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.deleteCRD(`deeps.${GROUP}`);
  await admin.close();
});

/** {a: {a: … {a: leaf}}}, `depth` levels. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
}

test('a diff that throws is reported once with the object, the update still flows, the watch goes on', async (t) => {
  await admin.createCRD(GROUP, 'Deep', 'deeps');
  const ns = await admin.createNamespace('failures');
  t.after(() => admin.deleteNamespace(ns));
  const deeps = `/apis/${GROUP}/v1/namespaces/${ns}/deeps`;

  const kd = runKubediff(watchArgs(ns, [`deeps.${GROUP}`, 'configmaps'], '--listen', '127.0.0.1:0'), {
    checkEvents: true,
    timeoutMs: 30_000,
  });
  const [, base] = await kd.waitForStderr(SERVING);
  await kd.waitForStderr(/watching 2 resource types/);

  const created = await admin.create(deeps, {
    apiVersion: `${GROUP}/v1`,
    kind: 'Deep',
    metadata: { name: 'deep' },
    spec: nested(4_000, 1),
  });
  await kd.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'deep');

  // Two updates the diff cannot walk: each is still reported, as a change of the whole top-level field
  // that changed (metadata, where the label is); the deep spec did not change and is not reported.
  const first = await admin.patch(`${deeps}/deep`, { metadata: { labels: { secretish: 'label-value-1' } } });
  const second = await admin.patch(`${deeps}/deep`, { metadata: { labels: { secretish: 'label-value-2' } } });
  for (const [object, from, to] of [
    [first, undefined, { secretish: 'label-value-1' }],
    [second, { secretish: 'label-value-1' }, { secretish: 'label-value-2' }],
  ] as const) {
    const updated = await kd.waitForEvent(
      (event) => event.id === `${object.metadata.uid}:${object.metadata.resourceVersion}`,
      { description: `the update to ${to.secretish}` },
    );
    assert.equal(updated.type, 'UPDATED');
    const labels = (value: unknown) => (value as { labels?: Record<string, string> }).labels;
    assert.deepEqual(
      updated.changes?.map((change) => ({
        op: change.op,
        path: change.path,
        from: labels(change.from),
        to: labels(change.to),
      })),
      [{ op: 'replace', path: '/metadata', from, to }],
    );
  }

  // The watch is still running: a later change elsewhere arrives, and nothing broke the connection.
  await admin.create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'sentinel' } });
  await kd.waitForEvent((event) => event.type === 'ADDED' && event.object.name === 'sentinel');
  assert.doesNotMatch(kd.stderr, /connection broke|reconnecting/);

  // Said once (one kind of failure), naming the object, never its contents; every occurrence counted.
  const warnings = kd.stderr.split('\n').filter((line) => line.includes('failed for'));
  assert.deepEqual(warnings, [
    `kubediff: warning: the diff failed for deeps.${GROUP} ${ns}/deep (uid ${created.metadata.uid}, resourceVersion ${first.metadata.resourceVersion}): ` +
      'RangeError: Maximum call stack size exceeded; the update is reported as changes of whole top-level fields (spec, metadata, …). ' +
      'Further failures of this kind are only counted (--debug shows each one).',
  ]);
  assert.doesNotMatch(kd.stderr, /label-value/);
  const metrics = await scrapeMetrics(base ?? '');
  assert.equal(metrics.get('kubediff_event_failures_total{stage="diff"}'), 2);
  assert.equal(metrics.get('kubediff_event_failures_total{stage="handler"}'), 0);

  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});
