import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { EXIT_FAILURE, EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { main } from '../../../src/cli/main.ts';
import { watchSettingsFromFlags } from '../../../src/config/settings.ts';
import { errorFromResponse, errorFromTransport, parseRetryAfter } from '../../../src/kube/errors.ts';
import { labelSelectorProblem } from '../../../src/kube/label-selector.ts';
import { KubediffError, UsageError } from '../../../src/util/errors.ts';

describe('label selectors', () => {
  it('accepts every kubectl form', () => {
    for (const selector of [
      'app',
      '!app',
      'app=web',
      'app==web',
      'app!=web',
      'tier in (a, b)',
      'tier notin (a)',
      'app.kubernetes.io/name=x,env',
      'a=',
    ]) {
      assert.equal(labelSelectorProblem(selector), undefined, selector);
    }
  });
  it('names the bad requirement', () => {
    assert.match(labelSelectorProblem('app=web,=x') ?? '', /"=x" is not a valid requirement/);
    assert.match(labelSelectorProblem('app in a,b') ?? '', /"app in a" is not a valid requirement/);
  });
});

describe('watch flags', () => {
  it('splits repeated and comma-separated lists and picks the output by terminal', () => {
    const settings = watchSettingsFromFlags(
      { namespace: ['a,b', 'c'], resource: ['po'], ignore: ['/spec/replicas'] },
      true,
    );
    assert.deepEqual(settings.namespaces, ['a', 'b', 'c']);
    assert.equal(settings.output, 'pretty');
    assert.equal(watchSettingsFromFlags({}, false).output, 'json');
    assert.ok(settings.ignoredPaths.includes('/spec/replicas'));
    assert.ok(settings.ignoredPaths.includes('/status'));
    assert.ok(!watchSettingsFromFlags({ status: true }, false).ignoredPaths.includes('/status'));
  });

  it("the audit webhook: off without --audit-listen; --ignore-user becomes the watch's excludeUsers", () => {
    assert.equal(watchSettingsFromFlags({}, false).audit, undefined);
    const settings = watchSettingsFromFlags(
      { auditListen: ':8443', auditCert: 'c', auditKey: 'k', ignoreUser: ['system:serviceaccount:argocd:*'] },
      false,
      { KUBEDIFF_AUDIT_TOKEN: 't' },
    );
    assert.deepEqual(settings.audit, {
      listen: ':8443',
      certFile: 'c',
      keyFile: 'k',
      token: 't',
      waitMs: 500,
      windowMs: 5000,
      maxPending: 10000,
      maxRecords: 20000,
      maxRequestBytes: 16 * 1024 * 1024,
    });
    assert.deepEqual(settings.filter?.excludeUsers, ['system:serviceaccount:argocd:*']);
    // The API server's client certificate pinned by name (repeatable).
    const pinned = watchSettingsFromFlags(
      {
        auditListen: ':8443',
        auditCert: 'c',
        auditKey: 'k',
        auditClientCa: 'ca',
        auditClientName: ['kube-apiserver-audit', 'apiserver-*'],
      },
      false,
    );
    assert.equal(pinned.audit?.clientCAFile, 'ca');
    assert.deepEqual(pinned.audit?.clientNames, ['kube-apiserver-audit', 'apiserver-*']);
  });

  it('rejects bad values with one sentence and exit code 2', () => {
    const cases: [Parameters<typeof watchSettingsFromFlags>[0], RegExp][] = [
      [{ events: 'added,renamed' }, /invalid --events value "renamed"/],
      [{ selector: 'app in' }, /invalid --selector "app in"/],
      [
        { ignore: ['spec/replicas'] },
        /invalid --ignore "spec\/replicas": not a JSON Pointer: it must start with "\/"/,
      ],
      [{ namespace: ['Shop'] }, /invalid --namespace "Shop"/],
      [{ output: 'yaml' }, /invalid --output "yaml"/],
      [{ auditCert: 'x.crt' }, /--audit-cert applies to the audit webhook: add --audit-listen/],
      [{ auditListen: ':8443' }, /serves HTTPS only: give its certificate and key/],
      [{ auditListen: ':8443', auditCert: 'c', auditKey: 'k' }, /must authenticate its sender/],
      [{ auditListen: 'nowhere', auditCert: 'c', auditKey: 'k' }, /invalid --audit-listen "nowhere"/],
      [
        { auditListen: ':8443', auditCert: 'c', auditKey: 'k', auditClientCa: 'ca', auditWait: 'soon' },
        /invalid --audit-wait "soon"/,
      ],
      [
        { auditListen: ':8443', auditCert: 'c', auditKey: 'k', auditClientName: ['kube-apiserver-audit'] },
        /--audit-client-name names the client certificate the API server presents: give its CA with --audit-client-ca/,
      ],
    ];
    for (const [flags, message] of cases) {
      assert.throws(
        () => watchSettingsFromFlags(flags, false),
        (error: unknown) =>
          error instanceof UsageError && exitCodeOf(error) === EXIT_USAGE && message.test(error.message),
      );
    }
  });
});

describe('API errors', () => {
  it('classifies statuses and reads Retry-After from the header or the Status body', () => {
    const throttled = errorFromResponse(
      429,
      '{"kind":"Status","reason":"TooManyRequests","message":"slow down","details":{"retryAfterSeconds":3}}',
      undefined,
      '/api/v1/pods',
    );
    assert.equal(throttled.kind, 'throttled');
    assert.equal(throttled.retryAfterSeconds, 3);
    assert.equal(throttled.message, '429 TooManyRequests: slow down');
    assert.equal(errorFromResponse(503, '<html>down</html>', '7', '/x').retryAfterSeconds, 7);
    assert.equal(errorFromResponse(410, '', undefined, '/x').kind, 'gone');
    assert.equal(errorFromResponse(403, '', undefined, '/x').kind, 'forbidden');
    assert.equal(parseRetryAfter('soon'), undefined);
  });
  it('explains transport failures', () => {
    const refused = errorFromTransport(
      Object.assign(new Error('x'), { cause: { code: 'ECONNREFUSED' } }),
      'https://h:1',
      '/api',
    );
    assert.equal(refused.kind, 'network');
    assert.equal(refused.message, 'cannot reach the API server at https://h:1: connection refused');
    const tls = errorFromTransport(
      Object.assign(new Error('x'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
      'https://h:1',
      '/api',
    );
    assert.equal(tls.kind, 'tls');
  });
});

describe('the command line as a module', () => {
  const packageVersion = (
    JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;

  /** Runs main() with `args`, capturing what it writes to stdout and stderr. */
  async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const written = { stdout: '', stderr: '' };
    const capture = (stream: 'stdout' | 'stderr') => {
      const original = process[stream].write;
      process[stream].write = ((chunk: string | Uint8Array) => {
        written[stream] += String(chunk);
        return true;
      }) as typeof original;
      return () => {
        process[stream].write = original;
      };
    };
    const restore = [capture('stdout'), capture('stderr')];
    try {
      const code = await main(['node', 'kubediff', ...args]);
      return { code, ...written };
    } finally {
      for (const undo of restore) undo();
    }
  }

  it('runs nothing when imported; main() returns the exit code a command ends with', async () => {
    assert.deepEqual(await run('version'), {
      code: 0,
      stdout: `kubediff ${packageVersion} (node ${process.versions.node})\n`,
      stderr: '',
    });
    const bad = await run('watch', '--events', 'created');
    assert.equal(bad.code, EXIT_USAGE);
    assert.match(bad.stderr, /^kubediff: invalid --events value "created": use a comma-separated list/);
    assert.equal(bad.stdout, '');
  });

  it('maps each kind of error to its exit code', () => {
    assert.equal(exitCodeOf(new UsageError('bad flag')), EXIT_USAGE);
    assert.equal(exitCodeOf(new KubediffError('cannot reach the API server')), EXIT_FAILURE);
    assert.equal(exitCodeOf(new Error('a bug')), EXIT_FAILURE);
  });
});
