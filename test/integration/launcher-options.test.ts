// The launcher (bin/kubediff.js) runs `kubediff watch` with the Node options that keep its memory
// down (bin/node-options.js), in the same process, whichever way it was started; other commands run
// without them; an option the user gave a value of (NODE_OPTIONS) is theirs. Read from the running
// process's own command line, as the kernel sees it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { KUBEDIFF_BIN, killAll, runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { adminClient, type KubeAdmin } from '../helpers/kube-admin.ts';

const READY = /watching \d+ resource types?/;
const nodeOptionsModule = pathToFileURL(KUBEDIFF_BIN.replace(/kubediff\.js$/, 'node-options.js')).href;
const { WATCH_NODE_OPTIONS, missingNodeOptions } = (await import(nodeOptionsModule)) as {
  WATCH_NODE_OPTIONS: string[];
  missingNodeOptions: (args: string[], execArgv: string[], nodeOptions: string | undefined) => string[];
};

let admin: KubeAdmin;
let namespace: string;

before(async () => {
  admin = adminClient();
  namespace = await admin.createNamespace('launcher');
});

after(async () => {
  await killAll();
  await admin.deleteNamespace(namespace).catch(() => {});
  await admin.close();
});

/** The command line of a running process: Node's options, then the script and its arguments. */
function commandLine(pid: number | undefined): string[] {
  assert.ok(pid, 'the process has a pid');
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** Node's own options on that command line: what comes before the launcher. */
function nodeOptionsOf(line: string[]): string[] {
  const script = line.findIndex((word) => word.endsWith('kubediff.js'));
  assert.ok(script > 0, `the launcher in ${line.join(' ')}`);
  return line.slice(1, script);
}

async function watchCommandLine(env: Record<string, string> = {}): Promise<string[]> {
  const kd = runKubediff(
    [
      'watch',
      '--kubeconfig',
      testCluster().kubeconfigPath,
      '-o',
      'json',
      '-r',
      'configmaps',
      '-n',
      namespace,
    ],
    { env, timeoutMs: 30_000 },
  );
  try {
    await kd.waitForStderr(READY, 60_000);
    const line = commandLine(kd.pid);
    // Still the same process: it replaced itself in place, started nothing.
    const result = await kd.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
    return line;
  } finally {
    if (!kd.exitResult) await kd.kill();
  }
}

describe('the launcher', () => {
  it('runs `kubediff watch` with the memory options, in the process it was started as', async () => {
    const options = nodeOptionsOf(await watchCommandLine());
    assert.deepEqual(options, WATCH_NODE_OPTIONS);
    assert.deepEqual(WATCH_NODE_OPTIONS, [
      '--max-semi-space-size=1',
      '--max-opt=2',
      '--no-concurrent-recompilation',
      '--no-concurrent-sparkplug',
    ]);
  });

  it('leaves an option the user set in NODE_OPTIONS to the user', async () => {
    const options = nodeOptionsOf(await watchCommandLine({ NODE_OPTIONS: '--max_semi_space_size=4' }));
    assert.deepEqual(options, ['--max-opt=2', '--no-concurrent-recompilation', '--no-concurrent-sparkplug']);
    // V8's flags that NODE_OPTIONS refuses go on Node's command line, either spelling, on or off.
    assert.deepEqual(missingNodeOptions(['watch'], ['--concurrent-sparkplug'], undefined), [
      '--max-semi-space-size=1',
      '--max-opt=2',
      '--no-concurrent-recompilation',
    ]);
  });

  it('runs other commands as they were started, with no second start of Node', async () => {
    // A module preloaded through NODE_OPTIONS reports, as the process exits, the Node options it ran with.
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-launcher-'));
    try {
      const report = path.join(dir, 'report.mjs');
      await writeFile(
        report,
        "process.on('exit', () => process.stderr.write('node options: ' + JSON.stringify(process.execArgv) + '\\n'));\n",
      );
      const env = { NODE_OPTIONS: `--import ${pathToFileURL(report).href}` };
      const version = await runKubediffToCompletion(['version'], { env });
      assert.equal(version.code, 0, version.stderr);
      assert.match(version.stdout, /^kubediff \d+\.\d+\.\d+ \(node /);
      assert.equal(version.stderr, 'node options: []\n');
      const help = await runKubediffToCompletion(['watch', '--help'], { env });
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^Usage: kubediff watch /);
      assert.equal(help.stderr, 'node options: []\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
