// `kubediff migrate`: a --state file or database brought to this kubediff's schema ahead of a rollout.
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { groupedHelp } from '../help.ts';

export function migrateCommand(): Command {
  const command = newCommand('migrate', 'bring --state to the schema of this kubediff');
  addFlags(command, [
    { flags: '--state <file|url>', description: 'the state file or postgres:// URL' },
    { flags: '-c, --config <file>', description: 'take the state from this config file (state.path)' },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (flags: { state?: string; config?: string }) => {
    const { runMigrate } = await import('../migrate.ts');
    await runMigrate(flags, process.stdout);
  });
}
