// Time limits, with the real CLI against the real API server: a server's Retry-After cannot park a watch
// for longer than the max backoff, and durations a Node.js timer cannot wait for (or a 0 that would switch
// something off) are refused before anything starts, in one sentence, exit code 2.
import assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { type FrontRequest, startApiFront } from '../helpers/api-front.ts';
import { killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { adminClient } from '../helpers/kube-admin.ts';

const admin = adminClient();

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

test('a 429 with Retry-After: 86400 on the watch is retried within the max backoff, and a short one is no warning', async (t) => {
  const ns = await admin.createNamespace('retry-after');
  t.after(() => admin.deleteNamespace(ns));
  const front = await startApiFront();
  t.after(() => front.close());
  const configMapWatch = (request: FrontRequest) =>
    request.watch && request.path === `/api/v1/namespaces/${ns}/configmaps`;
  // The first WATCH (the streaming list) is throttled "for a day".
  front.answer(configMapWatch, { status: 429, headers: { 'retry-after': '86400' } });

  const kubeconfig = await admin.writeKubeconfig(front.url);
  const kd = runKubediff(
    ['watch', '--kubeconfig', kubeconfig, '-o', 'json', '-n', ns, '-r', 'configmaps', '--debug'],
    { env: { KUBEDIFF_MAX_BACKOFF: '1s' }, checkEvents: true, timeoutMs: 30_000 },
  );
  // A 429 is the server asking for patience: said at debug level while it lasts less than 10 s.
  await kd.waitForStderr(
    /kubediff: debug: configmaps in namespace \S+: 429: answered by the test's API front .*retrying with backoff/,
  );
  // Back once the retry succeeded, which a day-long wait would never allow. (The throttled WATCH is the
  // streaming list: what exists when it succeeds is the silent baseline, so the change comes after.)
  await kd.waitForStderr(/kubediff: debug: configmaps in namespace \S+: watching again/);
  const created = await admin.create(`/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'after-429' },
    data: { k: 'v' },
  });
  const added = await kd.waitForEvent(
    (event) => event.type === 'ADDED' && event.object.name === 'after-429',
    {
      description: 'the ConfigMap created after the 429',
    },
  );
  assert.equal(added.id, `${created.metadata.uid}:${created.metadata.resourceVersion}`);
  assert.equal(
    front.requests.filter((request) => configMapWatch(request) && !request.answered).length,
    1,
    'one WATCH answered by the API server after the throttled one',
  );
  assert.doesNotMatch(kd.stderr, /warning: .*429/, 'a short throttle is no warning');
  // Over kubediff's default path: HTTP/2, which the front offers as the API server does.
  assert.deepEqual([...new Set(front.requests.map((request) => request.httpVersion))], ['2.0']);

  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});

test('a 429 that lasts is a warning once it has for 10 s, then "watching again"', async (t) => {
  const ns = await admin.createNamespace('throttled');
  t.after(() => admin.deleteNamespace(ns));
  const front = await startApiFront();
  t.after(() => front.close());
  const configMapWatch = (request: FrontRequest) =>
    request.watch && request.path === `/api/v1/namespaces/${ns}/configmaps`;
  // Throttled for 20 s or more: 20 answers asking to retry after a second (and KUBEDIFF_MAX_BACKOFF: 1.5 s at most).
  front.answer(configMapWatch, { status: 429, headers: { 'retry-after': '1' } }, 20);
  const kubeconfig = await admin.writeKubeconfig(front.url);
  const kd = runKubediff(['watch', '--kubeconfig', kubeconfig, '-o', 'json', '-n', ns, '-r', 'configmaps'], {
    env: { KUBEDIFF_MAX_BACKOFF: '1s' },
    checkEvents: true,
    timeoutMs: 60_000,
  });
  const [warning] = await kd.waitForStderr(
    /kubediff: warning: configmaps in namespace \S+: 429: answered by the test's API front .*retrying with backoff\./,
  );
  // Said once it had lasted 10 s: after several throttled attempts 1–1.5 s apart, not at the first.
  const before = front.requests.filter((request) => configMapWatch(request) && request.answered).length;
  assert.ok(before >= 5, `${before} throttled WATCHes before the warning`);
  await kd.waitForStderr(/kubediff: configmaps in namespace \S+: watching again\./);
  assert.equal(kd.stderr.split(warning ?? '').length - 1, 1, 'the warning is said once');
  const stopped = await kd.stop('SIGTERM');
  assert.equal(stopped.code, 0, stopped.stderr);
});

test('durations a timer cannot wait for, and a 0 that would switch something off, are usage errors', async () => {
  const kubeconfig = testCluster().kubeconfigPath;
  const cases: [Record<string, string>, string[], string][] = [
    [
      { KUBEDIFF_WATCH_IDLE_TIMEOUT: '0s' },
      [],
      'kubediff: invalid KUBEDIFF_WATCH_IDLE_TIMEOUT="0s": expected a duration longer than 0.\n',
    ],
    [
      { KUBEDIFF_MAX_BACKOFF: '30d' },
      [],
      'kubediff: invalid KUBEDIFF_MAX_BACKOFF="30d": expected at most 24d (2147483647ms, the longest a Node.js timer can wait).\n',
    ],
    [
      {},
      ['--webhook', 'http://127.0.0.1:9/', '--webhook-timeout', '0ms'],
      'kubediff: invalid --webhook-timeout "0ms": expected a duration longer than 0.\n',
    ],
    [
      {},
      ['--leader-elect', '--leader-election-retry-period', '25d'],
      'kubediff: invalid --leader-election-retry-period "25d": expected at most 24d (2147483647ms, the longest a Node.js timer can wait).\n',
    ],
  ];
  for (const [env, args, stderr] of cases) {
    const result = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '-o', 'json', ...args],
      {
        env,
      },
    );
    assert.deepEqual({ code: result.code, stderr: result.stderr }, { code: 2, stderr }, JSON.stringify(env));
  }
});
