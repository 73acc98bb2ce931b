// The entry of the single executable (scripts/build-sea.ts builds it): Node.js 24 with kubediff inside,
// for a machine without Node. It carries the tree `npm install -g kubediff` installs (compiled dist/,
// the UI's files, the production dependencies at their locked versions) as one compressed asset,
// unpacks it once into a cache folder of the user's own, then runs the same launcher from there, so the
// single executable runs the very files of the npm package. Node's single executable applications run one CommonJS script
// and read nothing from a virtual file system: unpacking is what lets every module, the SQLite worker
// thread and the optional native addon load as they do when installed.
//
// The folder: $KUBEDIFF_CACHE_DIR, else $XDG_CACHE_HOME/kubediff, else ~/.cache/kubediff, one
// subfolder per build (version and content digest), unpacked under a temporary name and renamed into
// place when complete, so that two starts at once, or one interrupted, never run a half-written tree.
// A folder someone else owns, or that others may write to, is refused: its code would run as this user.
// Plain CommonJS JavaScript: the single executable runs it as it is.
'use strict';

const { createHash, randomBytes } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sea = require('node:sea');
const { pathToFileURL } = require('node:url');
const zlib = require('node:zlib');

/** What the build recorded: `{ version, digest }` (scripts/build-sea.ts, APP_INFO). */
const info = JSON.parse(sea.getAsset('app.json', 'utf8'));

function fail(sentence) {
  process.stderr.write(`kubediff: ${sentence}\n`);
  process.exit(1);
}

function cacheRoot() {
  if (process.env.KUBEDIFF_CACHE_DIR) return path.resolve(process.env.KUBEDIFF_CACHE_DIR);
  if (process.env.XDG_CACHE_HOME) return path.join(path.resolve(process.env.XDG_CACHE_HOME), 'kubediff');
  const home = os.homedir();
  if (!home)
    fail('cannot tell where to unpack itself (no home folder); set KUBEDIFF_CACHE_DIR to a folder of yours.');
  return path.join(home, '.cache', 'kubediff');
}

/** Refuses a folder whose contents another user could have put there. */
function checkOwnFolder(dir) {
  const stat = fs.statSync(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid)
    fail(`${dir} belongs to another user; remove it, or set KUBEDIFF_CACHE_DIR to a folder of yours.`);
  if ((stat.mode & 0o022) !== 0)
    fail(`${dir} may be written by other users; remove it, or \`chmod go-w\` it, or set KUBEDIFF_CACHE_DIR.`);
}

/**
 * The asset's layout (written by scripts/build-sea.ts, packApp): brotli over [4-byte big-endian
 * length of the index][index JSON: [{ path, mode, size }…]][every file's bytes, in index order].
 */
function unpack(into) {
  const payload = zlib.brotliDecompressSync(Buffer.from(sea.getRawAsset('app.br')));
  const digest = createHash('sha256').update(payload).digest('hex').slice(0, 16);
  if (digest !== info.digest)
    fail(`this executable is damaged (its contents do not match digest ${info.digest}); download it again.`);
  const indexLength = payload.readUInt32BE(0);
  const index = JSON.parse(payload.subarray(4, 4 + indexLength).toString('utf8'));
  let offset = 4 + indexLength;
  for (const entry of index) {
    const file = path.join(into, entry.path);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
    fs.writeFileSync(file, payload.subarray(offset, offset + entry.size), { mode: entry.mode });
    offset += entry.size;
  }
}

/** The unpacked tree of this build: unpacked now unless an earlier start did it. */
function appFolder() {
  const root = cacheRoot();
  try {
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  } catch (error) {
    fail(
      `cannot create ${root} to unpack itself into (${error.code ?? error.message}); set KUBEDIFF_CACHE_DIR to a folder of yours.`,
    );
  }
  checkOwnFolder(root);
  const dir = path.join(root, `app-${info.version}-${info.digest}`);
  if (fs.existsSync(dir)) {
    checkOwnFolder(dir);
    return dir;
  }
  const partial = `${dir}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.mkdirSync(partial, { mode: 0o755 });
    unpack(partial);
    fs.renameSync(partial, dir);
  } catch (error) {
    fs.rmSync(partial, { recursive: true, force: true });
    // Another start unpacked the same build first: use that one.
    if (!fs.existsSync(dir))
      fail(
        `cannot unpack itself into ${root} (${error.code ?? error.message}); set KUBEDIFF_CACHE_DIR to a folder with room.`,
      );
  }
  return dir;
}

const launcher = path.join(appFolder(), 'bin', 'kubediff.js');
// The launcher reads its arguments from argv[2] on, as when Node runs it as a script.
process.argv[1] = launcher;
import(pathToFileURL(launcher).href).catch((error) => fail(`cannot start (${error.message}).`));
