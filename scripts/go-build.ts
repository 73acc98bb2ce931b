// Builds Go tools the tests need (the control plane, helm) from the Go modules in test/, into .cache,
// only when their inputs changed. The inputs are summed up in a stamp: sha256 of the module's go.mod,
// go.sum and Go sources, the build flags and `go version`. A matching stamp in the output folder means
// there is nothing to do. Otherwise `go build` runs with the machine's normal module and build caches
// (GOMODCACHE, GOCACHE), so a rebuild after a small change, or a CI run with restored caches, takes
// seconds to a few minutes. Two processes never build into the same folder at once (a lock file).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { glob, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from '../src/util/duration.ts';
import { repoRoot } from '../test/helpers/cluster.ts';
import { processAlive } from '../test/helpers/processes.ts';

export interface GoBuild {
  /** For messages: `cluster:build`, `helm:build`. */
  label: string;
  /** The Go module to build in. */
  moduleDir: string;
  /** Where the binaries go (and the stamp and lock beside them). */
  binDir: string;
  /** The binaries it produces. */
  binaries: readonly string[];
  /** `go build …` arguments. */
  args: readonly string[];
  /** The Go sources whose contents the stamp covers (globs in the module), besides go.mod and go.sum. */
  sources: readonly string[];
  /** Said before a build: how long a cold one takes. */
  coldNote: string;
}

export interface BuildResult {
  built: boolean;
  stamp: string;
  elapsedMs: number;
}

/** Builds the binaries unless the stamp says they are current. Throws a one-line Error on failure. */
export async function ensureGoBuild(
  build: GoBuild,
  log: (message: string) => void = console.log,
): Promise<BuildResult> {
  const started = performance.now();
  const goVersion = readGoVersion(build);
  const stampFile = path.join(build.binDir, '.stamp');
  let stamp = await computeStamp(build, goVersion);
  if (isCurrent(build, stampFile, stamp)) {
    log(
      `${build.label}: binaries are up to date in ${path.relative(repoRoot, build.binDir)} (stamp ${stamp.slice(0, 12)})`,
    );
    return { built: false, stamp, elapsedMs: performance.now() - started };
  }

  await mkdir(build.binDir, { recursive: true });
  const release = await acquireLock(build, log);
  try {
    stamp = await computeStamp(build, goVersion);
    if (isCurrent(build, stampFile, stamp)) {
      log(`${build.label}: another process has just built the binaries`);
      return { built: false, stamp, elapsedMs: performance.now() - started };
    }
    log(
      `${build.label}: building ${build.binaries.join(', ')} with ${goVersion} into ` +
        `${path.relative(repoRoot, build.binDir)}; ${build.coldNote}`,
    );
    log(
      `${build.label}: (cd ${path.relative(repoRoot, build.moduleDir)} && go ${build.args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')})`,
    );
    await rm(stampFile, { force: true });
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn('go', build.args, { cwd: build.moduleDir, stdio: 'inherit' });
      child.once('error', reject);
      child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
    });
    const elapsed = formatDuration(performance.now() - started);
    if (code !== 0)
      throw new Error(
        `${build.label}: go build failed (exit code ${code}) after ${elapsed}; see its output above.`,
      );
    const missing = build.binaries.filter((name) => !existsSync(path.join(build.binDir, name)));
    if (missing.length > 0)
      throw new Error(`${build.label}: go build did not produce ${missing.join(', ')}.`);
    await writeFile(stampFile, `${stamp}\n`);
    log(`${build.label}: built in ${elapsed}`);
    return { built: true, stamp, elapsedMs: performance.now() - started };
  } finally {
    await release();
  }
}

function readGoVersion(build: GoBuild): string {
  const result = spawnSync('go', ['version'], { cwd: build.moduleDir, encoding: 'utf8' });
  if (result.error && (result.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(
      `${build.label}: \`go\` is not on PATH; install Go 1.26 or newer (https://go.dev/dl/), or set KUBEBUILDER_ASSETS to a folder with prebuilt binaries.`,
    );
  }
  if (result.status !== 0) {
    throw new Error(
      `${build.label}: \`go version\` failed: ${(result.stderr || String(result.error)).trim()}`,
    );
  }
  return result.stdout.trim();
}

/** sha256 over `go version`, the build flags, go.mod, go.sum and the sources (names and contents). */
export function computeStamp(build: GoBuild, goVersion = readGoVersion(build)): Promise<string> {
  return sourceStamp(
    build.moduleDir,
    ['go.mod', 'go.sum', ...build.sources],
    `${goVersion}\n${build.args.slice(0, 3).join(' ')}\n`,
  );
}

/**
 * sha256 over `header` and the files of `dir` matching `patterns` (sorted names and contents; a folder
 * that matches counts through its files): what a build's output depends on, so that a matching stamp
 * means the output is current.
 */
export async function sourceStamp(dir: string, patterns: string[], header: string): Promise<string> {
  const files: string[] = [];
  for await (const entry of glob(patterns, { cwd: dir, withFileTypes: true })) {
    if (!entry.isFile()) continue; // a folder that `src/**` matches: its files are matched too
    files.push(path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
  }
  files.sort();
  const hash = createHash('sha256');
  hash.update(header);
  for (const file of files) {
    const content = await readFile(path.join(dir, file));
    hash.update(`${file}\0${createHash('sha256').update(content).digest('hex')}\n`);
  }
  return hash.digest('hex');
}

function isCurrent(build: GoBuild, stampFile: string, stamp: string): boolean {
  if (!build.binaries.every((name) => existsSync(path.join(build.binDir, name)))) return false;
  try {
    return readFileSync(stampFile, 'utf8').trim() === stamp;
  } catch {
    return false;
  }
}

async function acquireLock(build: GoBuild, log: (message: string) => void): Promise<() => Promise<void>> {
  const lockFile = path.join(build.binDir, '.build.lock');
  let announced = false;
  for (;;) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(readFileSync(lockFile, 'utf8').trim(), 10);
    if (!Number.isInteger(holder) || !processAlive(holder)) {
      await rm(lockFile, { force: true }); // left behind by a build that was killed
      continue;
    }
    if (!announced) {
      log(`${build.label}: waiting for the build running in process ${holder}`);
      announced = true;
    }
    await sleep(2_000);
  }
}
