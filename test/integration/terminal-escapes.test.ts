// Nothing from the cluster reaches a terminal as itself. A ConfigMap whose value and annotation hold
// C0 and C1 controls (ESC, U+009B), bidi overrides (U+202E, U+2066), a zero-width space and a
// no-break space, a context name and a cluster name holding a bidi override: pretty events on stdout,
// `kubediff history` pretty, and text log lines show every one of them as a visible escape (\u202e), and
// not one of them raw.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { runKubediff, runKubediffToCompletion } from '../helpers/cli.ts';
import { adminClient, uniqueName } from '../helpers/kube-admin.ts';

const admin = adminClient();

/** What a terminal acts on or hides; a line break is the only control character allowed through. */
const RAW_UNSAFE =
  /[^\P{Cc}\n]|[\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}\u00a0\u2000-\u200a]/u;
const HOSTILE = 'a\u001b]0;owned\u0007b\u009b31mc\u202eevil\u2066d\u2069e\u200bf\u00a0g';

function assertPrintable(text: string, what: string): void {
  const found = RAW_UNSAFE.exec(text);
  assert.equal(
    found,
    null,
    `${what} holds U+${found?.[0].codePointAt(0)?.toString(16).padStart(4, '0')} raw:\n${JSON.stringify(text)}`,
  );
}

describe('human-readable outputs escape what a terminal would act on or hide', () => {
  let namespace: string;
  let kubeconfig: string;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubediff-escapes-'));
    namespace = await admin.createNamespace('escapes');
    // A context name is anyone's choice, and kubediff prints it.
    const config = parse(await readFile(await admin.writeKubeconfig(), 'utf8')) as {
      contexts: { name: string }[];
      'current-context': string;
    };
    const context = 'test\u202etxet';
    for (const entry of config.contexts) if (entry.name === config['current-context']) entry.name = context;
    config['current-context'] = context;
    kubeconfig = await admin.writeKubeconfig();
    await writeFile(kubeconfig, stringify(config), { mode: 0o600 });
  });
  after(async () => {
    await admin.deleteNamespace(namespace).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  test('pretty events, history and text log lines', async () => {
    const state = join(dir, 'escapes.db');
    const kd = runKubediff(
      [
        'watch',
        '--kubeconfig',
        kubeconfig,
        '-n',
        namespace,
        '-r',
        'configmaps',
        '-o',
        'pretty',
        '--explain',
        '--state',
        state,
        '--cluster-name',
        'prod\u202eue',
      ],
      { env: { KUBEDIFF_LOG_FORMAT: 'text' }, timeoutMs: 60_000 },
    );
    try {
      await kd.waitForStderr(/watching 1 resource type/);
      const name = uniqueName('hostile');
      const path = `/api/v1/namespaces/${namespace}/configmaps`;
      await admin.create(path, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, annotations: { note: HOSTILE } },
        data: { value: 'plain' },
      });
      await admin.patch(`${path}/${name}`, { data: { value: HOSTILE } });
      // --explain says what happened to the update (after which it is written to stdout).
      await kd.waitForStderr(new RegExp(`explain: UPDATED configmaps ${namespace}/${name} .* → stdout`));
      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);

      assertPrintable(result.stdout, 'pretty stdout');
      assertPrintable(result.stderr, 'the log');
      assert.match(result.stdout, /UPDATED configmaps .*\[prod\\u202eue\]/);
      assert.ok(
        result.stdout.includes(
          '~ data.value: "plain" → "a\\u001b]0;owned\\u0007b\\u009b31mc\\u202eevil\\u2066d\\u2069e\\u200bf\\u00a0g"',
        ),
        result.stdout,
      );
      assert.match(result.stderr, /\(context "test\\u202etxet"\)/);

      const history = await runKubediffToCompletion(['history', '--state', state, '-o', 'pretty']);
      assert.equal(history.code, 0, history.stderr);
      assertPrintable(history.stdout, '`kubediff history`');
      assert.ok(history.stdout.includes('\\u009b31mc\\u202eevil'), history.stdout);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });
});
