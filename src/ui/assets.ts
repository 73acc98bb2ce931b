// The page's files, all from the package (src/ui/web): no CDN, nothing fetched at run time. The
// front-end is plain TypeScript modules; Node strips their types once, when the server starts, and
// serves the result from memory (a few tens of KiB), so there is no build step and no bundler.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { extname, join } from 'node:path';
import { withoutExperimentalWarning } from '../util/experimental.ts';

export interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

// src/ui/web, also from the compiled dist/ui/ (the same depth): the page is served from its sources.
const WEB_DIR = join(import.meta.dirname, '..', '..', 'src', 'ui', 'web');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.ts': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Every file of the page by its URL path ('/' is index.html; modules keep their .ts names). */
export function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of readdirSync(WEB_DIR).sort()) {
    const type = CONTENT_TYPES[extname(file)];
    if (!type || file.endsWith('.d.ts') || file === 'tsconfig.json') continue;
    let text = readFileSync(join(WEB_DIR, file), 'utf8');
    if (file.endsWith('.ts')) {
      text = withoutExperimentalWarning(/stripTypeScriptTypes|Type Stripping/i, () =>
        stripTypeScriptTypes(text, { mode: 'strip' }),
      );
    }
    const body = Buffer.from(text);
    const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
    assets.set(file === 'index.html' ? '/' : `/assets/${file}`, { body, contentType: type, etag });
  }
  return assets;
}
