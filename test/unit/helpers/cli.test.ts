import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KUBEDIFF_BIN, killAll, runKubediff, runKubediffToCompletion } from '../../helpers/cli.ts';
import { assertEvent, changeAt, contractViolations, describeEvent, matching } from '../../helpers/events.ts';

// A stand-in for the CLI. Modes (first argument):
//   watch      prints event 1, then "ready" on stderr; SIGUSR2 prints the next event; SIGINT exits 0.
//   garbage    like watch, but prints a plain-text line after event 1.
//   stubborn   like watch, but ignores SIGINT.
//   invalid    like watch, but event 1 breaks the contract (no uid in its id).
//   fail       prints an error on stderr and exits 2.
//   partial    prints an event without a trailing newline and exits 0.
//   env        prints {"value": $KD_TEST_VALUE, "testContext": $NODE_TEST_CONTEXT} and exits 0.
const FIXTURE = `
const mode = process.argv[2] ?? 'watch';
let n = 0;
const event = (valid = true) => {
  n++;
  const uid = 'uid-' + n;
  return JSON.stringify({
    id: valid ? uid + ':' + n : String(n),
    type: n === 1 ? 'ADDED' : 'UPDATED',
    time: new Date().toISOString(),
    object: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespace: 'default',
              name: 'cm-' + n, uid, resourceVersion: String(n) },
    ...(n === 1 ? {} : { changes: [{ op: 'replace', path: '/data/n', from: String(n - 1), to: String(n) }] }),
  }) + '\\n';
};
if (mode === 'fail') {
  process.stderr.write('kubediff: unknown option --bogus; run kubediff watch --help\\n');
  process.exit(2);
}
if (mode === 'partial') {
  process.stdout.write(event().trimEnd());
  process.exit(0);
}
if (mode === 'env') {
  process.stdout.write(JSON.stringify({ value: process.env.KD_TEST_VALUE, testContext: process.env.NODE_TEST_CONTEXT ?? null }) + '\\n');
  process.exit(0);
}
process.stdout.write(event(mode !== 'invalid'));
if (mode === 'garbage') process.stdout.write('Starting watch on 3 resources\\n');
process.on('SIGUSR2', () => process.stdout.write(event()));
process.on('SIGINT', () => {
  if (mode === 'stubborn') return;
  process.stderr.write('kubediff: stopping\\n');
  process.exit(0);
});
setInterval(() => {}, 60_000);
process.stderr.write('kubediff: watching 2 resources, ready\\n');
`;

let dir: string;
let script: string;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-cli-helper-'));
  script = path.join(dir, 'fake-kubediff.mjs');
  await writeFile(script, FIXTURE);
});

after(async () => {
  await killAll();
  await rm(dir, { recursive: true, force: true });
});

