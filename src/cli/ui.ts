// `kubediff ui --state <file|postgres://…> [--listen 127.0.0.1:8080] [--token-file <file>]`: the change
// history of a state file or a shared PostgreSQL history as a web page (docs/ui.md), until SIGINT or
// SIGTERM. With -c, the state, the address and the token file may come from the config file (`state:`,
// `ui:`); the flags win. Reads only, so it can run beside the `kubediff watch` processes that write it
// and shows what they record as they record it.

import { stateCredentials } from '../state/location.ts';
import { openTimelineReader } from '../state/open.ts';
import { checkExposure } from '../ui/exposure.ts';
import { UiServer } from '../ui/server.ts';
import { readTokenFile } from '../ui/token.ts';
import { scrubbingLogger } from '../util/credentials.ts';
import { parseListenAddress } from '../util/http-server.ts';
import type { Logger } from '../util/log.ts';
import { configFileOf, requireStateFile, stateLocation } from './state-location.ts';

/** This machine only, unless told otherwise (docs/ui.md, "Safety"). */
const DEFAULT_LISTEN = '127.0.0.1:8080';

export interface UiFlags {
  state?: string;
  config?: string;
  listen?: string;
  tokenFile?: string;
  allowNoToken?: boolean;
}

export async function runUi(
  flags: UiFlags,
  runtime: { log: Logger; stopRequested: Promise<string> },
): Promise<void> {
  const config = configFileOf(flags);
  const location = stateLocation(
    flags,
    'ui needs --state <file|postgres://…> (or -c with a config file that sets state.path): what `kubediff watch --state` writes.',
    config,
  );
  const listen = flags.listen ?? config?.ui?.listen ?? DEFAULT_LISTEN;
  parseListenAddress(listen, flags.listen !== undefined ? '--listen' : 'ui.listen');
  const tokenFile = flags.tokenFile ?? config?.ui?.tokenFile;
  requireStateFile(location.path);
  const token = tokenFile
    ? readTokenFile(tokenFile, flags.tokenFile !== undefined ? '--token-file' : 'ui.tokenFile')
    : undefined;
  const exposure = {
    flag: flags.listen !== undefined ? '--listen' : 'ui.listen',
    token,
    allowNoToken: flags.allowNoToken === true,
  };
  checkExposure(listen, exposure);
  // A PostgreSQL server's error may quote the password (util/credentials.ts).
  const log = scrubbingLogger(runtime.log, stateCredentials(location));
  const reader = await openTimelineReader(location);
  try {
    const server = await UiServer.start(listen, { ...exposure, reader, log });
    const signal = await runtime.stopRequested;
    log.info(`stopping on ${signal}.`);
    await server.close();
  } finally {
    await reader.close();
  }
}
