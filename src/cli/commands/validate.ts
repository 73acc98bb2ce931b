// `kubediff validate -c <file>`: every problem of a config file with its line and column.
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { groupedHelp } from '../help.ts';
import type { ValidateFlags } from '../validate.ts';

export function validateCommand(): Command {
  const command = newCommand('validate', 'check a config file: each problem, line, column');
  addFlags(command, [
    { flags: '-c, --config <file>', description: 'the YAML config file to check', mandatory: true },
    { flags: '--cluster', description: 'also check that the resource types it names exist' },
    {
      flags: '--kubeconfig <file>',
      description: "kubeconfig for --cluster (default: the file's)",
    },
    {
      flags: '--context <name>',
      description: "context for --cluster (default: the file's, else current)",
    },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (flags: ValidateFlags) => {
    const { runValidate } = await import('../validate.ts');
    const { httpFromEnvironment } = await import('../../config/tuning.ts');
    await runValidate(flags, {
      env: process.env,
      stdout: process.stdout,
      stderr: process.stderr,
      http: httpFromEnvironment(),
    });
  });
}
