// The help of every command: flags under their groups' headings (docs/cli.md has a section per group). A
// command with many flags keeps `--help` to a screen: each group shows its main flags and says how many
// more `--help-all` lists. Descriptions are one line each; defaults and choices are in them, written for
// people, so commander's own suffixes are left out. No line is wider than 80 columns: a description that
// does not fit beside its flag goes below it, wrapped (`--help-all` lists long flags that widen the column).
import { type Command, Help, Option } from 'commander';
import { GENERAL_HEADING, isMoreOption } from './flags/flag-spec.ts';

/** The page that describes every command and flag in full. */
export const CLI_DOCS = 'docs/cli.md';

/** The widest a help line gets, on a wider terminal too. */
export const HELP_COLUMNS = 80;

/** The widest the flag column gets: a longer flag has its description below it. */
const FLAG_COLUMN = 26;

/** Where a description that goes below its flag starts. */
const BELOW_INDENT = ' '.repeat(6);

/**
 * Configures the help of `command` (call it once its flags are added): grouped, brief when some flags
 * are marked `more` (with `--help-all` for the whole list), and ending with the pointer to docs/cli.md.
 */
export function groupedHelp(command: Command): Command {
  const plain = new Help();
  let everyFlag = false;
  const hasMore = command.options.some((option) => isMoreOption(option) && !option.hidden);
  command.configureHelp({
    visibleOptions: (cmd) => plain.visibleOptions(cmd).filter((option) => everyFlag || !isMoreOption(option)),
    optionDescription: (option) => option.description,
    padWidth: (cmd, helper) => Math.min(plain.padWidth(cmd, helper), FLAG_COLUMN),
    formatItem: (term, termWidth, description, helper) => {
      const width = Math.min(helper.helpWidth ?? HELP_COLUMNS, HELP_COLUMNS);
      const beside = 2 + termWidth + 2 + helper.displayWidth(description);
      if (description === '' || (helper.displayWidth(term) <= termWidth && beside <= width)) {
        return plain.formatItem(term, termWidth, description, helper);
      }
      const below = helper
        .boxWrap(description, width - BELOW_INDENT.length)
        .split('\n')
        .map((line) => BELOW_INDENT + line);
      return [`  ${term}`, ...below].join('\n');
    },
    formatItemList: (heading, items, helper) =>
      plain.formatItemList(headingOf(command, heading, everyFlag), items, helper),
  });
  if (hasMore) {
    command.addOption(
      new Option('--help-all', 'list every flag, not only the main ones').helpGroup(GENERAL_HEADING),
    );
    // Before any other check, as --help is: the list is what the user asked for.
    command.on('option:help-all', () => {
      everyFlag = true;
      command.help();
    });
  }
  command.addHelpText('after', () =>
    hasMore && !everyFlag
      ? `\nThe main flags: --help-all lists every one; ${CLI_DOCS} describes each.`
      : `\n${CLI_DOCS} describes each flag in full.`,
  );
  return command;
}

/** `Sinks (12 more with --help-all):` for a heading while some of its flags are left out. */
function headingOf(command: Command, heading: string, everyFlag: boolean): string {
  if (everyFlag) return heading;
  const more = command.options.filter(
    (option) => option.helpGroupHeading === heading && isMoreOption(option) && !option.hidden,
  ).length;
  return more > 0 ? `${heading.replace(/:$/, '')} (${more} more with --help-all):` : heading;
}
