// What a --state value names, without loading any store: a postgres:// URL is a PostgreSQL database,
// anything else an SQLite file. The PostgreSQL client is loaded only when one is used.
import { readFileSync } from 'node:fs';
import { Credentials, secretCredentials } from '../util/credentials.ts';

/** True for a --state value that names a PostgreSQL database rather than a file. */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\//i.test(text.trim());
}

/** Where the database is, safe to print: scheme, host, port and database; never user or password. */
export function postgresLabel(url: string): string {
  try {
    const parsed = new URL(url);
    const host = parsed.host || process.env.PGHOST || 'localhost';
    const database = parsed.pathname.replace(/^\//, '') || process.env.PGDATABASE || '';
    return `postgres://${host}/${decodeURIComponent(database)}`;
  } catch {
    return 'postgres://(an invalid URL)';
  }
}

/**
 * The password a PostgreSQL --state sends (PGPASSWORD, state.passwordFile; a URL's, were it allowed),
 * for util/credentials.ts to keep out of logs: a server's error may quote it. A password file that
 * cannot be read is left out here: opening the store says why.
 */
export function stateCredentials(
  location: { path: string; passwordFile?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): Credentials {
  if (!isPostgresUrl(location.path)) return Credentials.none;
  const passwords: string[] = [];
  if (env.PGPASSWORD) passwords.push(env.PGPASSWORD);
  if (location.passwordFile) {
    try {
      passwords.push(readFileSync(location.passwordFile, 'utf8').replace(/\r?\n$/, ''));
    } catch {
      // Said when the store opens.
    }
  }
  try {
    const password = new URL(location.path).password;
    if (password) passwords.push(decodeURIComponent(password));
  } catch {
    // Not a URL: said when the store opens.
  }
  return Credentials.of(secretCredentials(...passwords));
}
