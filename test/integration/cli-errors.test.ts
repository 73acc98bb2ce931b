// The CLI as a user meets it when something is wrong: the exit code the brief promises (0 clean stop, 2 usage or
// configuration, 1 anything else) and one clear line on stderr, "kubediff: …", naming what failed and where, with
// no stack trace unless --debug. Every case spawns the real bin/kubediff.js; the ones that talk to a cluster use
// the real test API server (or a kubeconfig for it that is wrong in exactly one way).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rootCertificates } from 'node:tls';
import {
  type ExitResult,
  KUBEDIFF_BIN,
  killAll,
  runKubediff,
  runKubediffToCompletion,
} from '../helpers/cli.ts';
import { testCluster } from '../helpers/cluster-env.ts';
import { writeKubeconfigFile } from '../helpers/kube-admin.ts';
import { freePorts } from '../helpers/processes.ts';

const STACK_FRAME = /^\s{4}at /m;

let dir: string;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kubediff-cli-errors-'));
});

after(async () => {
  await killAll();
  await rm(dir, { recursive: true, force: true });
});

/** A context for failure messages: what kubediff printed. */
function shown(result: ExitResult): string {
  return `exit ${result.code ?? result.signal}\n  stdout: ${JSON.stringify(result.stdout)}\n  stderr: ${JSON.stringify(result.stderr)}`;
}

/**
 * Asserts the error contract: exit `code`, nothing on stdout, exactly one line on stderr that starts with
 * "kubediff: ", carries no stack frame, and matches every pattern. Returns that line.
 */
function assertOneLineError(result: ExitResult, code: number, ...patterns: RegExp[]): string {
  assert.equal(result.code, code, `expected exit code ${code}; got ${shown(result)}`);
  assert.equal(result.stdout, '', `stdout must stay empty on an error; got ${shown(result)}`);
  assert.ok(result.stderr.endsWith('\n'), `stderr must end with a newline; got ${shown(result)}`);
  const lines = result.stderr.slice(0, -1).split('\n');
  assert.equal(lines.length, 1, `the error must be one line; got ${shown(result)}`);
  const line = lines[0]!;
  assert.match(line, /^kubediff: \S/, `the error must start with "kubediff: "; got ${shown(result)}`);
  assert.doesNotMatch(result.stderr, STACK_FRAME, `no stack trace without --debug; got ${shown(result)}`);
  assert.doesNotMatch(line, /\.\s+[A-Z]/, `the error should be one sentence; got ${shown(result)}`);
  for (const pattern of patterns) assert.match(line, pattern, `got ${shown(result)}`);
  return line;
}

async function writeInDir(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text, { mode: 0o600 });
  return file;
}

/** A 127.0.0.1 port that nothing listens on (bound once, then let go). */
async function closedPort(): Promise<number> {
  const [port] = (await freePorts(1)) as [number];
  return port;
}

/** The PEM of a CA that did not sign the API server's certificate: a fresh self-signed one, else a public root. */
function anotherCaPem(): string {
  try {
    const keyFile = path.join(dir, 'other-ca.key');
    const certFile = path.join(dir, 'other-ca.crt');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '1',
        '-subj',
        '/CN=kubediff-test-other-ca',
      ],
      { stdio: 'ignore' },
    );
    return execFileSync('openssl', ['x509', '-in', certFile], { encoding: 'utf8' });
  } catch {
    // No openssl here: any CA Node ships with is just as foreign to the test cluster.
    const pem = rootCertificates[0];
    assert.ok(pem, 'no openssl and no bundled root certificate to use as a foreign CA');
    return pem;
  }
}

describe('commands that succeed without a cluster', () => {
  test('`version` prints the version and exits 0', async () => {
    const packageJson = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as {
      version: string;
    };
    const result = await runKubediffToCompletion(['version']);
    assert.equal(result.code, 0, shown(result));
    assert.match(result.stdout, new RegExp(`^kubediff ${packageJson.version.replace(/\./g, '\\.')}\\b`));
    assert.equal(result.stderr, '');
  });

  test('--help and `watch --help` print usage on stdout and exit 0', async () => {
    const top = await runKubediffToCompletion(['--help']);
    assert.equal(top.code, 0, shown(top));
    assert.match(top.stdout, /^Usage: kubediff/m);
    assert.match(top.stdout, /\bwatch\b/);
    assert.match(top.stdout, /\bresources\b/);

    const watch = await runKubediffToCompletion(['watch', '--help']);
    assert.equal(watch.code, 0, shown(watch));
    assert.match(watch.stdout, /^Usage: kubediff watch/m);
    for (const flag of ['--kubeconfig', '--context', '--namespace', '--resource', '--selector', '--output']) {
      assert.ok(watch.stdout.includes(flag), `watch --help should document ${flag}; got ${shown(watch)}`);
    }
  });
});

