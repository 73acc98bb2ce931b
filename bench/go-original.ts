// The Go original (github.com/arriqaaq/kubediff) for figure 5: built from its published source
// (a folder beside the repository, `--go-original-src` to point elsewhere) into
// .cache/go-original, never into the repository, and rebuilt only when a stamp of its sources and
// of the Go toolchain changes, as scripts/cluster-build.ts does for the control plane. Its
// dependencies come through the Go module proxy.
//
// It runs as its README says: a folder holding config.yaml (here `mode: diff`, one resource, one
// namespace, the `noop` notifier) and a kubeconfig in $KUBECONFIG. It logs one pretty-printed JSON
// block per event on stdout; in diff mode an update is logged only when the old and new objects
// differ, so its one-minute resyncs (old and new the same object) log nothing. Each "update event"
// block carries the diff, whose metadata.resourceVersion line names the write it reports.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sourceStamp } from '../scripts/go-build.ts';
import { repoRoot } from '../test/helpers/cluster.ts';
import { type Child, startChild } from './lib/processes.ts';

export const GO_ORIGINAL = 'github.com/arriqaaq/kubediff';
export const DEFAULT_GO_ORIGINAL_SRC = path.resolve(repoRoot, '..', 'shared', 'anchors', 'kubediff-go');

const cacheDir = path.join(repoRoot, '.cache', 'go-original');
const binary = path.join(cacheDir, 'bin', 'kubediff-go');
const stampFile = path.join(cacheDir, 'bin', '.stamp');
// -mod=mod: its go.sum predates the entries newer Go toolchains want; -modfile: a writable copy of
// go.mod and go.sum, so that the source folder (read-only, shared) is never written.
const BUILD_FLAGS = ['-mod=mod', '-trimpath', '-buildvcs=false'];

export interface GoOriginalBuild {
  binary: string;
  source: string;
  goVersion: string;
  /** sha256 of its sources, its build flags and `go version`. */
  stamp: string;
  built: boolean;
  buildSeconds: number;
}

/** Builds the Go original into .cache/go-original/bin unless its stamp is current. */
export async function ensureGoOriginal(
  source: string,
  log: (message: string) => void,
): Promise<GoOriginalBuild> {
  const started = performance.now();
  if (!existsSync(path.join(source, 'go.mod')))
    throw new Error(
      `no Go original at ${source} (its go.mod is missing); pass --go-original-src <folder> with the source of ${GO_ORIGINAL}.`,
    );
  const version = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (version.status !== 0)
    throw new Error('`go version` failed: the Go original is built with Go; install Go 1.26 or newer.');
  const goVersion = version.stdout.trim();
  const stamp = await sourceStamp(
    source,
    ['go.mod', 'go.sum', '**/*.go'],
    `${goVersion}\n${BUILD_FLAGS.join(' ')}\n`,
  );
  const done = (built: boolean): GoOriginalBuild => ({
    binary,
    source,
    goVersion,
    stamp,
    built,
    buildSeconds: Math.round((performance.now() - started) / 100) / 10,
  });
  if (existsSync(binary) && readText(stampFile) === stamp) {
    log(`go-original: ${path.relative(repoRoot, binary)} is current (stamp ${stamp.slice(0, 12)})`);
    return done(false);
  }
  const modDir = path.join(cacheDir, 'mod');
  await mkdir(modDir, { recursive: true });
  await mkdir(path.dirname(binary), { recursive: true });
  for (const file of ['go.mod', 'go.sum']) {
    const copy = path.join(modDir, file);
    await rm(copy, { force: true });
    await copyFile(path.join(source, file), copy);
    await chmod(copy, 0o644);
  }
  await rm(stampFile, { force: true });
  const args = ['build', ...BUILD_FLAGS, `-modfile=${path.join(modDir, 'go.mod')}`, '-o', binary, '.'];
  log(
    `go-original: building ${GO_ORIGINAL} from ${source} (go ${args.join(' ')}); a cold build takes a minute`,
  );
  const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    // GOFLAGS from the environment would be replaced, not merged, by flags of our own: ours are on
    // the command line instead.
    const child = spawn('go', args, { cwd: source, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (chunk) => (text += chunk));
    child.stderr.on('data', (chunk) => (text += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, text }));
  });
  if (output.code !== 0 || !existsSync(binary))
    throw new Error(
      `go build of the Go original failed (exit ${output.code}): ${output.text.trim().split('\n').slice(-3).join(' | ')}`,
    );
  await writeFile(stampFile, stamp);
  log(`go-original: built in ${done(true).buildSeconds} s`);
  return done(true);
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

export interface GoOriginalProcess {
  child: Child;
  /** "update event" blocks logged so far. */
  readonly updateBlocks: number;
  /** Blocks of any other message (it logs only updates in diff mode; counted to be sure). */
  readonly otherBlocks: number;
  stop(): Promise<void>;
}

/**
 * Starts the Go original on the ConfigMaps of `namespace`. `onUpdate` gets the resourceVersion of
 * the write each "update event" block reports (undefined when its diff has no resourceVersion line).
 */
export async function startGoOriginal(
  build: GoOriginalBuild,
  options: {
    kubeconfig: string;
    namespace: string;
    onUpdate: (resourceVersion: string | undefined, at: number) => void;
  },
): Promise<GoOriginalProcess> {
  const configDir = await mkdtemp(path.join(os.tmpdir(), 'kubediff-go-original-'));
  await writeFile(
    path.join(configDir, 'config.yaml'),
    [
      'mode: diff',
      'resources:',
      '  - kind: v1/configmaps',
      'namespaces:',
      `  - ${options.namespace}`,
      'notifier:',
      '  noop:',
      '    enabled: true',
      '',
    ].join('\n'),
  );
  // Outside a Pod it falls back to $KUBECONFIG; make sure it does not find in-cluster settings.
  const {
    KUBERNETES_SERVICE_HOST: _host,
    KUBERNETES_SERVICE_PORT: _port,
    LOG_LEVEL: _level,
    ...env
  } = process.env;
  const counts = { update: 0, other: 0 };
  let block: string[] | undefined;
  const child = startChild(build.binary, ['-config', configDir], {
    env: { ...env, KUBECONFIG: options.kubeconfig },
    onLine: (line, at) => {
      // logrus pretty-prints each entry as a JSON object from a "{" line to a "}" line.
      if (line === '{') block = [line];
      else if (block) block.push(line);
      if (line !== '}' || !block) return;
      const entry = JSON.parse(block.join('\n')) as { msg?: string; diff?: string[] };
      block = undefined;
      if (entry.msg !== 'update event') {
        counts.other++;
        return;
      }
      counts.update++;
      options.onUpdate(updatedResourceVersion(entry.diff ?? []), at);
    },
  });
  return {
    child,
    get updateBlocks() {
      return counts.update;
    },
    get otherBlocks() {
      return counts.other;
    },
    stop: async () => {
      await child.stop();
      await rm(configDir, { recursive: true, force: true });
    },
  };
}

/** The new resourceVersion in a go-test/deep diff line "Object.map[metadata].map[resourceVersion]: 207 != 208". */
function updatedResourceVersion(diff: string[]): string | undefined {
  for (const line of diff) {
    const match = /^Object\.map\[metadata\]\.map\[resourceVersion\]: \S+ != (\S+)$/.exec(line);
    if (match) return match[1];
  }
  return undefined;
}
