// CHANGELOG.md, in the form of Keep a Changelog, and scripts/release-notes.ts, which gives the release
// workflow the section of the tagged version as the release's notes and refuses a tag that was not
// prepared (another version than package.json's, or no section for it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../../scripts/npm-package.ts';
import { changelogSection, releaseNotes } from '../../scripts/release-notes.ts';

const changelog = readFileSync(path.join(repoRoot, 'CHANGELOG.md'), 'utf8');

test('CHANGELOG.md: Unreleased first, then versions with dates, newest first, Keep a Changelog headings', () => {
  assert.match(changelog, /^# Changelog\n/);
  const versions = [...changelog.matchAll(/^## (.+)$/gm)].map((match) => match[1] ?? '');
  assert.equal(versions[0], '[Unreleased]');
  for (const heading of versions.slice(1)) assert.match(heading, /^\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$/);
  const kinds = [...changelog.matchAll(/^### (.+)$/gm)].map((match) => match[1]);
  for (const kind of kinds)
    assert.ok(
      ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'].includes(kind ?? ''),
      `### ${kind}`,
    );
  const released = versions.slice(1).map((heading) => heading.slice(1, heading.indexOf(']')));
  assert.deepEqual(
    released,
    [...released].sort((a, b) => b.localeCompare(a, 'en', { numeric: true })),
  );
});

test("release notes: the tagged version's section, nothing else", () => {
  const sample = [
    '# Changelog',
    '',
    '## [Unreleased]',
    '',
    '## [1.2.0] - 2027-01-05',
    '',
    '### Fixed',
    '',
    '- The thing.',
    '',
    '## [1.1.0] - 2026-12-20',
    '',
    '### Added',
    '',
    '- Another thing.',
    '',
  ].join('\n');
  assert.equal(changelogSection(sample, '1.2.0'), '### Fixed\n\n- The thing.');
  assert.equal(changelogSection(sample, '1.1.0'), '### Added\n\n- Another thing.');
  assert.equal(releaseNotes('v1.2.0', sample, '1.2.0'), '### Fixed\n\n- The thing.');
  assert.throws(
    () => releaseNotes('v1.3.0', sample, '1.2.0'),
    /the tag v1\.3\.0 does not name package\.json's version 1\.2\.0/,
  );
  assert.throws(
    () => releaseNotes('v1.3.0', sample, '1.3.0'),
    /CHANGELOG\.md has no section "## \[1\.3\.0\] - <date>"/,
  );
});

test('the script refuses a tag that was not prepared: one sentence, exit code 1', () => {
  const result = spawnSync(process.execPath, ['scripts/release-notes.ts', 'v99.0.0'], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  assert.equal(result.status, 1);
  assert.equal(result.stdout, '');
  assert.match(
    result.stderr,
    /^release-notes: the tag v99\.0\.0 does not name package\.json's version \S+; set the version and tag v\S+\.\n$/,
  );
});
