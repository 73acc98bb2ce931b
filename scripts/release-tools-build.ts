// npm run registry:build | cosign:build | actionlint:build — builds the release tools the tests use, each
// from a Go module of test/ (from the Go module proxy) into .cache/<tool>/bin, only when that module
// changed (scripts/go-build.ts says how):
// - registry: the OCI registry (CNCF Distribution) that the image build and the release tests run on
//   loopback, to push the image and the chart to and pull them back by digest;
// - cosign: signs and verifies the image and the chart in that registry, as the release workflow does;
// - actionlint: checks .github/workflows (test/repo/workflows.test.ts).
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type BuildResult, ensureGoBuild } from './go-build.ts';

export type ReleaseTool = 'registry' | 'cosign' | 'actionlint';

const PACKAGES: Record<ReleaseTool, { main: string; coldNote: string }> = {
  registry: {
    main: 'github.com/distribution/distribution/v3/cmd/registry',
    coldNote: 'a cold build (modules from the Go module proxy) takes a few minutes',
  },
  cosign: {
    main: 'github.com/sigstore/cosign/v2/cmd/cosign',
    coldNote: 'a cold build (modules from the Go module proxy) takes several minutes',
  },
  actionlint: {
    main: 'github.com/rhysd/actionlint/cmd/actionlint',
    coldNote: 'a cold build (modules from the Go module proxy) takes about a minute',
  },
};

/** Where the tool's binary is (built or not). */
export function releaseToolBinary(tool: ReleaseTool): string {
  return path.join(repoRoot, '.cache', tool, 'bin', tool);
}

/** Builds the tool unless the stamp says it is current. Throws a one-line Error on failure. */
export function ensureReleaseTool(
  tool: ReleaseTool,
  log: (message: string) => void = console.log,
): Promise<BuildResult> {
  const binary = releaseToolBinary(tool);
  return ensureGoBuild(
    {
      label: `${tool}:build`,
      moduleDir: path.join(repoRoot, 'test', tool),
      binDir: path.dirname(binary),
      binaries: [tool],
      args: ['build', '-trimpath', '-ldflags=-s -w', '-o', binary, PACKAGES[tool].main],
      sources: ['*.go'],
      coldNote: PACKAGES[tool].coldNote,
    },
    log,
  );
}

if (import.meta.main) {
  try {
    const tools = process.argv.slice(2);
    for (const tool of tools) {
      if (!(tool in PACKAGES))
        throw new Error(
          `release-tools-build: unknown tool ${tool}; one of ${Object.keys(PACKAGES).join(', ')}`,
        );
      await ensureReleaseTool(tool as ReleaseTool);
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
