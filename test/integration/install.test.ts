// kubediff installed the ways people install a command-line tool, each from a clean state, and run as a
// user runs it (docs/install.md):
// - npm: the package packed from a clean copy of the tree (scripts/npm-package.ts) holds exactly what
//   runs; `npm install -g` puts it in a prefix of its own with nothing on PATH but a Node that
//   `engines` allows (this one, or $KUBEDIFF_TEST_INSTALL_NODE) and npm's own script, asking for no
//   install script; `kubediff version` and `kubediff watch` work from there; an older Node is told
//   what to do.
// - the kubectl plugin: the real kubectl finds `kubectl-kubediff` on PATH (`kubectl kubediff watch`).
// - the single executable (scripts/build-sea.ts) runs with no Node anywhere on PATH: `version`,
//   `watch`, the UI's page and its history (SQLite in a worker thread); it unpacks into an owner-only
//   folder and refuses one others may write to. Its krew archive and manifest agree and install as
//   krew installs them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { ARCHIVE_FILES, buildSea, type SeaBuild } from '../../scripts/build-sea.ts';
import {
  type CommandOutput,
  filesUnder,
  installedPackageDir,
  installGlobally,
  npmEnv,
  packFromCleanCopy,
  repoRoot,
} from '../../scripts/npm-package.ts';
import {
  killAll,
  type RunOptions,
  runKubediff,
  runKubediffToCompletion,
  WATCHING,
  watchArgs,
} from '../helpers/cli.ts';
import { resolveBinaries } from '../helpers/cluster.ts';
import { ADMIN_FIELD_MANAGER, adminClient, waitFor } from '../helpers/kube-admin.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const SERVING_UI = /serving the change history on (http:\/\/[^/\s]+)\//;
const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};
/** The Node the package is installed and run with: one that `engines` allows. */
const installNode = process.env.KUBEDIFF_TEST_INSTALL_NODE ?? process.execPath;
const kubectl = resolveBinaries().kubectl.path;
const admin = adminClient();

let work: string;
/** A folder holding `node` alone: the machine "with only npm and Node". */
let nodeDir: string;
let prefix: string;
let tarball: string;
let installOutput: CommandOutput;
let namespace: string;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'kubediff-install-'));
  nodeDir = path.join(work, 'node-bin');
  await mkdir(nodeDir);
  await symlink(installNode, path.join(nodeDir, 'node'));
  tarball = await packFromCleanCopy(path.join(work, 'pack'));
  prefix = path.join(work, 'prefix');
  installOutput = await installGlobally(tarball, prefix, {
    node: installNode,
    env: npmEnv({ PATH: nodeDir, HOME: process.env.HOME ?? work }),
  });
  namespace = await admin.createNamespace('install');
});

