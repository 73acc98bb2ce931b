// npm run kwok:build — builds kwok (the fake kubelets of the tests whose pods must run) from test/kwok/
// into .cache/kwok/bin, only when its inputs changed (scripts/go-build.ts says how). `npm test` runs it
// before the tests that need it.
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type BuildResult, ensureGoBuild } from './go-build.ts';

export const kwokBinDir = path.join(repoRoot, '.cache', 'kwok', 'bin');

export function ensureKwok(log: (message: string) => void = console.log): Promise<BuildResult> {
  return ensureGoBuild(
    {
      label: 'kwok:build',
      moduleDir: path.join(repoRoot, 'test', 'kwok'),
      binDir: kwokBinDir,
      binaries: ['kwok'],
      args: [
        'build',
        '-trimpath',
        '-ldflags=-s -w',
        '-o',
        `${kwokBinDir}${path.sep}kwok`,
        'sigs.k8s.io/kwok/cmd/kwok',
      ],
      sources: ['*.go'],
      coldNote: 'a cold build takes a minute or two',
    },
    log,
  );
}

if (import.meta.main) {
  try {
    await ensureKwok();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
