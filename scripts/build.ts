// npm run build — compiles src/ into dist/, the JavaScript that bin/kubediff.js runs (bin/build-state.js
// says why kubediff does not run its TypeScript directly). TypeScript's compiler only emits here
// (tsconfig.build.json: no type check, that is `npm run typecheck`; comments removed, since a module's
// source text stays in memory for as long as the process runs; `.ts` imports rewritten to `.js`).
// `npm ci` runs it (package.json "prepare"), and so do `npm test` and `npm run bench` before they start
// kubediff. About 2 s.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
// Plain JavaScript beside the launcher, which reads the stamp this writes (it has no type declarations).
const { BUILD_STAMP } = (await import(pathToFileURL(path.join(root, 'bin', 'build-state.js')).href)) as {
  BUILD_STAMP: string;
};
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** Builds dist/ afresh; throws with the compiler's own words when it fails. */
export function buildDist(): void {
  if (!existsSync(tsc))
    throw new Error(
      'build: TypeScript (a dev dependency) is not installed; run `npm ci` (not `npm ci --omit=dev`) to build kubediff.',
    );
  // Afresh: a module deleted from src/ must not linger in dist/.
  rmSync(path.join(root, 'dist'), { recursive: true, force: true });
  const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (compiled.status !== 0)
    throw new Error(`build: tsc failed (exit ${compiled.status}):\n${compiled.stdout}${compiled.stderr}`);
  // Last, so that an interrupted build leaves no stamp and the launcher says "not built yet".
  writeFileSync(path.join(root, BUILD_STAMP), '');
}

if (import.meta.main) {
  try {
    buildDist();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
