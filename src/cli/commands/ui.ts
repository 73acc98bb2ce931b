// `kubediff ui`: the history of a --state file or PostgreSQL database as a web page, until stopped.
import type { Command } from 'commander';
import { parseListenAddress } from '../../util/http-server.ts';
import { stderrLogger } from '../../util/log.ts';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { groupedHelp } from '../help.ts';
import { stopRequested } from '../stop-request.ts';
import type { UiFlags } from '../ui.ts';

type UiCommandFlags = UiFlags & { debug?: boolean; logFormat?: 'text' | 'json' | 'auto' };

export function uiCommand(): Command {
  const command = newCommand('ui', 'serve the --state history as a web page');
  addFlags(command, [
    { flags: '--state <file|url>', description: 'the state file or postgres:// URL that watch writes' },
    { flags: '-c, --config <file>', description: 'take the state and ui: settings from this config file' },
    { flags: '--listen <addr>', description: 'serve here (default: ui.listen, else 127.0.0.1:8080)' },
    {
      flags: '--token-file <file>',
      description: "require this file's token (Bearer) on the API",
    },
    {
      flags: '--allow-no-token',
      description: 'serve other machines without a token',
    },
    {
      flags: '--log-format <format>',
      description: 'text, json or auto (json unless on a terminal)',
      choices: ['text', 'json', 'auto'],
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (flags: UiCommandFlags) => {
    if (flags.listen !== undefined) parseListenAddress(flags.listen);
    const log = stderrLogger({ debug: flags.debug === true, format: flags.logFormat });
    const { runUi } = await import('../ui.ts');
    await runUi(flags, { log, stopRequested: stopRequested(log) });
  });
}
