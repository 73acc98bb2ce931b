// SIGTERM and SIGINT stop `kubediff watch` cleanly at any moment, the initial sync included (PRODUCT.md,
// "Correctness" 9): exit code 0, the clean-stop line, no stack trace, deliveries finished or reported
// within --shutdown-timeout. In a pod, a stop the process does not honour is a SIGKILL 30 s later.
//
// The first case spawns kubediff directly (not through test/helpers/cli.ts, which reads stdout eagerly):
// its stdout is a pipe nobody reads, so the initial sync pauses for the reader and never ends by itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, test } from 'node:test';
import { startApiFront } from '../helpers/api-front.ts';
import { KUBEDIFF_BIN, killAll, kubediffEnv, runKubediff, watchArgs } from '../helpers/cli.ts';
import { adminClient, waitFor } from '../helpers/kube-admin.ts';

const admin = adminClient();
const STACK_FRAME = /^\s{4}at /m;

afterEach(async () => {
  await killAll();
});

after(async () => {
  await admin.close();
});

test('SIGTERM during an initial sync paused by a stalled stdout reader: exit 0, what was not written is reported', async (t) => {
  const ns = await admin.createNamespace('stop-stalled');
  t.after(() => admin.deleteNamespace(ns));
  const configMaps = `/api/v1/namespaces/${ns}/configmaps`;
  const value = (n: number, version: number) => `${n}:${version}:`.padEnd(200_000, 'x');
  const count = 8;
  for (let n = 0; n < count; n++) {
    await admin.create(configMaps, { metadata: { name: `big-${n}` }, data: { value: value(n, 1) } });
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-stop-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const args = watchArgs(ns, ['configmaps'], '--state', path.join(dir, 'state.db'));

  // A first run records the ConfigMaps; while kubediff is down each of them changes. The next start's
  // initial sync reports those changes, ~400 KB each (from and to): far more than stdout may hold back.
  const first = runKubediff(args);
  await first.waitForStderr(/watching 1 resource type/);
  assert.equal((await first.stop('SIGTERM')).code, 0);
  for (let n = 0; n < count; n++)
    await admin.patch(`${configMaps}/big-${n}`, { data: { value: value(n, 2) } });

  const child = spawn(process.execPath, [KUBEDIFF_BIN, ...args, '--shutdown-timeout', '1s', '--debug'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: kubediffEnv({ KUBEDIFF_LOG_FORMAT: 'text', KUBEDIFF_LIST_PAGE_SIZE: '2' }),
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });

  await waitFor(() => /stdout is not keeping up .*pausing the watch/.test(stderr), {
    timeoutMs: 60_000,
    what: 'the catch-up LIST to pause for stdout',
  });
  assert.match(stderr, /catching up from/);
  assert.doesNotMatch(stderr, /watching \d+ resource type/, 'the initial sync is not over');

  child.kill('SIGTERM');
  await waitFor(() => child.exitCode !== null || child.signalCode !== null, {
    timeoutMs: 30_000,
    what: 'kubediff to exit after SIGTERM',
  });
  assert.equal(child.exitCode, 0, stderr.slice(-2_000));
  assert.match(
    stderr,
    /kubediff: stopping on SIGTERM during the initial sync: delivering what is queued \(at most 1s\), then exiting\.\n/,
  );
  // The reader never read: what stdout still held is reported, not silently dropped.
  assert.match(
    stderr,
    /kubediff: warning: stdout: \d+ events? not delivered \(\d+ events? still queued when the shutdown timeout ran out\)/,
  );
  assert.doesNotMatch(stderr, STACK_FRAME);
  assert.doesNotMatch(stderr, /watching \d+ resource type/);
});

for (const http1Only of [false, true]) {
  const protocol = http1Only ? 'HTTP/1.1 (the fallback)' : 'HTTP/2';
  test(`SIGINT while the API server does not answer the initial discovery, over ${protocol}: exit 0, connection closed, no error`, async (t) => {
    const front = await startApiFront({ http1Only });
    t.after(() => front.close());
    // The server accepted the request and went quiet (an overloaded API server: no answer for 30 s).
    front.answer((request) => request.path === '/apis', { status: 'hang' });
    const kubeconfig = await admin.writeKubeconfig(front.url);
    const kd = runKubediff(['watch', '--kubeconfig', kubeconfig, '-o', 'json'], { timeoutMs: 20_000 });
    await front.waitForRequests((request) => request.path === '/apis', 1);
    assert.deepEqual(
      [...new Set(front.requests.map((request) => request.httpVersion))],
      [http1Only ? '1.1' : '2.0'],
    );

    const stopped = await kd.stop('SIGINT');
    assert.equal(stopped.code, 0, stopped.stderr);
    // Over HTTP/1.1 only (ALPN), kubediff says so once before anything else.
    assert.equal(
      stopped.stderr,
      (http1Only
        ? `kubediff: the API server at ${front.url} does not offer HTTP/2 (ALPN answered http/1.1): using HTTP/1.1, one connection per watch, at most 256 (KUBEDIFF_MAX_CONNECTIONS).\n`
        : '') +
        'kubediff: stopping on SIGINT during the initial sync: delivering what is queued (at most 10s), then exiting.\n',
    );
    assert.equal(stopped.stdout, '');
    await front.waitForIdle(5_000);
  });
}
