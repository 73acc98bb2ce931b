// The GitHub workflows (.github/workflows): actionlint, built from its Go module (`npm run
// actionlint:build`; npm test builds it when this file runs), finds nothing in them, shellcheck included for
// their `run:` scripts (Debian's package, which .ci/run installs); every third-party action is pinned by a
// full commit SHA with its tag in a comment; and the release workflow does what docs/install.md says it
// does: keyless signing, SBOM attestations, npm provenance, the chart as an OCI artifact.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../../scripts/npm-package.ts';
import { releaseToolBinary } from '../../scripts/release-tools-build.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const workflowsDir = path.join(repoRoot, '.github', 'workflows');
const workflows = readdirSync(workflowsDir).filter((name) => /\.ya?ml$/.test(name));

/** actionlint on `files` (in `cwd`, a repository with .github/workflows), shellcheck on PATH. */
function actionlint(files: string[], cwd = repoRoot): { code: number | null; output: string } {
  const binary = releaseToolBinary('actionlint');
  if (!existsSync(binary))
    throw new Error(`actionlint is not built at ${binary}: npm test builds it (or npm run actionlint:build)`);
  const result = spawnSync(binary, ['-no-color', ...files], { cwd, encoding: 'utf8' });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

test('shellcheck is on PATH, so actionlint checks the run: scripts', () => {
  const result = spawnSync('shellcheck', ['--version'], { encoding: 'utf8' });
  assert.equal(result.status, 0, 'shellcheck (Debian package shellcheck; .ci/run installs it)');
});

test('actionlint finds nothing in the workflows', () => {
  assert.deepEqual(workflows.sort(), ['ci.yml', 'release.yml']);
  const result = actionlint(workflows.map((name) => path.join('.github', 'workflows', name)));
  assert.equal(result.code, 0, result.output);
});

test('the check can fail: actionlint reports a broken expression and shellcheck an unquoted variable', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-actionlint-'));
  try {
    await mkdir(path.join(dir, '.github', 'workflows'), { recursive: true });
    const file = path.join('.github', 'workflows', 'broken.yml');
    await writeFile(
      path.join(dir, file),
      [
        'on: push',
        'jobs:',
        '  build:',
        '    runs-on: ubuntu-24.04',
        '    steps:',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub expression, not a template
        '      - run: echo ${{ github.nope }}',
        '      - run: rm -rf $TARGET/*',
        '',
      ].join('\n'),
    );
    const result = actionlint([file], dir);
    assert.equal(result.code, 1, result.output);
    assert.match(result.output, /property "nope" is not defined/);
    assert.match(result.output, /shellcheck reported issue/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('every third-party action is pinned by a full commit SHA, with its tag in a comment', () => {
  for (const name of nonEmpty(workflows, 'workflow files in .github/workflows')) {
    const text = readFileSync(path.join(workflowsDir, name), 'utf8');
    const uses = [...text.matchAll(/^\s*(?:-\s+)?uses:\s*(\S+)(.*)$/gm)];
    assert.ok(uses.length > 0, `${name} uses actions`);
    for (const [, action, rest] of uses) {
      assert.match(
        action ?? '',
        /^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/,
        `${name}: ${action} is pinned by commit SHA`,
      );
      assert.match(rest ?? '', /^\s+# v\d+\.\d+\.\d+$/, `${name}: ${action} names its tag in a comment`);
    }
  }
});

test('the release: from a v* tag, after the tests, signed keylessly, with SBOMs and npm provenance', () => {
  const text = readFileSync(path.join(workflowsDir, 'release.yml'), 'utf8');
  assert.match(text, /^on:\n {2}push:\n {4}tags: \['v\*'\]$/m);
  assert.match(text, /^permissions:\n {2}contents: read$/m, 'read-only unless a job asks for more');
  assert.match(text, /run: bash \.ci\/run/);
  assert.match(text, /release:notes -- "\$GITHUB_REF_NAME"/, 'the CHANGELOG section of the tag');
  for (const job of ['image', 'executable', 'npm']) {
    assert.match(
      text,
      new RegExp(`^ {2}${job}:\\n(?: {4}.*\\n)*? {4}needs: check$`, 'm'),
      `${job} needs the check`,
    );
  }
  assert.match(text, /id-token: write/, 'GitHub OIDC for keyless signing and npm provenance');
  assert.match(text, /cosign sign --yes "\$IMAGE@\$DIGEST"/);
  assert.match(text, /cosign attest --yes --type spdxjson/);
  assert.match(text, /cosign sign-blob --yes --bundle/);
  assert.match(text, /npm publish --provenance/);
  assert.match(text, /helm push "kubediff-\$version\.tgz" "oci:\/\/\$CHART_REGISTRY"/);
  assert.match(text, /cosign sign --yes "\$CHART_REGISTRY\/kubediff@\$digest"/);
  assert.match(text, /npm run build:sea -- --release-url/, 'the krew manifest with the release archive');
  assert.doesNotMatch(text, /--tlog-upload=false|--key /, 'keyless, in the transparency log');
});
