// stderr closed under a running watch: kubediff's log reader went away (`kubediff watch 2>&1 | head -3`,
// or stderr's pipe alone closed). Like a closed stdout, that is not a crash (an uncaught EPIPE, exit 1,
// skipping the drain, the state flush and the Lease release): the watch stops as it does on SIGTERM,
// with the webhook's delivery in flight finished, the event recorded in the state file, the Lease
// released, and exit code 0. Real processes with real pipes, the real API server, a loopback receiver.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KUBEDIFF_BIN, kubediffEnv, runKubediffToCompletion } from '../helpers/cli.ts';
import { HttpReceiver } from '../helpers/http-receiver.ts';
import { adminClient, type KubeObject, uniqueName, waitFor } from '../helpers/kube-admin.ts';

const admin = adminClient();

describe('stderr closed while watching', () => {
  let dir: string;
  let namespace: string;
  let kubeconfig: string;
  let receiver: HttpReceiver;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubediff-stderr-'));
    namespace = await admin.createNamespace('stderr');
    kubeconfig = await admin.writeKubeconfig();
    // Slow answers: a delivery is still in flight when the watch stops.
    receiver = await HttpReceiver.start({ defaultReply: { status: 200, delayMs: 500 } });
  });
  after(async () => {
    await receiver?.close();
    await admin.deleteNamespace(namespace).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  const watchArgs = (state: string, lease: string) => [
    'watch',
    '--kubeconfig',
    kubeconfig,
    '-n',
    namespace,
    '-r',
    'configmaps',
    '-o',
    'json',
    // A log line for every event: the write that finds stderr closed.
    '--explain',
    '--state',
    state,
    '--webhook',
    receiver.url('/hook'),
    '--leader-elect',
    '--leader-election-namespace',
    namespace,
    '--leader-election-id',
    lease,
  ];

  const leaseHolder = async (lease: string) =>
    (
      (await admin.get(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${lease}`,
      )) as KubeObject & {
        spec: { holderIdentity?: string };
      }
    ).spec.holderIdentity;

  test('stderr alone: the watch stops as on SIGTERM, delivers, records, releases the Lease, exits 0', async () => {
    const state = join(dir, 'alone.db');
    const lease = uniqueName('stderr-alone');
    const child = spawn(process.execPath, [KUBEDIFF_BIN, ...watchArgs(state, lease)], {
      env: kubediffEnv({ KUBEDIFF_LOG_FORMAT: 'text' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    try {
      await waitFor(() => /became the leader/.test(stderr) && /watching 1 resource type/.test(stderr), {
        what: `kubediff leading and watching; stderr so far: ${stderr}`,
      });
      // The reader goes away: the next log line meets a closed pipe.
      child.stderr.destroy();
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'after-stderr' },
      });
      const [code, signal] = await exited;
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, `stdout: ${stdout}`);
      // The event was written to stdout, delivered to the webhook before the exit, and recorded.
      assert.match(stdout, /"name":"after-stderr"/);
      assert.ok(
        receiver.requests.some((request) => request.body.includes('"after-stderr"')),
        'the webhook received the event before kubediff exited',
      );
      assert.equal(await leaseHolder(lease), '', 'the Lease was released (its holder cleared)');
      const history = await runKubediffToCompletion(['history', '--state', state, '-o', 'json']);
      assert.equal(history.code, 0, history.stderr);
      assert.match(history.stdout, /"type":"ADDED".*"name":"after-stderr"/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  test('`kubediff watch 2>&1 | head -3`: exit 0, and the Lease released', async () => {
    const state = join(dir, 'head.db');
    const statusFile = join(dir, 'head.status');
    const lease = uniqueName('stderr-head');
    const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
    const command = [process.execPath, KUBEDIFF_BIN, ...watchArgs(state, lease)].map(quote).join(' ');
    // The subshell writes kubediff's own exit status (a pipeline's status is head's). Once head has
    // left, its side closes the pipe for good (nothing else holds it) and says so on stderr: kubediff
    // finds the pipe closed at its next write, whenever head left among its start-up lines.
    const reader = `{ head -3; exec 0<&-; echo head-left >&2; }`;
    const shell = spawn('sh', ['-c', `( ${command} 2>&1; echo $? > ${quote(statusFile)} ) | ${reader}`], {
      env: kubediffEnv({ KUBEDIFF_LOG_FORMAT: 'text' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(shell, 'exit') as Promise<[number | null]>;
    let shown = '';
    let said = '';
    shell.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      shown += chunk;
    });
    shell.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      said += chunk;
    });
    await waitFor(() => said.includes('head-left'), { what: `head to leave; it saw:\n${shown}` });
    // Something to write after head left: an event (stdout), with its --explain line (stderr).
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'after-head' },
    });
    const [shellCode] = await exited;
    assert.equal(shellCode, 0);
    assert.equal(shown.split('\n').filter(Boolean).length, 3, shown);
    assert.equal(
      (await readFile(statusFile, 'utf8')).trim(),
      '0',
      `kubediff's exit status; head saw:\n${shown}`,
    );
    // Whether it had become the leader by the time head left: no Lease is left held.
    const holder = await leaseHolder(lease).catch(() => undefined);
    assert.ok(!holder, `no Lease left held: ${holder}`);
  });
});
