// npm run build:sea — kubediff as one file that runs on a machine without Node.js: a Node.js single
// executable application (https://nodejs.org/api/single-executable-applications.html) made of the Node
// 24 that `npm ci` installs from the npm registry and of the npm package with its locked production
// dependencies (what `npm install -g kubediff` installs), which packaging/sea/main.cjs unpacks on first
// start. Nothing comes from anywhere but the npm registry:
// Node from the `node` package, the injector from `postject` (the Node project's own).
//
//   npm run build:sea                      release/kubediff, its archive and its krew manifest
//   npm run build:sea -- --release-url https://example.org/releases/download/v0.1.0
//                                          the manifest's download address (default: the local archive)
//
// Into release/ (or --out <dir>):
//   kubediff                                  the executable (Linux x64, like the Node that builds it)
//   kubediff-v<version>-linux-amd64.tar.gz    it and the licence, the archive krew installs
//   kubediff.yaml                             the krew manifest (packaging/krew/kubediff.yaml filled in)
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { brotliCompressSync, gzipSync, constants as zlibConstants } from 'node:zlib';
import { filesUnder, installLocked, packFromCleanCopy, repoRoot } from './npm-package.ts';

/** The fuse Node looks for in its binary to tell that a blob was injected (Node's documentation). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const MAIN = path.join(repoRoot, 'packaging', 'sea', 'main.cjs');
export const KREW_TEMPLATE = path.join(repoRoot, 'packaging', 'krew', 'kubediff.yaml');
/** What the archive holds, and krew copies: the executable and the licence. */
export const ARCHIVE_FILES = ['kubediff', 'LICENSE'] as const;

// Plain JavaScript beside the launcher: the options `watch` runs with (bin/node-options.js).
const { WATCH_NODE_OPTIONS } = (await import(path.join(repoRoot, 'bin', 'node-options.js'))) as {
  WATCH_NODE_OPTIONS: string[];
};

export interface SeaBuild {
  version: string;
  executable: string;
  archive: string;
  manifest: string;
  /** Bytes of the tree the executable carries, before compression. */
  appBytes: number;
}

/**
 * Files of the installed tree that Node never reads when running kubediff: npm's bin links (the
 * executable is its own) and the dependencies' type declarations and source maps (about 39 of 84 MiB).
 */
export function leftOut(file: string): boolean {
  return (
    file.split(path.sep).includes('.bin') ||
    /\.d\.[cm]?ts$/.test(file) ||
    /\.d\.[cm]?ts\.map$/.test(file) ||
    file.endsWith('.js.map')
  );
}

/**
 * The installed tree as one buffer, the layout packaging/sea/main.cjs unpacks: [4-byte big-endian
 * length of the index][index JSON: [{ path, mode, size }…]][every file's bytes, in index order].
 */
export async function packApp(dir: string): Promise<Buffer> {
  const index: { path: string; mode: number; size: number }[] = [];
  const bodies: Buffer[] = [];
  for (const file of (await filesUnder(dir)).filter((name) => !leftOut(name))) {
    const full = path.join(dir, file);
    const info = await stat(full);
    if (!info.isFile()) continue;
    const body = await readFile(full);
    index.push({
      path: file.split(path.sep).join('/'),
      mode: info.mode & 0o111 ? 0o755 : 0o644,
      size: body.length,
    });
    bodies.push(body);
  }
  const indexJson = Buffer.from(JSON.stringify(index));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(indexJson.length);
  return Buffer.concat([length, indexJson, ...bodies]);
}

