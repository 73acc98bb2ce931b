// `kubediff ui --state <file|postgres://…> [--listen 127.0.0.1:8080] [--token-file <file>]`: the change
// history of a state file or a shared PostgreSQL history as a web page (docs/ui.md), until SIGINT or
// SIGTERM. Reads only, so it can run beside the `kubediff watch` processes that write it and shows what
// they record as they record it.
import { openTimelineReader } from '../state/open.ts';
import { UiServer } from '../ui/server.ts';
import { readTokenFile } from '../ui/token.ts';
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
  const location = stateLocation(
    flags,
    'ui needs --state <file|postgres://…> (or -c with a config file that sets state.path): what `kubediff watch --state` writes.',
  );
  requireStateFile(location.path);
  const token = flags.tokenFile ? readTokenFile(flags.tokenFile, '--token-file') : undefined;
  const reader = await openTimelineReader(location);
  try {
    const server = await UiServer.start(flags.listen, { reader, log: runtime.log, token });
    const signal = await runtime.stopRequested;
    runtime.log.info(`stopping on ${signal}.`);
    await server.close();
  } finally {
    await reader.close();
  }
}
