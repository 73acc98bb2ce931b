// The config file's `redact:` rules and KUBEDIFF_REDACTION_KEY: how they reach the settings, which resource
// types a rule applies to, what a wrong key or an unknown resource name does, and what the state file keeps.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT_USAGE, exitCodeOf } from '../../../src/cli/exit-codes.ts';
import { checkRedactRuleNames } from '../../../src/cli/resource-name-check.ts';
import { parseConfig } from '../../../src/config/file.ts';
import { REDACTION_KEY_ENV, redactionSignature, redactPathsFor } from '../../../src/config/redaction.ts';
import { settingsFromConfig, watchSettingsFromFlags } from '../../../src/config/settings.ts';
import { DiscoveryResolver } from '../../../src/events/discovery-resolver.ts';
import type { ResourceType } from '../../../src/kube/types.ts';
import { UsageError } from '../../../src/util/errors.ts';
import { configmaps } from '../../helpers/resource-types.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

const KEY = '0123456789abcdef0123456789abcdef';
const vaults: ResourceType = {
  ...configmaps,
  group: 'vault.example.com',
  resource: 'vaultsecrets',
  kind: 'VaultSecret',
  shortNames: ['vs'],
  singularName: 'vaultsecret',
};
const deployments: ResourceType = {
  ...configmaps,
  group: 'apps',
  resource: 'deployments',
  kind: 'Deployment',
  shortNames: ['deploy'],
  singularName: 'deployment',
};

const FILE = `redact:
  - path: /data/password
    resources: [cm]
  - path: /spec/credentials/*
    resources: [vs, "*.example.com"]
  - /metadata/annotations/vault.example.com~1token
`;

describe('redact: in the config file', () => {
  it('becomes the watch settings, each rule with where it is written', () => {
    const settings = settingsFromConfig(parseConfig(FILE, 'c.yaml', {}), {}, false, {});
    assert.deepEqual(settings.redaction, {
      rules: [
        { path: '/data/password', resources: ['cm'], origin: 'c.yaml:2:5: redact[0]' },
        { path: '/spec/credentials/*', resources: ['vs', '*.example.com'], origin: 'c.yaml:4:5: redact[1]' },
        { path: '/metadata/annotations/vault.example.com~1token', origin: 'c.yaml:6:5: redact[2]' },
      ],
    });
  });

  it('applies each rule to the resource types it names, resolved as in every other rule', () => {
    const settings = settingsFromConfig(parseConfig(FILE, 'c.yaml', {}), {}, false, {});
    const resolver = new DiscoveryResolver();
    resolver.update([configmaps, vaults, deployments]);
    const pathsFor = redactPathsFor(settings.redaction.rules, resolver.resolve);
    assert.deepEqual(pathsFor(configmaps), [
      '/data/password',
      '/metadata/annotations/vault.example.com~1token',
    ]);
    assert.deepEqual(pathsFor(vaults), [
      '/spec/credentials/*',
      '/metadata/annotations/vault.example.com~1token',
    ]);
    assert.deepEqual(pathsFor(deployments), ['/metadata/annotations/vault.example.com~1token']);
  });

  it('stops the watch on a resource name that is a typo, and warns about a type that may come later', () => {
    const selection = { watched: [{ ...configmaps, stale: false }], skipped: [], unresolved: [] };
    const log = memoryLog();
    const typo = [{ path: '/data/password', resources: ['confgmaps'], origin: 'c.yaml:2:5: redact[0]' }];
    assert.throws(
      () => checkRedactRuleNames(typo, selection, log),
      (error: unknown) =>
        error instanceof UsageError &&
        exitCodeOf(error) === EXIT_USAGE &&
        error.message ===
          'c.yaml:2:5: redact[0]: unknown resource type "confgmaps" (did you mean configmaps?); run `kubediff resources` to list what this cluster offers; values this rule should hide would be shown.',
    );
    checkRedactRuleNames(
      [{ path: '/spec/x', resources: ['vaultsecrets.vault.example.com'], origin: 'c.yaml:4:5: redact[1]' }],
      selection,
      log,
    );
    assert.deepEqual(log.warnings, [
      'c.yaml:4:5: redact[1]: vaultsecrets.vault.example.com is not served yet; it is used as soon as its CRD or API appears.',
    ]);
  });
});

describe(REDACTION_KEY_ENV, () => {
  it('switches the markers to a keyed HMAC; unset or empty leaves the plain hash', () => {
    assert.equal(watchSettingsFromFlags({}, false, { [REDACTION_KEY_ENV]: KEY }).redaction.key, KEY);
    assert.equal(watchSettingsFromFlags({}, false, { [REDACTION_KEY_ENV]: '' }).redaction.key, undefined);
    assert.equal(watchSettingsFromFlags({}, false, {}).redaction.key, undefined);
  });

  it('refuses a key too short to be safe, in one sentence that does not echo it (exit 2)', () => {
    assert.throws(
      () => watchSettingsFromFlags({}, false, { [REDACTION_KEY_ENV]: 'hunter2' }),
      (error: unknown) =>
        error instanceof UsageError &&
        exitCodeOf(error) === EXIT_USAGE &&
        !error.message.includes('hunter2') &&
        error.message ===
          'KUBEDIFF_REDACTION_KEY is 7 characters long, too short to keep hashes from being guessed; use at least 16 random characters, e.g. `openssl rand -hex 32`.',
    );
  });

  it('is named in the state signature by an id that does not reveal it, so a new key takes a new baseline', () => {
    const plain = redactionSignature({ rules: [] });
    const keyed = redactionSignature({ rules: [], key: KEY });
    const other = redactionSignature({ rules: [], key: KEY.toUpperCase() });
    assert.equal(keyed.includes(KEY), false);
    assert.notEqual(plain, keyed);
    assert.notEqual(keyed, other);
    assert.equal(keyed, redactionSignature({ rules: [], key: KEY }));
    // Rules count; their order and where they are written do not.
    const a = { path: '/data/a', resources: ['cm', 'vs'], origin: 'x.yaml:1:1' };
    const b = { path: '/data/b' };
    assert.notEqual(redactionSignature({ rules: [a] }), plain);
    assert.equal(
      redactionSignature({ rules: [a, b] }),
      redactionSignature({ rules: [b, { path: '/data/a', resources: ['vs', 'cm'] }] }),
    );
  });

  it('changed when rules began to hold inside annotation copies: a state recorded with rules before is not compared', () => {
    // What a state file recorded before holds (its annotation copies in the clear) must not be reported
    // as the `from` side of a change: with rules, the signature differs from the one recorded then.
    const before = (rules: string[]) => JSON.stringify({ version: 2, hashing: 'sha256', rules });
    assert.notEqual(
      redactionSignature({ rules: [{ path: '/data/a' }] }),
      before([JSON.stringify(['/data/a', []])]),
    );
    // Without rules nothing changed: no new baseline for those who have none.
    assert.equal(redactionSignature({ rules: [] }), before([]));
  });
});
