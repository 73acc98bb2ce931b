// `kubediff show <type>/<name> --at <when>`: the object as it was then, rebuilt from the history.
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { HISTORY_SOURCE, OBJECT_NAMESPACE } from '../flags/history-source.ts';
import { groupedHelp } from '../help.ts';
import type { ShowFlags } from '../object-history/show.ts';

export function showCommand(): Command {
  const command = newCommand('show', 'an object as it was at a time, from the history').argument(
    '<object>',
    'type/name: deploy/web, deployments.apps/web',
  );
  addFlags(command, [
    ...HISTORY_SOURCE,
    OBJECT_NAMESPACE,
    {
      flags: '--at <when>',
      description: 'a time, a duration ago (2h) or an event id; default now',
    },
    {
      flags: '-o, --output <format>',
      description: 'yaml (default) or json',
      choices: ['yaml', 'json'],
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (target: string, flags: ShowFlags) => {
    const { runShow } = await import('../object-history/show.ts');
    await runShow(target, flags, {
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: process.stdout.isTTY === true,
    });
  });
}
