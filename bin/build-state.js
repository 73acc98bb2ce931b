// Whether dist/ (the JavaScript that `npm run build` compiles from src/, scripts/build.ts) is there and
// no older than the sources. kubediff runs the compiled JavaScript, not its TypeScript sources: Node's
// type stripping needs its module compile cache to start fast, and that cache stays in memory for the
// life of the process (about 2.7 MiB of a watch's 71; docs/watching.md, "Start-up and the build"). In a
// checkout (src/ is there) a source edited after the last build would otherwise run silently as its old
// self; an installed package (npm, the image, the single executable) carries dist/ alone and skips the
// check. Plain JavaScript: the launcher reads it before anything else.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The file the build writes last: its time is the build's. */
export const BUILD_STAMP = path.join('dist', '.built');

/**
 * Undefined when dist/ can run; otherwise the sentence that says why not and how to fix it.
 * @param {string} root the kubediff folder (package.json's)
 * @returns {string | undefined}
 */
export function buildProblem(root) {
  const checkout = isCheckout(root);
  const built = mtimeMs(path.join(root, BUILD_STAMP));
  if (built === undefined) {
    return checkout
      ? `kubediff: ${root} is not built yet; run \`npm run build\` (or \`npm ci\`) there.`
      : `kubediff: ${path.join(root, 'dist')} is missing or incomplete; reinstall kubediff.`;
  }
  if (!checkout) return undefined;
  const newer = newerSource(path.join(root, 'src'), built);
  return newer
    ? `kubediff: ${path.relative(root, newer)} changed after the last build; run \`npm run build\` in ${root}.`
    : undefined;
}

/**
 * Whether `root` is a checkout (it holds the TypeScript sources) rather than an installed package (the
 * npm package, the image and the single executable hold dist/ alone).
 * @param {string} root the kubediff folder (package.json's)
 * @returns {boolean}
 */
export function isCheckout(root) {
  return exists(path.join(root, 'src', 'cli', 'entry.ts'));
}

/** The first TypeScript source under `dir` modified after `since` (ms), the browser's page excepted. */
function newerSource(dir, since) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      // src/ui/web is the browser's code, served as it is (src/ui/assets.ts), not compiled.
      if (full.endsWith(path.join('src', 'ui', 'web'))) continue;
      const found = newerSource(full, since);
      if (found) return found;
    } else if (entry.name.endsWith('.ts') && (mtimeMs(full) ?? 0) > since) {
      return full;
    }
  }
  return undefined;
}

function mtimeMs(file) {
  return statSync(file, { throwIfNoEntry: false })?.mtimeMs;
}

function exists(file) {
  return mtimeMs(file) !== undefined;
}
