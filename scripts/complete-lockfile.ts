// The npm registry reachable from this project's machines serves only some of Biome's platform
// binaries (linux x64/arm64). npm then leaves the others out of package-lock.json, and `npm ci`
// refuses the lockfile as incomplete. This adds an entry for each missing platform binary, marked
// optional and limited to its os/cpu, so that `npm ci` accepts the lockfile and never fetches them
// here. Run after changing dependencies: `node scripts/complete-lockfile.ts`.
import { readFileSync, writeFileSync } from 'node:fs';

interface LockEntry {
  version?: string;
  license?: string;
  engines?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> };
const packages = lock.packages;
const biome = packages['node_modules/@biomejs/biome'];
if (!biome?.optionalDependencies) throw new Error('package-lock.json has no @biomejs/biome entry');

let added = 0;
for (const [name, version] of Object.entries(biome.optionalDependencies)) {
  const key = `node_modules/${name}`;
  if (packages[key]) continue;
  // @biomejs/cli-<os>-<cpu>[-musl]
  const [os, cpu, musl] = name.replace('@biomejs/cli-', '').split('-');
  if (!os || !cpu) throw new Error(`unexpected Biome platform package ${name}`);
  packages[key] = {
    version,
    cpu: [cpu],
    dev: true,
    ...(os === 'linux' ? { libc: [musl ? 'musl' : 'glibc'] } : {}),
    license: biome.license,
    optional: true,
    os: [os],
    ...(biome.engines ? { engines: biome.engines } : {}),
  };
  added++;
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`package-lock.json: ${added} platform entr${added === 1 ? 'y' : 'ies'} added\n`);
