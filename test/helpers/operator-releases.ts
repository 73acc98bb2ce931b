// A real operator's published CRDs and examples at consecutive releases, for the event contract's test
// over a real upgrade (test/integration/watch-upgrade.test.ts): prometheus-operator, whose v0.93.0 gave
// Prometheus and PrometheusAgent `spec.shards` a `default: 1`. Its Go module ships the CRDs
// (example/prometheus-operator-crd/) and the user guides' examples, so the Go module proxy serves them:
// `go mod download` keeps each release in the Go module cache (GOMODCACHE), which is the cache
// (`npm run upgrade:fetch` fills it; .ci/run does, and a test fetches what is missing). Nothing of the
// project is copied into this repository.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeBody } from './kube-admin.ts';

export const OPERATOR_MODULE = 'github.com/prometheus-operator/prometheus-operator';
/** Consecutive releases, applied in this order: v0.93.0 added `default: 1` to `spec.shards`. */
export const OPERATOR_RELEASES = ['v0.92.1', 'v0.93.0', 'v0.94.0'] as const;
/** The examples applied: the project's user guides and its sharding example. */
const EXAMPLE_FOLDERS = ['user-guides/getting-started', 'user-guides/alerting', 'shards', 'thanos'];

/**
 * The folder of `version` in the Go module cache, downloaded first if needed (from the Go module proxy;
 * a no-op when cached). Throws one sentence when `go` is missing or the download fails.
 */
export function releaseDir(version: string): string {
  let output: string;
  try {
    output = execFileSync('go', ['mod', 'download', '-json', `${OPERATOR_MODULE}@${version}`], {
      // Outside any module: the download does not depend on (or touch) a go.mod.
      cwd: tmpdir(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GOFLAGS: '-mod=mod' },
    });
  } catch (error) {
    const detail = (error as { stdout?: string; stderr?: string; message?: string }) ?? {};
    throw new Error(
      `could not get ${OPERATOR_MODULE}@${version} from the Go module cache or proxy (run \`npm run upgrade:fetch\` with Go on PATH): ${(detail.stdout || detail.stderr || detail.message || '').trim()}`,
    );
  }
  const info = JSON.parse(output) as { Dir?: string; Error?: string };
  if (!info.Dir)
    throw new Error(`${OPERATOR_MODULE}@${version}: ${info.Error ?? 'no folder in the module cache'}`);
  return info.Dir;
}

/** Every object of the YAML files of `folder` (not its subfolders), in file order. */
function yamlObjects(folder: string): { file: string; object: KubeBody }[] {
  const found: { file: string; object: KubeBody }[] = [];
  for (const file of readdirSync(folder)
    .filter((name) => name.endsWith('.yaml'))
    .sort()) {
    for (const document of parseAllDocuments(readFileSync(path.join(folder, file), 'utf8'))) {
      const object = document.toJS() as KubeBody | null;
      if (object && typeof object === 'object') found.push({ file, object });
    }
  }
  return found;
}

/** The release's CustomResourceDefinitions, as published. */
export function releaseCRDs(dir: string): KubeBody[] {
  return yamlObjects(path.join(dir, 'example', 'prometheus-operator-crd'))
    .map(({ object }) => object)
    .filter((object) => object.kind === 'CustomResourceDefinition');
}

/**
 * The release's example custom resources (monitoring.coreos.com), each with a name of its own (the
 * examples reuse names across files): `<folder>-<file>-<index>`.
 */
export function releaseExamples(dir: string): KubeBody[] {
  const examples: KubeBody[] = [];
  for (const folder of EXAMPLE_FOLDERS) {
    const prefix = folder.split('/').at(-1);
    yamlObjects(path.join(dir, 'example', folder)).forEach(({ file, object }, index) => {
      if (typeof object.apiVersion !== 'string' || !object.apiVersion.startsWith('monitoring.coreos.com/'))
        return;
      const name = `${prefix}-${file.replace(/\.yaml$/, '')}-${index}`
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, '-');
      const { namespace: _namespace, ...metadata } = {
        ...(object.metadata as KubeBody | undefined),
        name,
      } as KubeBody;
      examples.push({ ...object, metadata });
    });
  }
  return examples;
}
