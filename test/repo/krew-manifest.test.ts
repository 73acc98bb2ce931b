// The krew plugin manifest (packaging/krew/kubediff.yaml), filled in as `npm run build:sea` fills it,
// has the shape krew's plugin manifest rules ask for: the plugin's name is what `kubectl <name>` runs,
// a semantic version with a leading v (this package's), a short description that fits krew's list,
// and for each platform a selector, the archive's address and SHA-256 (the build's), the files to copy
// from the archive the build writes, and the binary among them.
// test/integration/install.test.ts installs the manifest of a real build as krew does.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ARCHIVE_FILES, KREW_TEMPLATE, renderKrewManifest } from '../../scripts/build-sea.ts';
import { repoRoot } from '../../scripts/npm-package.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

interface Platform {
  selector?: { matchLabels?: Record<string, string> };
  uri?: string;
  sha256?: string;
  bin?: string;
  files?: { from?: string; to?: string }[];
}

interface KrewPlugin {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  spec?: {
    version?: string;
    shortDescription?: string;
    description?: string;
    platforms?: Platform[];
  };
}

const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
};
const sha256 = 'a'.repeat(64);
const uri = `https://example.org/releases/download/v${version}/kubediff-v${version}-linux-amd64.tar.gz`;
const rendered = renderKrewManifest(readFileSync(KREW_TEMPLATE, 'utf8'), { version, uri, sha256 });
const plugin = parse(rendered) as KrewPlugin;

test('filled in, no placeholder is left', () => {
  assert.doesNotMatch(rendered, /\{\{|\}\}/);
});

test('a krew Plugin named after the command it adds', () => {
  assert.equal(plugin.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
  assert.equal(plugin.kind, 'Plugin');
  assert.equal(plugin.metadata?.name, 'kubediff');
  assert.equal(plugin.spec?.version, `v${version}`);
  assert.match(plugin.spec?.version ?? '', /^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  const short = plugin.spec?.shortDescription ?? '';
  assert.ok(short.length > 0 && short.length <= 60, `a short description that fits krew's list: ${short}`);
  assert.ok((plugin.spec?.description ?? '').trim().length > 0);
});

test('each platform: a selector, the archive with its digest, the files and the binary', () => {
  for (const platform of nonEmpty(plugin.spec?.platforms ?? [], 'platforms')) {
    const labels = platform.selector?.matchLabels ?? {};
    assert.ok(['linux', 'darwin', 'windows'].includes(labels.os ?? ''), `os: ${labels.os}`);
    assert.ok(['amd64', 'arm64'].includes(labels.arch ?? ''), `arch: ${labels.arch}`);
    assert.equal(platform.uri, uri);
    assert.equal(platform.sha256, sha256);
    const files = platform.files ?? [];
    assert.deepEqual(
      files.map((file) => file.from),
      [...ARCHIVE_FILES],
      'copies what the archive holds',
    );
    for (const file of files) assert.equal(file.to, '.');
    assert.ok(
      files.some((file) => file.from === platform.bin),
      `the binary ${platform.bin} is among the files`,
    );
  }
});
