// What the settings of every HTTP receiver share: a URL from a flag or the environment checked (its
// secret path never echoed), `Name: value` header lines parsed (values never echoed), and the reader of
// the files a sink entry names (a CA, a key, a password).

import { UsageError } from '../../util/errors.ts';
import { parseHttpUrl, shownUrl } from '../../util/url.ts';
import type { SinkFileReader } from '../component.ts';
import type { HttpTls } from './http.ts';
import { isHeaderName, isReservedHeader } from './receiver-checks.ts';

/** 'Name: value' lines; the value is never echoed in an error (it may be a credential). */
export function parseHeaders(lines: readonly string[], source: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line.trim() : line.slice(0, colon).trim();
    const value = colon < 0 ? '' : line.slice(colon + 1).trim();
    if (colon < 0 || !isHeaderName(name)) {
      // A flag's text is the user's own to see; a line of the environment variable may be a secret.
      const what = source.startsWith('--')
        ? `${source} "${name.length > 40 ? `${name.slice(0, 40)}…` : name}"`
        : `${source} (line ${index + 1})`;
      throw new UsageError(`invalid ${what}: use Name: value, for example "X-Team: sre".`);
    }
    if (isReservedHeader(name)) throw new UsageError(`invalid ${source}: kubediff sets ${name} itself.`);
    if (/[\r\n\0]/.test(value))
      throw new UsageError(`invalid ${source} ${name}: the value has a line break.`);
    headers[name.toLowerCase()] = value;
  }
  return headers;
}

/**
 * What is wrong with a receiver's URL, in one wording for flags, variables and the config file; undefined
 * for an http(s) URL without credentials. `shown`: the value as a message may show it (never whole: a
 * webhook URL's path is its secret; shownUrl()). `credentials`: where they go instead of `user:password@`,
 * which the HTTP client never sends (the message never shows them).
 */
export function httpUrlProblem(text: string, shown: string, credentials = 'remove them'): string | undefined {
  const { problem } = parseHttpUrl(text);
  if (problem?.kind === 'not-a-url') return `expected an http:// or https:// URL, got ${shown}`;
  if (problem?.kind === 'scheme') return `expected an http:// or https:// URL, not ${problem.url.protocol}//`;
  if (problem?.kind === 'credentials')
    return `the URL holds credentials (user:password@), which are never sent; ${credentials}`;
  return undefined;
}

/** A receiver URL from a flag or an environment variable; a UsageError naming `where` otherwise. */
export function checkHttpUrl(text: string, where: string, credentials?: string): void {
  const problem = httpUrlProblem(text, shownUrl(text), credentials);
  if (problem) throw new UsageError(`${where}: ${problem}.`);
}

/** A sink entry's `tls:` files (CA, client certificate and key, in that order), read at startup. */
export function tlsFromFiles(
  tls: { caFile?: string; certFile?: string; keyFile?: string; serverName?: string },
  readFile: SinkFileReader,
): HttpTls {
  return {
    ...(tls.caFile ? { ca: readFile(['tls', 'caFile'], tls.caFile) } : {}),
    ...(tls.certFile ? { cert: readFile(['tls', 'certFile'], tls.certFile) } : {}),
    ...(tls.keyFile ? { key: readFile(['tls', 'keyFile'], tls.keyFile) } : {}),
    ...(tls.serverName ? { serverName: tls.serverName } : {}),
  };
}