describe('runKubediff', () => {
  test('awaits events already received and events still to come, then stops cleanly', async () => {
    const kd = runKubediff(['watch'], { script, timeoutMs: 5000 });
    await kd.waitForStderr('ready');
    const first = await kd.waitForEvent(matching({ type: 'ADDED', name: 'cm-1' }), {
      description: 'cm-1 added',
    });
    assert.equal(first.id, 'uid-1:1');
    assert.deepEqual(contractViolations(first), []);

    const mark = kd.events.length;
    assert.ok(kd.pid !== undefined);
    process.kill(kd.pid, 'SIGUSR2');
    const second = await kd.waitForEvent((e) => e.type === 'UPDATED', {
      since: mark,
      description: 'an update',
    });
    assert.equal(second.object.name, 'cm-2');
    assert.deepEqual(changeAt(second, '/data/n'), { op: 'replace', path: '/data/n', from: '1', to: '2' });
    assert.match(describeEvent(second), /^UPDATED v1 ConfigMap default\/cm-2 rv=2 \[replace \/data\/n\]$/);

    const match = await kd.waitForStderr(/watching (\d+) resources/);
    assert.equal(match[1], '2');

    const result = await kd.stop();
    assert.equal(result.code, 0);
    assert.equal(result.signal, null);
    assert.match(result.stderr, /kubediff: stopping/);
    assert.equal(kd.stdoutLines.length, 2);
    assert.equal(result.stdout.split('\n').filter(Boolean).length, 2);
    assert.equal(kd.exitResult, result);
    // Stopping an exited process returns its result again.
    assert.equal(await kd.stop(), result);
  });

  test('a timeout names what was awaited, the events seen and the stderr tail', async () => {
    const kd = runKubediff(['watch'], { script });
    await kd.waitForStderr('ready');
    await assert.rejects(
      kd.waitForEvent(matching({ type: 'DELETED' }), { timeoutMs: 100, description: 'cm-1 deleted' }),
      (error: Error) => {
        assert.match(error.message, /timed out after 100 ms waiting for cm-1 deleted/);
        assert.match(error.message, /events seen \(1\):\n {4}#0 ADDED v1 ConfigMap default\/cm-1 rv=1/);
        assert.match(error.message, /stderr tail:\n {4}kubediff: watching 2 resources, ready/);
        assert.match(error.message, /command: kubediff watch \(still running\)/);
        return true;
      },
    );
    await assert.rejects(kd.waitForStderr('never printed', 50), /timed out after 50 ms waiting for stderr/);
    assert.equal((await kd.stop()).code, 0);
  });

  test('a stdout line that is not JSON fails every wait, naming the line', async () => {
    const kd = runKubediff(['garbage'], { script });
    await kd.waitForStderr('ready');
    await assert.rejects(
      kd.waitForEvent(matching({ name: 'cm-1' }), { description: 'cm-1' }),
      /waiting for cm-1: stdout line 2 is not JSON \(stdout must be JSON lines only\): "Starting watch on 3 resources"/,
    );
    await assert.rejects(
      kd.expectNoEvent(() => true, 50),
      /stdout line 2 is not JSON/,
    );
    assert.deepEqual(kd.stdoutLines, [kd.stdoutLines[0], 'Starting watch on 3 resources']);
    assert.equal(kd.events.length, 1);
    await kd.stop();
  });

  test('checkEvents fails waits on an event that breaks the contract', async () => {
    const kd = runKubediff(['invalid'], { script, checkEvents: true });
    await assert.rejects(
      kd.waitForEvent(() => true),
      /stdout line 1 breaks the event contract \(id "1" is not "uid:resourceVersion"\)/,
    );
    await kd.stop();
  });

  test('expectNoEvent passes over a quiet window and fails as soon as a match arrives', async () => {
    const kd = runKubediff(['watch'], { script });
    await kd.waitForStderr('ready');
    // Event 1 arrived before the call, so it is not considered...
    await kd.expectNoEvent(matching({ type: 'ADDED' }), 100);
    // ...unless asked for.
    await assert.rejects(
      kd.expectNoEvent(matching({ type: 'ADDED' }), 100, { since: 0, description: 'addition' }),
      /expected no addition for 100 ms, got #0: ADDED v1 ConfigMap default\/cm-1/,
    );
    assert.ok(kd.pid !== undefined);
    const quiet = kd.expectNoEvent(matching({ type: 'UPDATED' }), 10_000, { description: 'update' });
    process.kill(kd.pid, 'SIGUSR2');
    await assert.rejects(quiet, /expected no update for 10000 ms, got #1: UPDATED/);
    await kd.stop();
  });

  test('a wait fails at once when the process exits first', async () => {
    const kd = runKubediff(['fail'], { script });
    await assert.rejects(
      kd.waitForEvent(() => true, { description: 'anything' }),
      /waiting for anything: kubediff exited with code 2 first[\s\S]*unknown option --bogus/,
    );
  });

  test('a predicate that throws rejects the wait instead of crashing the test process', async () => {
    const kd = runKubediff(['watch'], { script });
    await kd.waitForStderr('ready');
    await assert.rejects(
      kd.waitForEvent(
        () => {
          throw new Error('boom');
        },
        { description: 'x' },
      ),
      /waiting for x: the predicate threw: boom/,
    );
    await kd.stop();
  });

  test('stop kills a process that ignores the signal and says so', async () => {
    const kd = runKubediff(['stubborn'], { script });
    await kd.waitForStderr('ready');
    await assert.rejects(kd.stop('SIGINT', 200), /kubediff did not exit within 200 ms of SIGINT; killed it/);
    assert.equal(kd.exitResult?.signal, 'SIGKILL');
  });

  test('killAll ends every process still running', async () => {
    const a = runKubediff(['stubborn'], { script });
    const b = runKubediff(['watch'], { script });
    await Promise.all([a.waitForStderr('ready'), b.waitForStderr('ready')]);
    await killAll();
    assert.equal(a.exitResult?.signal, 'SIGKILL');
    assert.equal(b.exitResult?.signal, 'SIGKILL');
  });
});

describe('runKubediffToCompletion', () => {
  test('returns the exit code, stdout and stderr', async () => {
    const result = await runKubediffToCompletion(['fail'], { script });
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, 'kubediff: unknown option --bogus; run kubediff watch --help\n');
  });

  test('reads a last line without a newline', async () => {
    const kd = runKubediff(['partial'], { script });
    const event = await kd.waitForEvent(matching({ name: 'cm-1' }));
    assertEvent(event);
    assert.equal((await kd.waitForExit()).code, 0);
  });

  test('passes the environment, minus the test runner context', async () => {
    const kd = runKubediff(['env'], { script, env: { KD_TEST_VALUE: 'hello' } });
    const result = await kd.waitForExit();
    assert.equal(result.code, 0);
    assert.deepEqual(JSON.parse(result.stdout), { value: 'hello', testContext: null });
  });

  test('kills a command that outlives its timeout', async () => {
    await assert.rejects(
      runKubediffToCompletion(['stubborn'], { script, timeoutMs: 200 }),
      /timed out after 200 ms waiting for kubediff to exit/,
    );
  });

  test('runs bin/kubediff.js by default', () => {
    assert.equal(KUBEDIFF_BIN, path.resolve(import.meta.dirname, '../../../bin/kubediff.js'));
    assert.ok(existsSync(KUBEDIFF_BIN));
  });
});

describe('event contract check', () => {
  const valid = {
    id: 'u:7',
    type: 'UPDATED',
    time: '2026-11-22T10:31:07.412Z',
    object: { apiVersion: 'v1', kind: 'Node', resource: 'nodes', name: 'n1', uid: 'u', resourceVersion: '7' },
    changes: [
      { op: 'add', path: '/metadata/labels/a~1b', to: 'x' },
      { op: 'remove', path: '/spec/taints/0', from: { key: 'k' } },
    ],
  };

  test('accepts a valid event', () => {
    assert.deepEqual(contractViolations(valid), []);
    assert.deepEqual(
      contractViolations({ ...valid, type: 'DELETED', changes: undefined, offline: true }),
      [],
    );
  });

  test('names every violation', () => {
    const problems = contractViolations({
      ...valid,
      id: 'u',
      extra: 1,
      changes: [{ op: 'add', path: 'spec/x', from: 1, to: 2 }],
      finalStateUnknown: true,
      object: { ...valid.object, namespace: '' },
    });
    assert.deepEqual(problems, [
      'unknown field "extra"',
      'finalStateUnknown belongs only on an offline DELETED event',
      'object.namespace, when present, must be a non-empty string (absent for cluster-scoped objects)',
      'id "u" is not "uid:resourceVersion"',
      'changes[0].path "spec/x" is not an RFC 6901 JSON Pointer',
      'changes[0]: "from" must be absent for op add',
    ]);
    assert.throws(
      () => assertEvent({ ...valid, changes: [] }),
      /an UPDATED event needs a non-empty changes list/,
    );
  });
});