describe('usage errors exit 2 and name the culprit', () => {
  test('an unknown flag', async () => {
    const result = await runKubediffToCompletion(['watch', '--bogus']);
    assertOneLineError(result, 2, /unknown option '--bogus'/, /kubediff --help/);
  });

  test('an unknown command', async () => {
    const result = await runKubediffToCompletion(['frobnicate']);
    assertOneLineError(result, 2, /unknown command 'frobnicate'/);
  });

  test('a bad --events value', async () => {
    const result = await runKubediffToCompletion(['watch', '--events', 'added,renamed']);
    assertOneLineError(result, 2, /--events/, /"renamed"/, /added, updated, deleted/);
  });

  test('a bad --selector', async () => {
    const result = await runKubediffToCompletion(['watch', '--selector', 'app in (web']);
    assertOneLineError(result, 2, /--selector/, /app in \(web/);
  });

  test('a bad --ignore path', async () => {
    const result = await runKubediffToCompletion(['watch', '--ignore', 'spec.replicas']);
    assertOneLineError(result, 2, /--ignore/, /spec\.replicas/, /JSON Pointer/);
  });

  test('a bad --output format, for watch and for resources', async () => {
    const watch = await runKubediffToCompletion(['watch', '-o', 'yaml']);
    assertOneLineError(watch, 2, /--output/, /'yaml'/, /json, pretty/);
    const resources = await runKubediffToCompletion(['resources', '--output', 'yaml']);
    assertOneLineError(resources, 2, /--output/, /'yaml'/, /table, json/);
  });

  test('a bad --namespace name', async () => {
    const result = await runKubediffToCompletion(['watch', '-n', 'Not_A_Namespace']);
    assertOneLineError(result, 2, /--namespace/, /"Not_A_Namespace"/);
  });

  test('memory bounds set past the heap (docs/deploy.md, "Memory"), before anything connects', async () => {
    const result = await runKubediffToCompletion(['watch', '--leader-elect'], {
      env: { NODE_OPTIONS: '--max-old-space-size=256', KUBEDIFF_STANDBY_MAX_BUFFER: '512MB' },
    });
    assertOneLineError(
      result,
      2,
      /^kubediff: the memory bounds add up to \d+ MiB, more than the 259 MiB heap Node may use \(KUBEDIFF_STANDBY_MAX_BUFFER 512 MiB\)/,
      /NODE_OPTIONS=--max-old-space-size=<MiB>/,
    );
  });
});

describe('kubeconfig errors exit 2 and name the file', () => {
  test('--kubeconfig pointing at a file that does not exist', async () => {
    const missing = path.join(dir, 'no-such-kubeconfig');
    const result = await runKubediffToCompletion(['watch', '--kubeconfig', missing]);
    assertOneLineError(
      result,
      2,
      new RegExp(`${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      /not exist/,
    );
  });

  test('a kubeconfig that is not YAML', async () => {
    const file = await writeInDir('broken-kubeconfig', 'apiVersion: v1\nclusters: [ {{ name: x\n\t- : :\n');
    const result = await runKubediffToCompletion(['watch', '--kubeconfig', file]);
    const line = assertOneLineError(
      result,
      2,
      /cannot read kubeconfig/,
      new RegExp(path.basename(file)),
      /line 3/,
    );
    // The parser's code frame (a copy of the line and a caret) is noise in a one-sentence error.
    assert.doesNotMatch(line, /\^/, `the YAML parser's code frame should not be in the message: ${line}`);
  });

  test('a broken kubeconfig never shows its credentials, with or without --debug, in either log format', async () => {
    const TOKEN = 'kd-secret-token-7f3a9c1e';
    const KEY = Buffer.from('-----BEGIN PRIVATE KEY-----secret-key-bytes').toString('base64');
    const user = ['users:', '- name: u', '  user:', `    token: ${TOKEN}`, `    client-key-data: ${KEY}`];
    const tail = ['contexts:', '- context: {cluster: c, user: u}', '  name: x', 'current-context: x'];
    const head = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster: {server: "https://127.0.0.1:1"}',
      '  name: c',
    ];
    // The YAML error just after the credentials (its code frame shows the lines around it), on the
    // token's own line, and inside a quoted token.
    const variants = {
      after: [...head, ...user, '    extra: [unclosed', ...tail],
      'on the token line': [...head, ...user.slice(0, 3), `    token: ${TOKEN}: oops`, user[4], ...tail],
      'in a quoted token': [...head, ...user.slice(0, 3), `    token: "${TOKEN}`, user[4], ...tail],
    };
    const config = await writeInDir('uses-kubeconfig.yaml', 'output: json\n');
    const files: Record<string, string> = {};
    for (const [where, lines] of Object.entries(variants)) {
      files[where] = await writeInDir(
        `leaky-kubeconfig-${where.replaceAll(' ', '-')}`,
        `${lines.join('\n')}\n`,
      );
    }
    const runs: { where: string; args: string[]; format: string }[] = [
      ...Object.keys(variants).map((where) => ({ where, args: ['watch', '--debug'], format: 'text' })),
      { where: 'after', args: ['watch'], format: 'text' },
      { where: 'after', args: ['watch', '--debug'], format: 'json' },
      { where: 'after', args: ['resources', '--debug'], format: 'text' },
      { where: 'after', args: ['validate', '-c', config, '--cluster', '--debug'], format: 'text' },
    ];
    for (const { where, args, format } of runs) {
      const result = await runKubediffToCompletion([...args, '--kubeconfig', files[where] ?? ''], {
        env: { KUBEDIFF_LOG_FORMAT: format },
      });
      const what = `${where}: kubediff ${args.join(' ')} (${format} logs): ${shown(result)}`;
      assert.equal(result.code, 2, what);
      assert.match(result.stderr, /^kubediff: cannot read kubeconfig /, what);
      for (const secret of [TOKEN, KEY, KEY.slice(0, 24)]) {
        assert.ok(!result.stderr.includes(secret) && !result.stdout.includes(secret), what);
      }
      // --debug still says where the error came from.
      if (args.includes('--debug')) assert.match(result.stderr, STACK_FRAME, what);
    }
  });

  test('a broken kubeconfig with --debug: the stack trace, but never the credentials around the mistake', async () => {
    const token = 'kubeconfig-token-s3cr3t-4f2a';
    const file = await writeInDir(
      'broken-kubeconfig-with-token',
      `apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: ${token}\n  bad: : :\n`,
    );
    for (const command of ['watch', 'resources']) {
      const result = await runKubediffToCompletion([command, '--kubeconfig', file, '--debug']);
      assert.equal(result.code, 2, shown(result));
      assert.match(result.stderr, /^kubediff: cannot read kubeconfig .*line 7, column 8; fix the file/);
      assert.match(result.stderr, STACK_FRAME, `--debug prints the stack; got ${shown(result)}`);
      assert.ok(!result.stderr.includes(token), `the token must not be printed; got ${shown(result)}`);
      assert.ok(!result.stderr.includes('bad: : :'), `no line of the file is printed; got ${shown(result)}`);
    }
  });

  test('a YAML file that is not a kubeconfig', async () => {
    const file = await writeInDir('not-a-kubeconfig.yaml', 'just: a\nshopping: list\n');
    const result = await runKubediffToCompletion(['resources', '--kubeconfig', file]);
    assertOneLineError(result, 2, new RegExp(path.basename(file)), /no contexts/, /not a usable kubeconfig/);
  });

  test('an unknown --context lists the contexts the kubeconfig has', async () => {
    const cluster = testCluster();
    const result = await runKubediffToCompletion([
      'watch',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--context',
      'no-such-context',
    ]);
    assertOneLineError(result, 2, /context "no-such-context"/, /known contexts: \S/, /kubediff-test/);
  });
});

describe('cluster connection errors exit 1 and say what to check', () => {
  test('an unreachable server: connection refused, with the address', async () => {
    const port = await closedPort();
    const kubeconfig = await writeKubeconfigFile(testCluster(), `https://127.0.0.1:${port}`, {
      path: path.join(dir, 'refused-kubeconfig'),
    });
    const result = await runKubediffToCompletion(['watch', '--kubeconfig', kubeconfig, '-o', 'json'], {
      timeoutMs: 30_000,
    });
    assertOneLineError(result, 1, /connection refused/, new RegExp(`127\\.0\\.0\\.1:${port}`), /context "/);
  });

  test('the same failure with --debug: the sentence first, then the stack trace', async () => {
    const port = await closedPort();
    const kubeconfig = await writeKubeconfigFile(testCluster(), `https://127.0.0.1:${port}`, {
      path: path.join(dir, 'refused-debug-kubeconfig'),
    });
    const result = await runKubediffToCompletion(
      ['watch', '--kubeconfig', kubeconfig, '--debug', '-o', 'json'],
      {
        timeoutMs: 30_000,
      },
    );
    assert.equal(result.code, 1, shown(result));
    const [first] = result.stderr.split('\n');
    assert.match(
      first ?? '',
      /^kubediff: cannot reach the API server at .*connection refused/,
      shown(result),
    );
    assert.match(result.stderr, STACK_FRAME, `--debug should add the stack trace; got ${shown(result)}`);
  });

  test('a server certificate the kubeconfig CA does not trust: a TLS error', async () => {
    const cluster = testCluster();
    if (!cluster.caPem) return; // an existing cluster without a CA in its kubeconfig: nothing to swap
    const kubeconfig = await writeKubeconfigFile({ ...cluster, caPem: anotherCaPem() }, cluster.server, {
      path: path.join(dir, 'wrong-ca-kubeconfig'),
    });
    const result = await runKubediffToCompletion(['watch', '--kubeconfig', kubeconfig, '-o', 'json'], {
      timeoutMs: 30_000,
    });
    const address = new URL(cluster.server).host.replace(/\./g, '\\.');
    assertOneLineError(result, 1, /TLS/, /certificate/, new RegExp(address));
  });

  test('rejected credentials (401): says they were rejected or expired', async () => {
    const cluster = testCluster();
    const kubeconfig = await writeKubeconfigFile(cluster, cluster.server, {
      token: 'kubediff-test-token-that-the-server-does-not-know',
      path: path.join(dir, 'bad-token-kubeconfig'),
    });
    for (const command of ['watch', 'resources']) {
      const result = await runKubediffToCompletion([command, '--kubeconfig', kubeconfig], {
        timeoutMs: 30_000,
      });
      assertOneLineError(result, 1, /rejected the credentials/, /401/, /expired/);
    }
  });
});

describe('resource names', () => {
  test('a misspelt -r name exits 2 with a "did you mean"', async () => {
    const result = await runKubediffToCompletion(
      ['watch', '--kubeconfig', testCluster().kubeconfigPath, '-r', 'deploymnets', '-o', 'json'],
      { timeoutMs: 30_000 },
    );
    assertOneLineError(result, 2, /"deploymnets"/, /did you mean deployments\.apps\?/, /kubediff resources/);
  });

  test('-r naming a CRD that is not installed yet warns and keeps watching; SIGINT stops it with 0', async () => {
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        testCluster().kubeconfigPath,
        '-r',
        'widgets.not-installed.example.com',
        '-o',
        'json',
      ],
      { timeoutMs: 30_000 },
    );
    await kd.waitForStderr(/warning: --resource widgets\.not-installed\.example\.com: not served yet/);
    await kd.waitForStderr(/kubediff: watching 0 resource types on /);
    const result = await kd.stop('SIGINT');
    assert.equal(result.code, 0, shown(result));
    assert.equal(result.stdout, '');
    assert.doesNotMatch(result.stderr, STACK_FRAME, shown(result));
  });
});

describe('a reader that goes away (`kubediff … | head`)', () => {
  /** Runs kubediff with its stdout pipe closed by the reader before anything is written: every write is EPIPE. */
  function runWithClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [KUBEDIFF_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    return new Promise((resolve) => {
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  for (const args of [['version'], ['--help'], ['resources', '-o', 'json']]) {
    test(`\`kubediff ${args.join(' ')}\` exits 0 without a stack trace`, async () => {
      const withCluster = args[0] === 'resources' ? ['--kubeconfig', testCluster().kubeconfigPath] : [];
      const result = await runWithClosedStdout([...args, ...withCluster]);
      assert.equal(result.code, 0, `exit ${result.code}; stderr: ${JSON.stringify(result.stderr)}`);
      assert.equal(result.stderr, '');
    });
  }
});
