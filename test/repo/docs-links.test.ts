// The documentation holds together: README.md stays a front door (at most README_MAX_LINES lines; each
// topic lives once, in docs/), and no link breaks when a page or a section moves. Checked: every relative
// link and image of README.md, CONTRIBUTING.md, BENCHMARKS.md and docs/*.md names a file that exists
// and, with #anchor, a heading of that page (GitHub's anchors); and every page and section the code,
// the manifests and the example config point readers to (`docs/state.md`, `docs/watching.md, "Tuning"`,
// `docs/deploy.md#least-privilege`) exists.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { filesUnder, repoRoot } from '../../scripts/npm-package.ts';

const README_MAX_LINES = 300;
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'BENCHMARKS.md',
  ...readdirSync(path.join(repoRoot, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

/** The text outside fenced code blocks and inline code, where links and headings are. */
function prose(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor of a markdown page, repeated headings numbered as GitHub numbers them. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(path.join(repoRoot, page), 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Headings of a page as written, without their backticks (for references by section name). */
function headings(page: string): string[] {
  const result: string[] = [];
  let fenced = false;
  for (const line of readFileSync(path.join(repoRoot, page), 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*$/.exec(line);
    if (heading) result.push((heading[1] ?? '').replaceAll('`', ''));
  }
  return result;
}

/** What is wrong with a link from `page` to `target` (relative, maybe #anchor), or undefined. */
function brokenLink(page: string, target: string): string | undefined {
  const [file = '', anchor] = target.split('#');
  const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), decodeURI(file)));
  if (resolved.startsWith('..')) return `${target} leaves the repository`;
  if (!existsSync(path.join(repoRoot, resolved))) return `${target}: no file ${resolved}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!resolved.endsWith('.md') || statSync(path.join(repoRoot, resolved)).isDirectory())
    return `${target}: an anchor into a file that is not a page`;
  return anchors(resolved).has(anchor) ? undefined : `${target}: ${resolved} has no heading #${anchor}`;
}

test(`README.md is a front door: at most ${README_MAX_LINES} lines`, () => {
  const lines = readFileSync(path.join(repoRoot, 'README.md'), 'utf8').trimEnd().split('\n').length;
  assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines; move the topic to its page in docs/`);
});

test('every relative link and image of the pages leads to a file and a heading that exist', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    const text = prose(readFileSync(path.join(repoRoot, page), 'utf8'));
    for (const match of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const problem = brokenLink(page, target);
      if (problem) broken.push(`${page}: ${problem}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the pages and sections the code, the manifests and the example config name exist', async () => {
  const sources = [
    ...(await filesUnder(path.join(repoRoot, 'src'))).map((file) => path.join('src', file)),
    ...(await filesUnder(path.join(repoRoot, 'bin'))).map((file) => path.join('bin', file)),
    ...(await filesUnder(path.join(repoRoot, 'deploy'))).map((file) => path.join('deploy', file)),
    ...(await filesUnder(path.join(repoRoot, 'test'))).map((file) => path.join('test', file)),
    'config.example.yaml',
    'biome.json',
  ].filter((file) => /\.(ts|js|cjs|yaml|yml|json|tpl|txt)$/.test(file));
  const broken: string[] = [];
  const page = String.raw`((?:docs/)?[\w-]+\.md)`;
  for (const file of sources) {
    const text = readFileSync(path.join(repoRoot, file), 'utf8');
    for (const match of text.matchAll(
      /\b(docs\/[\w-]+\.md|README\.md|CONTRIBUTING\.md|BENCHMARKS\.md)(#[\w-]+)?/g,
    )) {
      const problem = brokenLink('README.md', `${match[1]}${match[2] ?? ''}`);
      if (problem) broken.push(`${file}: ${problem}`);
    }
    for (const match of text.matchAll(new RegExp(String.raw`${page}, \\?"([^"\\]+)\\?"`, 'g'))) {
      const [, target = '', section = ''] = match;
      // A page named without its folder (state.md, beside another page) is the link check's business.
      if (!existsSync(path.join(repoRoot, target))) continue;
      // A reference may wrap across comment lines, and name a heading by its first words.
      const name = section.replace(/\s*\n\s*(\/\/|#|\*)?\s*/g, ' ').replaceAll('`', '');
      const found = headings(target).some(
        (heading) =>
          heading === name || [' ', ':', ' ('].some((next) => heading.startsWith(`${name}${next}`)),
      );
      if (!found) broken.push(`${file}: ${target} has no section "${name}"`);
    }
  }
  assert.deepEqual(broken, []);
});

test("the anchors are GitHub's", () => {
  assert.equal(slug('Health and metrics (`--listen :8080`)'), 'health-and-metrics---listen-8080');
  assert.equal(slug('1. Build the image'), '1-build-the-image');
  assert.equal(slug('7. Connections: HTTP/2 against HTTP/1.1'), '7-connections-http2-against-http11');
  assert.equal(
    slug('Field managers: `managers`, `excludeManagers`'),
    'field-managers-managers-excludemanagers',
  );
});
