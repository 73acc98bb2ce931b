// npm run otelcol:build — builds the OpenTelemetry Collector the OTLP sink's tests run (test/otelcol/: the
// OTLP receiver, the file exporter and the OTLP/HTTP exporter, from the Go module proxy) into
// .cache/otelcol/bin, only when that module changed (scripts/go-build.ts says how).
import path from 'node:path';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type BuildResult, ensureGoBuild, type GoBuild } from './go-build.ts';

export const otelcolModuleDir = path.join(repoRoot, 'test', 'otelcol');
export const otelcolBinDir = path.join(repoRoot, '.cache', 'otelcol', 'bin');
export const OTELCOL_BINARY = 'otelcol';

function otelcolBuild(): GoBuild {
  return {
    label: 'otelcol:build',
    moduleDir: otelcolModuleDir,
    binDir: otelcolBinDir,
    binaries: [OTELCOL_BINARY],
    args: ['build', '-trimpath', '-ldflags=-s -w', '-o', path.join(otelcolBinDir, OTELCOL_BINARY), '.'],
    sources: ['*.go'],
    coldNote: 'a cold build (modules from the Go module proxy) takes a few minutes',
  };
}

/** Builds the Collector unless the stamp says it is current. Throws a one-line Error on failure. */
export function ensureOtelcol(log: (message: string) => void = console.log): Promise<BuildResult> {
  return ensureGoBuild(otelcolBuild(), log);
}

if (import.meta.main) {
  try {
    await ensureOtelcol();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
