// src/who/admission/config.ts: --admission-listen and its settings from flags and the config file,
// --peers; bad input is one sentence and exit code 2; the object digest the join compares
// (src/who/admission/object-digest.ts) does not depend on key order or on the resourceVersion.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { runValidate } from '../../../src/cli/validate.ts';
import { loadWatchSettings, watchSettingsFromFlags } from '../../../src/config/settings.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { objectDigest } from '../../../src/who/admission/object-digest.ts';

const FILES = { admissionListen: ':9443', admissionCert: 'c', admissionKey: 'k' };

describe('admission webhook settings', () => {
  it('off without --admission-listen; on, with its defaults', () => {
    assert.equal(watchSettingsFromFlags({}, false).admission, undefined);
    const settings = watchSettingsFromFlags({ ...FILES, admissionAllowUnauthenticated: true }, false);
    assert.deepEqual(settings.admission, {
      listen: ':9443',
      certFile: 'c',
      keyFile: 'k',
      waitMs: 500,
      maxRecords: 50_000,
      maxRequestBytes: 8 * 1024 * 1024,
    });
    const authenticated = watchSettingsFromFlags({ ...FILES, admissionClientCa: 'ca' }, false, {
      KUBEDIFF_ADMISSION_TOKEN: 't',
    });
    assert.equal(authenticated.admission?.clientCAFile, 'ca');
    assert.equal(authenticated.admission?.token, 't');
  });

  it('the config file: every key, flags win', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-settings-'));
    try {
      const config = path.join(dir, 'config.yaml');
      await writeFile(
        config,
        [
          'admission:',
          '  listen: ":9443"',
          '  certFile: /tls/tls.crt',
          '  keyFile: /tls/tls.key',
          '  clientCAFile: /tls/ca.crt',
          '  clientNames: [kube-apiserver]',
          '  wait: 200ms',
          '  maxRecords: 1000',
          '  maxRequestSize: 4MB',
          'peers: kubediff-peers.kubediff.svc:9443',
          '',
        ].join('\n'),
      );
      const settings = await loadWatchSettings({ config, admissionListen: '127.0.0.1:9999' }, false, {});
      assert.deepEqual(settings.admission, {
        listen: '127.0.0.1:9999',
        certFile: '/tls/tls.crt',
        keyFile: '/tls/tls.key',
        clientCAFile: '/tls/ca.crt',
        clientNames: ['kube-apiserver'],
        waitMs: 200,
        maxRecords: 1000,
        maxRequestBytes: 4 * 1024 * 1024,
      });
      assert.equal(settings.peers, 'kubediff-peers.kubediff.svc:9443');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the Helm way: wait and bounds in the file, listen and certificate by flag; validate says valid', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-settings-'));
    try {
      const config = path.join(dir, 'config.yaml');
      await writeFile(
        config,
        [
          'admission:',
          '  wait: 1s',
          '  maxRecords: 1000',
          '  maxRequestSize: 4MB',
          'audit:',
          '  wait: 2s',
          '  maxRecords: 1000',
          '',
        ].join('\n'),
      );
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      await runValidate({ config }, { env: {}, stdout, stderr });
      assert.equal(String(stdout.read()), `${config}: valid (preset default; 1 sink: stdout).\n`);
      assert.equal(stderr.read(), null);
      const settings = await loadWatchSettings(
        { config, ...FILES, admissionAllowUnauthenticated: true },
        false,
        {},
      );
      assert.equal(settings.admission?.waitMs, 1000);
      assert.equal(settings.admission?.maxRecords, 1000);
      // A listener without its certificate, whichever way: one sentence, exit 2.
      await writeFile(config, 'admission:\n  listen: ":9443"\n  wait: 1s\n');
      await assert.rejects(
        () => loadWatchSettings({ config }, false, {}),
        (error: unknown) =>
          exitCodeOf(error) === EXIT_USAGE &&
          /^the admission webhook serves HTTPS only .*: give its certificate and key with --admission-cert and --admission-key \(or admission.certFile and admission.keyFile\), or let kubediff manage one with --admission-cert-secret\.$/.test(
            (error as Error).message,
          ),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the config file's mistakes, each with its line", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-admission-settings-'));
    try {
      const config = path.join(dir, 'config.yaml');
      await writeFile(
        config,
        [
          'admission:',
          '  listen: nope',
          '  certFile: a',
          '  keyFile: b',
          '  wait: soon',
          'peers: no-port',
          '',
        ].join('\n'),
      );
      await assert.rejects(
        () => loadWatchSettings({ config }, false, {}),
        (error: unknown) =>
          exitCodeOf(error) === EXIT_USAGE &&
          /:2:11: admission.listen: expected \[host\]:port/.test(String(error)) &&
          /:5:9: admission.wait: expected a duration/.test(String(error)) &&
          /:6:8: peers: expected host:port/.test(String(error)),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects bad values with one sentence and exit code 2', () => {
    const cases: [Parameters<typeof watchSettingsFromFlags>[0], RegExp][] = [
      [
        { admissionCert: 'x.crt' },
        /--admission-cert applies to the admission webhook: add --admission-listen/,
      ],
      [{ admissionListen: ':9443' }, /serves HTTPS only/],
      [FILES, /must authenticate its sender: .* --admission-allow-unauthenticated/],
      [{ ...FILES, admissionClientCa: 'ca', admissionAllowUnauthenticated: true }, /contradicts/],
      [
        { ...FILES, admissionListen: 'nowhere', admissionAllowUnauthenticated: true },
        /invalid --admission-listen "nowhere"/,
      ],
      [{ peers: 'kubediff-peers:9443' }, /add one of them/],
      [
        { ...FILES, admissionAllowUnauthenticated: true, auditWait: '0s' },
        /^--audit-wait is the audit webhook's wait: add --audit-listen <addr>; the admission webhook's is admission.wait in the config file \(docs\/who\.md\)\.$/,
      ],
      [
        { ...FILES, admissionAllowUnauthenticated: true, peers: 'no-port' },
        /invalid --peers "no-port": use host:port/,
      ],
    ];
    for (const [flags, message] of cases) {
      assert.throws(
        () => watchSettingsFromFlags(flags, false),
        (error: unknown) =>
          error instanceof UsageError && exitCodeOf(error) === EXIT_USAGE && message.test(error.message),
        String(message),
      );
    }
  });
});

describe('the object digest', () => {
  it('is the same whatever the key order, apiVersion, kind and resourceVersion; another value changes it', () => {
    const stored = { metadata: { name: 'web', uid: 'u', resourceVersion: '5' }, data: { a: '1', b: '2' } };
    const reviewed = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      data: { b: '2', a: '1' },
      metadata: { resourceVersion: '4', uid: 'u', name: 'web' },
    };
    assert.equal(objectDigest(stored), objectDigest(reviewed));
    assert.notEqual(objectDigest(stored), objectDigest({ ...stored, data: { a: '1', b: '3' } }));
    assert.notEqual(objectDigest({ data: { a: [1, 2] } }), objectDigest({ data: { a: [2, 1] } }));
    assert.match(objectDigest(stored), /^[A-Za-z0-9_-]{22}$/);
  });
});
