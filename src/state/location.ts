// What a --state value names, without loading any store: a postgres:// URL is a PostgreSQL database,
// anything else an SQLite file. The PostgreSQL client is loaded only when one is used.

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
