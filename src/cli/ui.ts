// `kubediff ui --state <file> [--listen 127.0.0.1:8080] [--token-file <file>]`: the change history of a
// state file as a web page (docs/ui.md), until SIGINT or SIGTERM. Opens the file read-only, so it can
// run beside the `kubediff watch` that writes it and shows what it records as it records it.
import { StateDatabase } from '../state/database.ts';
import { isPostgresUrl } from '../state/location.ts';
import { SqliteTimelineReader } from '../state/timeline-reader.ts';
import { UiServer } from '../ui/server.ts';
import { readTokenFile, UI_NEEDS_A_FILE } from '../ui/token.ts';
import { UsageError } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { requireStateFile, stateLocation } from './state-location.ts';

export interface UiFlags {
  state?: string;
  config?: string;
  listen: string;
  tokenFile?: string;
}

export async function runUi(
  flags: UiFlags,
  runtime: { log: Logger; stopRequested: Promise<string> },
): Promise<void> {
  const { path } = stateLocation(
    flags,
    'ui needs --state <file> (or -c with a config file that sets state.path): the file `kubediff watch --state` writes.',
  );
  if (isPostgresUrl(path)) throw new UsageError(UI_NEEDS_A_FILE);
  requireStateFile(path);
  const token = flags.tokenFile ? readTokenFile(flags.tokenFile, '--token-file') : undefined;
  const reader = new SqliteTimelineReader(StateDatabase.open(path, { readOnly: true }));
  try {
    const server = await UiServer.start(flags.listen, { reader, log: runtime.log, token });
    const signal = await runtime.stopRequested;
    runtime.log.info(`stopping on ${signal}.`);
    await server.close();
  } finally {
    reader.close();
  }
}
