// `kubediff fleet status`: who watches which cluster of a fleet, since when and how far behind, and the
// replicas with their heartbeats (docs/fleets.md).
import { Argument, type Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import type { FleetStatusFlags } from '../fleet-status.ts';
import { groupedHelp } from '../help.ts';

export function fleetCommand(): Command {
  const command = newCommand('fleet', "a fleet's replicas and who watches which cluster").addArgument(
    new Argument('<action>', 'status: who watches which cluster').choices(['status']),
  );
  addFlags(command, [
    { flags: '--state <url>', description: 'the postgres:// URL the fleet records in' },
    { flags: '--fleet <name>', description: 'the fleet (--fleet of its replicas)' },
    { flags: '-c, --config <file>', description: 'take the state and the fleet from this config file' },
    { flags: '--moves <n>', description: 'show this many of the last moves (default: 20)' },
    {
      flags: '-o, --output <format>',
      description: 'json or pretty (default: pretty)',
      choices: ['json', 'pretty'],
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (_action: 'status', flags: FleetStatusFlags) => {
    const { runFleetStatus } = await import('../fleet-status.ts');
    await runFleetStatus(flags, process.stdout);
  });
}
