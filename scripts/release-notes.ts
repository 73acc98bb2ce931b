// node scripts/release-notes.ts v<version> — prints the notes of a release: the section of CHANGELOG.md
// for that version, without its heading. Fails (one sentence, exit code 1) when the tag does not name
// package.json's version or CHANGELOG.md has no section for it, so that the release workflow publishes
// nothing for a tag that was not prepared (CONTRIBUTING.md, "Releasing").
import { readFileSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '..');

/** The body of `## [<version>] …` in a Keep a Changelog file, or undefined when it has none. */
export function changelogSection(changelog: string, version: string): string | undefined {
  const lines = changelog.split('\n');
  const heading = (line: string) => /^## \[([^\]]+)\]/.exec(line)?.[1];
  const start = lines.findIndex((line) => heading(line) === version);
  if (start === -1) return undefined;
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line));
  return lines
    .slice(start + 1, end === -1 ? undefined : end)
    .join('\n')
    .trim();
}

/** The release notes for `tag`, or an Error saying what to prepare. */
export function releaseNotes(tag: string, changelog: string, packageVersion: string): string {
  const version = tag.replace(/^v/, '');
  if (version !== packageVersion)
    throw new Error(
      `release-notes: the tag ${tag} does not name package.json's version ${packageVersion}; set the version and tag v${packageVersion}.`,
    );
  const section = changelogSection(changelog, version);
  if (!section)
    throw new Error(
      `release-notes: CHANGELOG.md has no section "## [${version}] - <date>"; rename Unreleased to it before tagging.`,
    );
  return section;
}

if (import.meta.main) {
  try {
    const tag = process.argv[2];
    if (!tag) throw new Error('release-notes: give the tag, e.g. `node scripts/release-notes.ts v0.1.0`.');
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    console.log(releaseNotes(tag, readFileSync(path.join(repoRoot, 'CHANGELOG.md'), 'utf8'), version));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
