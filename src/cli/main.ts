// The command line: the commands, assembled; the arguments parsed; the exit code. Each command is a module
// of its own (src/cli/commands/) that declares its flags and help; only the one the arguments name is
// loaded. Every failure ends as one sentence on stderr and the documented exit code
// (src/cli/exit-codes.ts). Importing this module runs nothing: src/cli/entry.ts runs main() for the launcher.
import { Command } from 'commander';
import { EXIT_OK, reportError } from './exit-codes.ts';
import { FIRST_STEPS } from './first-steps.ts';
import { CLI_DOCS } from './help.ts';
import { handleStreamErrors } from './standard-streams.ts';
import { VERSION } from './version.ts';

export { mustExitAtOnce } from './standard-streams.ts';

/** Every command, by name, in the order `kubediff --help` lists them. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  version: async () => (await import('./commands/version.ts')).versionCommand(),
  watch: async () => (await import('./commands/watch.ts')).watchCommand(),
  resources: async () => (await import('./commands/resources.ts')).resourcesCommand(),
  history: async () => (await import('./commands/history.ts')).historyCommand(),
  show: async () => (await import('./commands/show.ts')).showCommand(),
  diff: async () => (await import('./commands/diff.ts')).diffCommand(),
  blame: async () => (await import('./commands/blame.ts')).blameCommand(),
  why: async () => (await import('./commands/why.ts')).whyCommand(),
  migrate: async () => (await import('./commands/migrate.ts')).migrateCommand(),
  fleet: async () => (await import('./commands/fleet.ts')).fleetCommand(),
  ui: async () => (await import('./commands/ui.ts')).uiCommand(),
  validate: async () => (await import('./commands/validate.ts')).validateCommand(),
};

/** Every command, each built afresh (for the help, and for the test that holds docs/cli.md to them). */
export function allCommands(): Promise<Command[]> {
  return Promise.all(Object.values(COMMANDS).map((build) => build()));
}

/**
 * The program for these arguments: with only the command they name when they name one (the others'
 * modules are not even loaded), else with every command, for the help and for "unknown command" and its
 * suggestion. The root takes no flag with a value, so the first argument that is not a flag is the
 * command, as commander reads it; `help <command>` names one too.
 */
export async function buildProgram(args: readonly string[]): Promise<Command> {
  const program = new Command('kubediff')
    .description('Watches a Kubernetes cluster and reports every change, field by field.')
    .version(`kubediff ${VERSION}`, '-v, --version', 'print the version')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .addHelpText(
      'after',
      `\nStart with \`kubediff resources\`, then \`kubediff watch\`.\nEvery command and flag in full: ${CLI_DOCS}.`,
    );
  const operands = args.filter((arg) => !arg.startsWith('-'));
  const named = operands[0] === 'help' ? operands[1] : operands[0];
  const build = named !== undefined && Object.hasOwn(COMMANDS, named) ? COMMANDS[named] : undefined;
  for (const command of build ? [await build()] : await allCommands()) program.addCommand(command);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes('--debug');
  handleStreamErrors();
  const args = argv.slice(2);
  // On a terminal, a bare `kubediff` says what to run first; elsewhere the help goes to stderr, exit 0.
  if (args.length === 0 && process.stdout.isTTY) {
    process.stdout.write(FIRST_STEPS);
    return EXIT_OK;
  }
  try {
    await (await buildProgram(args)).parseAsync(argv);
    return EXIT_OK;
  } catch (error) {
    return reportError(error, debug);
  }
}
