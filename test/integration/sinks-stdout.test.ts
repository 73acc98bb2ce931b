// stdout backpressure against the real API server: when the reader of `kubediff watch -o json | reader`
// stops reading, kubediff stops reading from the API server instead of buffering without bound, and once the
// reader catches up every change arrives, exactly once and in order.
//
// kubediff is spawned directly here (not through test/helpers/cli.ts, which reads stdout eagerly): its stdout
// is a pipe nobody reads until the test decides to.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { KUBEDIFF_BIN, kubediffEnv, watchArgs } from '../helpers/cli.ts';
import type { TestEvent } from '../helpers/events.ts';
import { ADMIN_FIELD_MANAGER, adminClient, type KubeAdmin, waitFor } from '../helpers/kube-admin.ts';

let admin: KubeAdmin;
const namespaces: string[] = [];

before(() => {
  admin = adminClient();
});

after(async () => {
  await Promise.all(namespaces.map((ns) => admin.deleteNamespace(ns)));
  await admin.close();
});

/** A value of about 200 KB that differs for each `n`. */
function bigValue(n: number): string {
  return `${n}:`.padEnd(200_000, String.fromCharCode(97 + (n % 26)));
}

describe('stdout backpressure', () => {
  it('pauses the watch while the stdout reader lags, then delivers every change once, in order', async () => {
    const ns = await admin.createNamespace('sinks-stdout');
    namespaces.push(ns);
    const child = spawn(process.execPath, [KUBEDIFF_BIN, ...watchArgs(ns, ['configmaps'], '--debug')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: kubediffEnv(),
    });
    try {
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        stderr += chunk;
      });
      await waitFor(() => /watching \d+ resource type/.test(stderr), {
        timeoutMs: 60_000,
        what: 'kubediff to start',
      });

      const path = `/api/v1/namespaces/${ns}/configmaps`;
      await admin.create(path, { metadata: { name: 'big' }, data: { value: bigValue(0) } });
      const updates = 10;
      for (let n = 1; n <= updates; n++) await admin.patch(`${path}/big`, { data: { value: bigValue(n) } });

      // Nobody reads stdout: each update is a ~400 KB line, so kubediff must pause long before the last one.
      await waitFor(() => /stdout is not keeping up \(\d+ KiB unwritten\): pausing the watch/.test(stderr), {
        timeoutMs: 30_000,
        what: `kubediff to pause (stderr so far: ${stderr.slice(-500)})`,
      });

      // It paused at about the 1 MiB mark (plus the line that crossed it), not after buffering everything.
      const unwritten = Number(/not keeping up \((\d+) KiB unwritten\)/.exec(stderr)?.[1]);
      assert.ok(unwritten < 2048, `paused with ${unwritten} KiB unwritten`);

      // Now read: every change arrives, once, in order, each diff starting where the previous one ended.
      const events: TestEvent[] = [];
      let pending = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) if (line) events.push(JSON.parse(line) as TestEvent);
      });
      await waitFor(() => events.filter((e) => e.type === 'UPDATED').length >= updates, {
        timeoutMs: 30_000,
        what: `${updates} UPDATED events (got ${events.length} events)`,
      });
      const big = events.filter((e) => e.object.name === 'big');
      assert.deepEqual(
        big.map((e) => e.type),
        ['ADDED', ...Array(updates).fill('UPDATED')],
      );
      assert.equal(new Set(big.map((e) => e.id)).size, big.length, 'no duplicates');
      big.slice(1).forEach((event, i) => {
        assert.deepEqual(event.changes, [
          {
            op: 'replace',
            path: '/data/value',
            from: bigValue(i),
            to: bigValue(i + 1),
            manager: ADMIN_FIELD_MANAGER,
          },
        ]);
      });

      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) =>
        child.once('exit', (exitCode) => resolve(exitCode)),
      );
      assert.equal(code, 0, stderr.slice(-2000));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
