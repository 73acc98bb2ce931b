// `kubediff why <type>/<name> [--at <when>]`: the changes that came before an object became unhealthy,
// from the history (docs/outcomes.md, "kubediff why").
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { HISTORY_SOURCE, OBJECT_NAMESPACE } from '../flags/history-source.ts';
import { groupedHelp } from '../help.ts';
import type { WhyFlags } from '../object-history/why.ts';

export function whyCommand(): Command {
  const command = newCommand('why', 'what changed before an object became unhealthy').argument(
    '<object>',
    'type/name: pod/web-5fc8c76ccf-x2v9k, deploy/web',
  );
  addFlags(command, [
    ...HISTORY_SOURCE,
    OBJECT_NAMESPACE,
    {
      flags: '--at <when>',
      description: 'look before: a time, 2h ago or an event id',
    },
    { flags: '--window <duration>', description: 'how far back before then to look (default: 1h)' },
    {
      flags: '-o, --output <format>',
      description: 'text (default) or json: one line per change',
      choices: ['text', 'json'],
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (target: string, flags: WhyFlags) => {
    const { runWhy } = await import('../object-history/why.ts');
    await runWhy(target, flags, {
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: process.stdout.isTTY === true,
    });
  });
}
