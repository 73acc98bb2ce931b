// `kubediff migrate --state <file|postgres://…>`: brings the state to this kubediff's schema. `watch`
// migrates at start too; this lets an operator do it ahead of a rollout (and lets `history` run on a
// database no `watch` of this version has opened yet).
import type { Writable } from 'node:stream';
import { isPostgresUrl } from '../state/location.ts';
import { SqliteDatabase } from '../state/sqlite-database.ts';
import { SCHEMA_VERSION } from '../state/sqlite-migrations.ts';
import { stateLocation } from './state-location.ts';

export async function runMigrate(
  flags: { state?: string; config?: string },
  stdout: Writable,
): Promise<void> {
  const { path, passwordFile } = stateLocation(
    flags,
    'migrate needs --state <file|postgres://…> (or -c with a config file that sets state.path).',
  );
  if (isPostgresUrl(path)) {
    const { migratePostgres } = await import('../state/postgres-migrations.ts');
    const { label, from, to } = await migratePostgres({ url: path, passwordFile });
    stdout.write(
      from === to
        ? `${label} is at schema ${to} already.\n`
        : `migrated ${label} from schema ${from} to ${to}.\n`,
    );
    return;
  }
  SqliteDatabase.open(path).close();
  stdout.write(`the state file ${path} is at schema ${SCHEMA_VERSION}.\n`);
}