/** A gzipped ustar archive of regular files, owned by root, dated 1970: the same bytes for the same files. */
export function tarGz(files: { name: string; mode: number; body: Buffer }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const file of files) {
    const header = Buffer.alloc(512);
    const field = (offset: number, length: number, value: string) =>
      header.write(value, offset, length, 'ascii');
    const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
    field(0, 100, file.name);
    field(100, 8, octal(file.mode, 8));
    field(108, 8, octal(0, 8));
    field(116, 8, octal(0, 8));
    field(124, 12, octal(file.body.length, 12));
    field(136, 12, octal(0, 12));
    field(148, 8, '        ');
    field(156, 1, '0');
    field(257, 6, 'ustar');
    field(263, 2, '00');
    let sum = 0;
    for (const byte of header) sum += byte;
    field(148, 8, `${octal(sum, 7)}\0`);
    blocks.push(header, file.body, Buffer.alloc((512 - (file.body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks), { level: 9 });
}

/** The krew manifest: the template with this build's version, archive address and digest. */
export function renderKrewManifest(
  template: string,
  values: { version: string; uri: string; sha256: string },
): string {
  return template
    .replaceAll('{{version}}', `v${values.version}`)
    .replaceAll('{{uri linux-amd64}}', values.uri)
    .replaceAll('{{sha256 linux-amd64}}', values.sha256);
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${path.basename(args[0] ?? command)} failed (exit ${code}):\n${output}`)),
    );
  });
}

/** Builds the single executable, its archive and its krew manifest into `outDir`. */
export async function buildSea(
  options: {
    outDir?: string;
    releaseUrl?: string;
    /** The npm package to carry (packFromCleanCopy()); default: packed here. */
    tarball?: string;
    log?: (message: string) => void;
  } = {},
): Promise<SeaBuild> {
  const outDir = path.resolve(options.outDir ?? path.join(repoRoot, 'release'));
  const log = options.log ?? (() => {});
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`build:sea: builds for Linux x64 only, this is ${process.platform} ${process.arch}.`);
  const work = await mkdtemp(path.join(tmpdir(), 'kubediff-sea-'));
  try {
    log('build:sea: packing the npm package from a clean copy, installing its locked dependencies');
    const tarball = options.tarball ?? (await packFromCleanCopy(path.join(work, 'pack')));
    const appDir = await installLocked(tarball, path.join(work, 'app'));
    const { version } = JSON.parse(await readFile(path.join(appDir, 'package.json'), 'utf8')) as {
      version: string;
    };

    log('build:sea: compressing the installed tree');
    const app = await packApp(appDir);
    const digest = createHash('sha256').update(app).digest('hex').slice(0, 16);
    await writeFile(
      path.join(work, 'app.br'),
      brotliCompressSync(app, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 9 } }),
    );
    await writeFile(path.join(work, 'app.json'), JSON.stringify({ version, digest }));
    await writeFile(
      path.join(work, 'sea-config.json'),
      JSON.stringify({
        main: MAIN,
        output: path.join(work, 'sea.blob'),
        disableExperimentalSEAWarning: true,
        // The options `watch` runs with (the launcher cannot restart a single executable with them).
        execArgv: WATCH_NODE_OPTIONS,
        execArgvExtension: 'env',
        assets: { 'app.json': path.join(work, 'app.json'), 'app.br': path.join(work, 'app.br') },
      }),
    );

    log(`build:sea: injecting it into Node ${process.versions.node} (${process.execPath})`);
    // The blob must be made by the very Node it is injected into.
    await run(process.execPath, ['--experimental-sea-config', path.join(work, 'sea-config.json')], work);
    await mkdir(outDir, { recursive: true });
    const executable = path.join(outDir, 'kubediff');
    await rm(executable, { force: true });
    await copyFile(process.execPath, executable);
    await chmod(executable, 0o755);
    const postject = path.join(repoRoot, 'node_modules', 'postject', 'dist', 'cli.js');
    await run(
      process.execPath,
      [postject, executable, 'NODE_SEA_BLOB', path.join(work, 'sea.blob'), '--sentinel-fuse', SEA_FUSE],
      work,
    );

    const archive = path.join(outDir, `kubediff-v${version}-linux-amd64.tar.gz`);
    const archived = tarGz([
      { name: 'kubediff', mode: 0o755, body: await readFile(executable) },
      { name: 'LICENSE', mode: 0o644, body: await readFile(path.join(repoRoot, 'LICENSE')) },
    ]);
    await writeFile(archive, archived);
    const sha256 = createHash('sha256').update(archived).digest('hex');
    const uri = options.releaseUrl
      ? `${options.releaseUrl.replace(/\/$/, '')}/${path.basename(archive)}`
      : new URL(`file://${archive}`).href;
    const manifest = path.join(outDir, 'kubediff.yaml');
    await writeFile(
      manifest,
      renderKrewManifest(await readFile(KREW_TEMPLATE, 'utf8'), { version, uri, sha256 }),
    );
    return { version, executable, archive, manifest, appBytes: app.length };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  try {
    const { values } = parseArgs({ options: { out: { type: 'string' }, 'release-url': { type: 'string' } } });
    const built = await buildSea({ outDir: values.out, releaseUrl: values['release-url'], log: console.log });
    const size = (file: string) => stat(file).then((info) => `${(info.size / 1048576).toFixed(1)} MiB`);
    console.log(
      `build:sea: ${path.relative(process.cwd(), built.executable)} (${await size(built.executable)})`,
    );
    console.log(`build:sea: ${path.relative(process.cwd(), built.archive)} (${await size(built.archive)})`);
    console.log(`build:sea: ${path.relative(process.cwd(), built.manifest)} (krew manifest)`);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
