// npm run image:sbom — the software bill of materials of the image scripts/image-build.ts built, as
// CycloneDX 1.5 JSON, read from the image's own root filesystem (not from the sources it was built from):
// - the Debian packages, from the control files in /var/lib/dpkg/status.d/ (the bases write them there,
//   as distroless does);
// - Node.js, from the manifest of the npm package its binary came from (/nodejs/package.json);
// - every npm package under /app/node_modules (nested ones too), from its package.json;
// - kubediff itself (/app/package.json) as the BOM's subject.
// Writes .cache/image/sbom.cdx.json; test/integration/release-artifacts.test.ts checks it against the
// lockfile and the bases' package list. `--tree <dir>` prints the SBOM of an npm install in <dir> instead
// (the release workflow's, for the single executable: `npm sbom --omit dev` leaves out packages that dev
// dependencies use too).
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  buildahOk,
  type ImageDescription,
  imageCacheDir,
  imageDescriptionFile,
} from '../test/helpers/containers.ts';

export interface SbomComponent {
  type: 'library' | 'operating-system' | 'application' | 'container';
  'bom-ref': string;
  name: string;
  version: string;
  purl?: string;
  description?: string;
  licenses?: { expression: string }[];
}

export interface CycloneDxBom {
  bomFormat: 'CycloneDX';
  specVersion: '1.5';
  serialNumber: string;
  version: 1;
  metadata: { timestamp: string; tools: { components: SbomComponent[] }; component: SbomComponent };
  components: SbomComponent[];
}

/** pkg:npm/name@version, the scope's @ encoded as the purl specification asks. */
export function npmPurl(name: string, version: string): string {
  return `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;
}

function debianPurl(name: string, version: string, arch: string): string {
  return `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=${arch}&distro=debian-12`;
}

async function debianComponents(rootfs: string): Promise<SbomComponent[]> {
  const dir = path.join(rootfs, 'var/lib/dpkg/status.d');
  if (!existsSync(dir)) return [];
  const components: SbomComponent[] = [];
  for (const file of (await readdir(dir)).sort()) {
    const control = await readFile(path.join(dir, file), 'utf8');
    const field = (name: string) => new RegExp(`^${name}: (.+)$`, 'm').exec(control)?.[1];
    const name = field('Package');
    const version = field('Version');
    if (!name || !version) continue;
    const purl = debianPurl(name, version, field('Architecture') ?? 'all');
    components.push({ type: 'library', 'bom-ref': purl, name, version, purl });
  }
  return components;
}

interface Manifest {
  name?: string;
  version?: string;
  license?: string;
  description?: string;
}

function npmComponent(manifest: Manifest): SbomComponent | undefined {
  if (!manifest.name || !manifest.version) return undefined;
  const purl = npmPurl(manifest.name, manifest.version);
  return {
    type: 'library',
    'bom-ref': purl,
    name: manifest.name,
    version: manifest.version,
    purl,
    ...(manifest.license ? { licenses: [{ expression: manifest.license }] } : {}),
  };
}

/** Every package in a node_modules folder, scoped and nested ones included, each name@version once. */
async function npmComponents(nodeModules: string, into: Map<string, SbomComponent>): Promise<void> {
  if (!existsSync(nodeModules)) return;
  for (const entry of await readdir(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dirs = entry.name.startsWith('@')
      ? (await readdir(path.join(nodeModules, entry.name))).map((name) =>
          path.join(nodeModules, entry.name, name),
        )
      : [path.join(nodeModules, entry.name)];
    for (const dir of dirs) {
      const manifestFile = path.join(dir, 'package.json');
      if (!existsSync(manifestFile)) continue;
      const component = npmComponent(JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest);
      if (component) into.set(component['bom-ref'], component);
      await npmComponents(path.join(dir, 'node_modules'), into);
    }
  }
}

/** The SBOM of the root filesystem `rootfs` of an image; `subject` names the image (e.g. its digest). */
export async function imageSbom(
  rootfs: string,
  subject: { name: string; digest?: string },
): Promise<CycloneDxBom> {
  const components = await debianComponents(rootfs);
  const nodeManifest = path.join(rootfs, 'nodejs/package.json');
  if (existsSync(nodeManifest)) {
    const node = npmComponent(JSON.parse(await readFile(nodeManifest, 'utf8')) as Manifest);
    if (node) components.push({ ...node, type: 'application', description: 'Node.js (/nodejs/bin/node)' });
  }
  return treeSbom(path.join(rootfs, 'app'), subject, components, 'container');
}

/**
 * The SBOM of an installed npm tree (`dir`/package.json, `dir`/node_modules), e.g. what the single
 * executable carries, after `components` found elsewhere.
 */
export async function treeSbom(
  dir: string,
  subject: { name: string; digest?: string },
  components: SbomComponent[] = [],
  type: SbomComponent['type'] = 'application',
): Promise<CycloneDxBom> {
  const app = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as Manifest;
  const npm = new Map<string, SbomComponent>();
  await npmComponents(path.join(dir, 'node_modules'), npm);
  components.push(...[...npm.values()].sort((a, b) => a['bom-ref'].localeCompare(b['bom-ref'])));
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    serialNumber: `urn:uuid:${randomUUID()}`,
    version: 1,
    metadata: {
      timestamp: new Date().toISOString(),
      tools: {
        components: [
          {
            type: 'application',
            'bom-ref': 'kubediff-image-sbom',
            name: 'kubediff scripts/image-sbom.ts',
            version: app.version ?? '',
          },
        ],
      },
      component: {
        type,
        'bom-ref': subject.digest ? `${subject.name}@${subject.digest}` : subject.name,
        name: subject.name,
        version: subject.digest ?? app.version ?? '',
        description: `kubediff ${app.version ?? ''}`,
      },
    },
    components,
  };
}

/** Mounts `image` of the storage and runs `use` on its root filesystem; unmounts and removes afterwards. */
export async function withImageRootfs<T>(
  image: string,
  use: (rootfs: string) => Promise<T>,
  options: Parameters<typeof buildahOk>[1] = {},
): Promise<T> {
  const container = await buildahOk(['from', '--pull=never', image], options);
  try {
    return await use(await buildahOk(['mount', container], options));
  } finally {
    await buildahOk(['rm', container], options).catch(() => '');
  }
}

if (import.meta.main) {
  try {
    const tree = process.argv.indexOf('--tree');
    if (tree !== -1) {
      // `node scripts/image-sbom.ts --tree <dir>`: the SBOM of an npm install there, on stdout.
      const dir = process.argv[tree + 1];
      if (!dir) throw new Error('image:sbom: --tree needs the folder of an npm install.');
      console.log(JSON.stringify(await treeSbom(path.resolve(dir), { name: 'kubediff' }), null, 2));
      process.exit();
    }
    if (!existsSync(imageDescriptionFile))
      throw new Error('image:sbom: no image is built yet: run `npm run image:build` first.');
    const built = JSON.parse(await readFile(imageDescriptionFile, 'utf8')) as ImageDescription;
    const bom = await withImageRootfs(built.image, (rootfs) => imageSbom(rootfs, { name: built.image }));
    const file = path.join(imageCacheDir, 'sbom.cdx.json');
    await writeFile(file, `${JSON.stringify(bom, null, 2)}\n`);
    const kinds = new Map<string, number>();
    for (const component of bom.components) {
      const kind = component.purl?.split('/')[0] ?? 'other';
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    console.log(
      `image:sbom: ${path.relative(process.cwd(), file)}: ${bom.components.length} components (${[...kinds].map(([kind, count]) => `${count} ${kind}`).join(', ')})`,
    );
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
