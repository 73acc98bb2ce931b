// npm run helm:build — builds helm (for the Helm chart tests) from test/helm/ into .cache/helm/bin, only
// when its inputs changed (scripts/go-build.ts says how). `npm test` runs it before tests that need helm.
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type BuildResult, ensureGoBuild } from './go-build.ts';

export const helmBinDir = path.join(repoRoot, '.cache', 'helm', 'bin');

export function ensureHelm(log: (message: string) => void = console.log): Promise<BuildResult> {
  return ensureGoBuild(
    {
      label: 'helm:build',
      moduleDir: path.join(repoRoot, 'test', 'helm'),
      binDir: helmBinDir,
      binaries: ['helm'],
      args: [
        'build',
        '-trimpath',
        '-ldflags=-s',
        '-o',
        `${helmBinDir}${path.sep}helm`,
        'helm.sh/helm/v3/cmd/helm',
      ],
      sources: ['*.go'],
      coldNote: 'a cold build takes a few minutes',
    },
    log,
  );
}

if (import.meta.main) {
  try {
    await ensureHelm();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
