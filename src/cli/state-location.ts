// Where `history`, `ui` and `migrate` find the state: --state, or else the `state:` section of the
// config file given with -c (its path, and for PostgreSQL its password file).
import { existsSync } from 'node:fs';
import { loadConfigFile } from '../config/file.ts';
import type { ConfigInput } from '../config/schema.ts';
import { isPostgresUrl } from '../state/location.ts';
import type { StateLocation } from '../state/open.ts';
import { UsageError } from '../util/errors.ts';

/**
 * The state named by `--state` or by the config file's `state.path`; a UsageError that says `missing` when
 * neither names one.
 */
export function stateLocation(
  flags: { state?: string; config?: string },
  missing: string,
  config: ConfigInput | undefined = configFileOf(flags),
): StateLocation {
  const fromFile = config?.state;
  const path = flags.state?.trim() || fromFile?.path;
  if (!path) throw new UsageError(missing);
  return { path, passwordFile: fromFile?.passwordFile };
}

/** A state file to read must be there already (reading never creates one); a database URL is checked on connecting. */
export function requireStateFile(path: string): void {
  if (!isPostgresUrl(path) && !existsSync(path)) {
    throw new UsageError(
      `no state file at ${path}: run \`kubediff watch --state ${path}\` first, or pass the path it writes.`,
    );
  }
}

/** The config file given with -c, read and checked; undefined without -c. */
export function configFileOf(flags: { config?: string }): ConfigInput | undefined {
  return flags.config
    ? loadConfigFile(flags.config, process.env, { unsetVariables: 'warn' }).config
    : undefined;
}
