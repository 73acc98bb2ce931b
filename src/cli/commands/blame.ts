// `kubediff blame <type>/<name> [--at <when>]`: each line of the object with when it last changed and who
// changed it.
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { HISTORY_SOURCE, OBJECT_NAMESPACE } from '../flags/history-source.ts';
import { groupedHelp } from '../help.ts';
import type { BlameFlags } from '../object-history/blame.ts';

export function blameCommand(): Command {
  const command = newCommand('blame', 'an object, each line with who changed it last').argument(
    '<object>',
    'type/name: deploy/web, deployments.apps/web',
  );
  addFlags(command, [
    ...HISTORY_SOURCE,
    OBJECT_NAMESPACE,
    { flags: '--at <when>', description: 'a time, a duration ago (2h) or an event id; default now' },
    {
      flags: '-o, --output <format>',
      description: 'text (default) or json: one line per line',
      choices: ['text', 'json'],
    },
    { flags: '--kubeconfig <file>', description: 'for the managedFields of lines older than the history' },
    {
      flags: '--context <name>',
      description: 'the context to read them from (default: --cluster)',
    },
    { flags: '--offline', description: 'never ask the cluster: the history alone' },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (target: string, flags: BlameFlags) => {
    const { runBlame } = await import('../object-history/blame.ts');
    await runBlame(target, flags, {
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: process.stdout.isTTY === true,
    });
  });
}