after(async () => {
  await killAll();
  await admin.deleteNamespace(namespace).catch(() => {});
  await admin.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** `PATH=<dirs>` (nothing else of this process's PATH) and `extra` for a child. */
function onPath(dirs: string[], extra: Record<string, string | undefined> = {}): RunOptions['env'] {
  return { PATH: dirs.join(path.delimiter), ...extra };
}

/** Awaits the watch's ready line, makes one ConfigMap and changes it, and stops: both reported. */
async function watchReportsChanges(command: string, args: string[], env: RunOptions['env']): Promise<void> {
  const name = `cm-${Math.random().toString(36).slice(2, 8)}`;
  const kd = runKubediff([...args, ...watchArgs(namespace, ['configmaps'])], {
    command,
    env,
    timeoutMs: 60_000,
    checkEvents: true,
  });
  try {
    await kd.waitForStderr(WATCHING);
    await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
      metadata: { name },
      data: { mode: 'a' },
    });
    await admin.patch(`/api/v1/namespaces/${namespace}/configmaps/${name}`, { data: { mode: 'b' } });
    const updated = await kd.waitForEvent((event) => event.type === 'UPDATED' && event.object.name === name);
    assert.deepEqual(updated.changes, [
      { op: 'replace', path: '/data/mode', from: 'a', to: 'b', manager: ADMIN_FIELD_MANAGER },
    ]);
    assert.ok(kd.events.some((event) => event.type === 'ADDED' && event.object.name === name));
    const result = await kd.stop('SIGTERM');
    assert.equal(result.code, 0, result.stderr);
  } finally {
    if (!kd.exitResult) await kd.kill();
  }
}

describe('npm', () => {
  test('the package holds the compiled JavaScript, the UI, the docs and the licence, nothing else', async () => {
    const listing = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
    assert.equal(listing.status, 0, listing.stderr);
    const files = listing.stdout
      .trim()
      .split('\n')
      .map((file) => file.replace(/^package\//, ''))
      .sort();
    const sources = (await filesUnder(path.join(repoRoot, 'src'))).filter((file) => file.endsWith('.ts'));
    const web = sources.filter((file) => file.startsWith(path.join('ui', 'web') + path.sep));
    const compiled = sources
      .filter((file) => !web.includes(file))
      .map((file) => path.join('dist', file.replace(/\.ts$/, '.js')));
    const others = readdirSync(path.join(repoRoot, 'src', 'ui', 'web'))
      .filter((file) => !file.endsWith('.ts'))
      .map((file) => path.join('src', 'ui', 'web', file));
    const docs = readdirSync(path.join(repoRoot, 'docs')).map((file) => path.join('docs', file));
    const expected = [
      ...compiled,
      path.join('dist', '.built'),
      ...['build-state.js', 'kubediff.js', 'node-options.js'].map((file) => path.join('bin', file)),
      ...web.map((file) => path.join('src', file)),
      ...others,
      ...docs,
      'LICENSE',
      'README.md',
      'config.example.yaml',
      'npm-shrinkwrap.json',
      'package.json',
    ].sort();
    assert.deepEqual(files, expected);
  });

  test('installs with npm alone: no install script to allow, no engine warning', () => {
    const said = `${installOutput.stdout}${installOutput.stderr}`;
    assert.doesNotMatch(said, /install-scripts|allowScripts|EBADENGINE|npm (warn|error)/i, said);
    for (const bin of ['kubediff', 'kubectl-kubediff'])
      assert.ok(existsSync(path.join(prefix, 'bin', bin)), bin);
    const installed = JSON.parse(
      readFileSync(path.join(installedPackageDir(prefix), 'package.json'), 'utf8'),
    ) as {
      scripts: Record<string, string>;
    };
    assert.equal(installed.scripts.prepare, undefined, 'the package has no build step left to run');
    // The versions the tests ran against: the shrinkwrap, which a registry install follows, is the lockfile.
    assert.equal(
      readFileSync(path.join(installedPackageDir(prefix), 'npm-shrinkwrap.json'), 'utf8'),
      readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8'),
    );
    assert.ok(
      !existsSync(path.join(installedPackageDir(prefix), 'node_modules', 'node')),
      'no second Node.js',
    );
  });

  test('`kubediff version` and `kubediff watch` run from the install', async () => {
    const env = onPath([nodeDir, path.join(prefix, 'bin')]);
    const kubediff = path.join(prefix, 'bin', 'kubediff');
    const nodeVersion = spawnSync(installNode, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1);
    const version = await runKubediffToCompletion(['version'], { command: kubediff, env });
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout, `kubediff ${manifest.version} (node ${nodeVersion})\n`);
    await watchReportsChanges(kubediff, [], env);
  });

  test('a Node older than `engines` allows: one sentence, exit 1', async (t) => {
    const old = olderNode();
    if (!old) {
      t.skip('no Node that engines does not allow on this machine');
      return;
    }
    const result = await runKubediffToCompletion(['version'], {
      command: path.join(prefix, 'bin', 'kubediff'),
      env: onPath([path.dirname(old.path), path.join(prefix, 'bin')]),
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `kubediff: needs Node.js 22.22 or newer on the 22 line, or 24.6 or newer, found ${old.version}; upgrade Node.js, or install the single executable, which brings its own (docs/install.md).\n`,
    );
  });
});

describe('the kubectl plugin', () => {
  test('`kubectl kubediff` finds the npm install on PATH and watches', async () => {
    const env = onPath([nodeDir, path.join(prefix, 'bin')]);
    const plugins = spawnSync(kubectl, ['plugin', 'list'], { encoding: 'utf8', env: { ...env, HOME: work } });
    assert.match(
      plugins.stdout,
      new RegExp(`${path.join(prefix, 'bin', 'kubectl-kubediff')}$`, 'm'),
      plugins.stderr,
    );
    const version = await runKubediffToCompletion(['kubediff', 'version'], { command: kubectl, env });
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, new RegExp(`^kubediff ${manifest.version} `));
    await watchReportsChanges(kubectl, ['kubediff'], env);
  });
});

describe('the single executable', () => {
  let sea: SeaBuild;
  /** PATH of a machine without Node: the plugin's folder and kubectl's. */
  let bare: string[];
  let home: string;

  before(async () => {
    sea = await buildSea({ outDir: path.join(work, 'release'), tarball });
    const pluginDir = path.join(work, 'plugin-bin');
    await mkdir(pluginDir);
    await symlink(sea.executable, path.join(pluginDir, 'kubectl-kubediff'));
    bare = [pluginDir, path.dirname(kubectl)];
    for (const dir of bare) assert.ok(!existsSync(path.join(dir, 'node')), `no node in ${dir}`);
    home = path.join(work, 'home');
    await mkdir(home);
  });

  const env = (extra: Record<string, string> = {}) =>
    onPath(bare, { HOME: home, XDG_CACHE_HOME: undefined, KUBEDIFF_CACHE_DIR: undefined, ...extra });

  test('runs `kubediff version` with no Node on PATH, unpacked into an owner-only folder', async () => {
    const result = await runKubediffToCompletion(['version'], { command: sea.executable, env: env() });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `kubediff ${manifest.version} (node ${process.versions.node})\n`);
    const cache = path.join(home, '.cache', 'kubediff');
    assert.equal(statSync(cache).mode & 0o777, 0o700);
    const unpacked = readdirSync(cache);
    assert.equal(unpacked.length, 1, unpacked.join(', '));
    assert.match(
      unpacked[0] ?? '',
      new RegExp(`^app-${manifest.version.replaceAll('.', '\\.')}-[0-9a-f]{16}$`),
    );
    // The second start uses what the first unpacked.
    const again = await runKubediffToCompletion(['version'], { command: sea.executable, env: env() });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(readdirSync(cache), unpacked);
    // The dependencies at the versions the tests ran against.
    const lock = lockfile();
    for (const name of ['commander', 'undici', 'yaml', '@kubernetes/client-node']) {
      const file = path.join(cache, unpacked[0] ?? '', 'node_modules', name, 'package.json');
      const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version: string };
      assert.equal(version, lock.packages[`node_modules/${name}`]?.version, name);
    }
  });

  test('watches, records, and serves the UI with its history', async () => {
    const state = path.join(work, 'sea-state.db');
    const name = 'sea-flags';
    const kd = runKubediff(
      [...watchArgs(namespace, ['configmaps'], '--state', state, '--ui', '127.0.0.1:0')],
      {
        command: sea.executable,
        env: env(),
        timeoutMs: 60_000,
        checkEvents: true,
      },
    );
    try {
      const origin = (await kd.waitForStderr(SERVING_UI))[1];
      await kd.waitForStderr(WATCHING);
      await admin.create(`/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: { name },
        data: { on: 'yes' },
      });
      const added = await kd.waitForEvent((event) => event.type === 'ADDED' && event.object.name === name);
      const page = await fetch(`${origin}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
      const script = await fetch(`${origin}/assets/app.ts`);
      assert.equal(script.status, 200);
      assert.match(script.headers.get('content-type') ?? '', /javascript/);
      // The state records an event once stdout has taken it, in its next commit: wait for that commit.
      await waitFor(
        async () => {
          const events = await fetch(`${origin}/api/v1/events?namespace=${namespace}&limit=50`);
          const body = await events.text();
          assert.equal(events.status, 200, body);
          const listed = (JSON.parse(body) as { events: { id: string }[] }).events;
          return listed.some((event) => event.id === added.id);
        },
        { what: `the UI's history to list ${added.id}` },
      );
      const result = await kd.stop('SIGTERM');
      assert.equal(result.code, 0, result.stderr);
    } finally {
      if (!kd.exitResult) await kd.kill();
    }
  });

  test('`kubectl kubediff watch` runs it as a plugin', async () => {
    await watchReportsChanges(kubectl, ['kubediff'], env());
  });

  test('refuses to unpack into a folder others may write to', async () => {
    const shared = path.join(work, 'shared-cache');
    await mkdir(shared);
    await chmod(shared, 0o777);
    const result = await runKubediffToCompletion(['version'], {
      command: sea.executable,
      env: env({ KUBEDIFF_CACHE_DIR: shared }),
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `kubediff: ${shared} may be written by other users; remove it, or \`chmod go-w\` it, or set KUBEDIFF_CACHE_DIR.\n`,
    );
    assert.deepEqual(readdirSync(shared), [], 'nothing unpacked there');
  });

  test("krew: the manifest names the archive's digest, and what krew installs runs", async () => {
    const archive = await readFile(sea.archive);
    const krew = parseYaml(await readFile(sea.manifest, 'utf8')) as {
      spec: {
        version: string;
        platforms: { uri: string; sha256: string; bin: string; files: { from: string; to: string }[] }[];
      };
    };
    assert.equal(krew.spec.version, `v${manifest.version}`);
    const [platform] = krew.spec.platforms;
    assert.ok(platform);
    assert.equal(platform.sha256, createHash('sha256').update(archive).digest('hex'));
    assert.equal(path.basename(new URL(platform.uri).pathname), path.basename(sea.archive));
    // What krew does: unpack, copy `files`, link kubectl-<name> to `bin`.
    const unpacked = path.join(work, 'krew-unpacked');
    await mkdir(unpacked);
    const tar = spawnSync('tar', ['-xzf', sea.archive, '-C', unpacked], { encoding: 'utf8' });
    assert.equal(tar.status, 0, tar.stderr);
    assert.deepEqual(readdirSync(unpacked).sort(), [...ARCHIVE_FILES].sort());
    for (const file of nonEmpty(platform.files, 'files of the krew platform'))
      assert.ok(existsSync(path.join(unpacked, file.from)), file.from);
    const krewBin = path.join(work, 'krew-bin');
    await mkdir(krewBin);
    await symlink(path.join(unpacked, platform.bin), path.join(krewBin, 'kubectl-kubediff'));
    const version = await runKubediffToCompletion(['kubediff', 'version'], {
      command: kubectl,
      env: onPath([krewBin], { HOME: home }),
    });
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, new RegExp(`^kubediff ${manifest.version} `));
  });
});

function lockfile(): { packages: Record<string, { version?: string }> } {
  return JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
}

/** A Node on this machine's PATH that `engines` does not allow, if any. */
function olderNode(): { path: string; version: string } | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'node');
    if (!dir || !existsSync(candidate)) continue;
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^v/, '');
    const [major = 0, minor = 0] = version.split('.').map(Number);
    const allowed = major >= 25 || (major === 24 && minor >= 6) || (major === 22 && minor >= 22);
    if (!allowed) return { path: candidate, version };
  }
  return undefined;
}
