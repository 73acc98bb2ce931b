// The npm package as a user gets it: packed from a clean copy of the working tree (what git tracks or
// would track: no dist/, no .cache, no leftovers), built afresh there by npm's own lifecycle (`prepare`
// compiles dist/, `prepack` adds the shrinkwrap), then installed with `npm install -g` into a prefix of
// its own. The install test (test/integration/install.test.ts) and the single executable
// (scripts/build-sea.ts) start from here, so both hold exactly what `npm install -g kubediff` installs.
// Packing in a copy also keeps the checkout's dist/ untouched while other tests run from it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '..');

export interface CommandOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** npm's own entry script: the one running this (`npm run`, `npm test`), else the first on PATH. */
export function npmCli(env: NodeJS.ProcessEnv = process.env): string {
  if (env.npm_execpath && existsSync(env.npm_execpath)) return env.npm_execpath;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'npm');
    if (dir && existsSync(candidate)) return realpathSync(candidate);
  }
  throw new Error('npm is not on PATH: installing the package needs it.');
}

/**
 * The environment npm runs in: this one without the settings an enclosing `npm run` exported
 * (npm_config_*, npm_package_*…), which would otherwise steer the inner npm (its prefix, its
 * lifecycle), with `extra` on top.
 */
export function npmEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'NODE_TEST_CONTEXT') env[key] = value;
  }
  return { ...env, ...extra };
}

export interface NpmOptions {
  cwd: string;
  /** The Node that runs npm (and so the lifecycle scripts); default this one. */
  node?: string;
  env?: NodeJS.ProcessEnv;
}

/** Runs `npm args…` with a Node that `engines` allows (this one by default); resolves with its output. */
export function runNpm(args: string[], options: NpmOptions): Promise<CommandOutput> {
  const child = spawn(options.node ?? process.execPath, [npmCli(), ...args], {
    cwd: options.cwd,
    env: options.env ?? npmEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function mustRunNpm(args: string[], options: NpmOptions): Promise<CommandOutput> {
  const result = await runNpm(args, options);
  if (result.code !== 0)
    throw new Error(`npm ${args.join(' ')} failed (exit ${result.code}):\n${result.stdout}${result.stderr}`);
  return result;
}

/** The working tree's files that git tracks or would track (new files not ignored). */
async function workingTreeFiles(): Promise<string[]> {
  const child = spawn('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0)
    throw new Error(`git ls-files failed in ${repoRoot} (a clone is needed to pack): ${err.trim()}`);
  // Deleted but not yet committed files are still listed by --cached.
  return out.split('\0').filter((file) => file !== '' && existsSync(path.join(repoRoot, file)));
}

/**
 * Packs kubediff from a clean copy of the working tree into `outDir`; returns the tarball's path.
 * The copy shares the checkout's node_modules (the compiler `prepare` runs), nothing else.
 */
export async function packFromCleanCopy(outDir: string): Promise<string> {
  const copy = await mkdtemp(path.join(tmpdir(), 'kubediff-pack-'));
  try {
    for (const file of await workingTreeFiles()) {
      await mkdir(path.dirname(path.join(copy, file)), { recursive: true });
      await cp(path.join(repoRoot, file), path.join(copy, file), { preserveTimestamps: true });
    }
    await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
    await mkdir(outDir, { recursive: true });
    const packed = await mustRunNpm(['pack', '--json', '--pack-destination', outDir], { cwd: copy });
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    return path.join(outDir, filename);
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

/**
 * `npm install -g <tarball>` into `prefix`, as a user installs it; returns npm's output. The
 * dependencies come from npm's cache when it holds them (`npm ci` put them there), else from the
 * registry; the shrinkwrap pins them either way.
 */
export function installGlobally(
  tarball: string,
  prefix: string,
  options: Omit<NpmOptions, 'cwd'> = {},
): Promise<CommandOutput> {
  return mustRunNpm(
    ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball],
    { cwd: path.dirname(tarball), ...options },
  );
}

/**
 * The package's tree with exactly the locked dependencies: the tarball unpacked into `dir`, then
 * `npm ci --omit=dev` there, which installs what its npm-shrinkwrap.json names. (`npm install -g`
 * of a local tarball resolves the ranges instead: npm reads a package's shrinkwrap when the registry
 * says it has one, which it does for a published package.)
 */
export async function installLocked(tarball: string, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const unpacked = spawnSync('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], {
    encoding: 'utf8',
  });
  if (unpacked.status !== 0) throw new Error(`tar -xzf ${tarball} failed: ${unpacked.stderr.trim()}`);
  await mustRunNpm(['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: dir,
  });
  return dir;
}

/** Where `npm install -g --prefix <prefix>` puts the package. */
export function installedPackageDir(prefix: string): string {
  return path.join(prefix, 'lib', 'node_modules', 'kubediff');
}

/** Every file under `dir`, relative, sorted (symlinks listed, not followed). */
export async function filesUnder(dir: string, base = dir): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(full, base)));
    else files.push(path.relative(base, full));
  }
  return files.sort();
}
