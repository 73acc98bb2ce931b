// `kubediff history`: the changes a --state file or database recorded, newest last.
import type { Command } from 'commander';
import { VERDICTS } from '../../events/event.ts';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { groupedHelp } from '../help.ts';
import type { HistoryFlags } from '../history.ts';

export function historyCommand(): Command {
  const command = newCommand('history', 'print the changes --state recorded, newest last').argument(
    '[resource]',
    'only this type or object: deploy, deploy/web',
  );
  addFlags(command, [
    { flags: '--state <file|url>', description: 'the state file or postgres:// URL that watch writes' },
    { flags: '-c, --config <file>', description: 'take the state from this config file (state.path)' },
    {
      flags: '--cluster <name>',
      description: 'only this cluster, or a glob: prod-* (repeatable)',
      repeatable: true,
    },
    { flags: '-n, --namespace <ns>', description: 'only this namespace' },
    { flags: '--user <glob>', description: 'only changes by this user (from the audit webhook)' },
    { flags: '--since <duration>', description: 'only events newer than this: 30m, 2h, 7d' },
    { flags: '--tail <n>', description: 'only the newest n events' },
    { flags: '--manager <name>', description: 'only changes by this field manager: kubectl-*' },
    {
      flags: '--outcome <verdict>',
      description: 'only OUTCOMEs with this verdict: degraded, failed, …',
      choices: VERDICTS,
    },
    {
      flags: '-o, --output <format>',
      description: 'json or pretty (default: pretty on a terminal)',
      choices: ['json', 'pretty'],
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (resource: string | undefined, flags: HistoryFlags) => {
    const { runHistory } = await import('../history.ts');
    await runHistory(resource, flags, { stdout: process.stdout, isTTY: process.stdout.isTTY === true });
  });
}
