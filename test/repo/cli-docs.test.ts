// docs/cli.md against the commands' own definitions (the commander commands main() builds): every flag
// of every command, hidden old spellings included, is described in that command's section, under the
// heading of its help group; nothing is described that no command takes. Other docs pages link to
// docs/cli.md rather than keep flag tables of their own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Command, Option } from 'commander';
import { allCommands, buildProgram } from '../../src/cli/main.ts';
import { nonEmpty } from '../helpers/non-empty.ts';

const docsDir = new URL('../../docs/', import.meta.url);
const page = readFileSync(new URL('cli.md', docsDir), 'utf8');

/** The flags a table describes: the first cell of each row that starts with a flag (`| \`-n, --namespace <ns>\` |`). */
function tableFlags(text: string): string[] {
  return [...text.matchAll(/^\| `(-[^`]*)` \|/gm)].map((match) => (match[1] ?? '').replaceAll('\\|', '|'));
}

/** `## heading` → its text, up to the next heading of the same level. */
function sections(text: string, level: '##' | '###'): Map<string, string> {
  const parts = text.split(new RegExp(`^${level} `, 'm')).slice(1);
  return new Map(parts.map((part) => [part.slice(0, part.indexOf('\n')), part.slice(part.indexOf('\n'))]));
}

const commandSections = sections(page, '##');

/** Each help group of a command section (`### Sinks`) with the flags described under it. */
function groupFlags(name: string): Map<string, string[]> {
  const section = commandSections.get(`\`kubediff ${name}\``);
  assert.ok(section !== undefined, `docs/cli.md has no section "## \`kubediff ${name}\`"`);
  const groups = sections(section, '###');
  if (groups.size === 0) return new Map([['Options', tableFlags(section)]]);
  return new Map([...groups].map(([title, text]) => [title, tableFlags(text)]));
}

/** Where docs/cli.md must describe an option: under its help group's heading, or among the old spellings. */
function expectedGroup(option: Option): string {
  if (option.hidden) return 'Old spellings';
  return (option.helpGroupHeading ?? 'Options:').replace(/:$/, '');
}

/** A command's flags by group, as its definition declares them (its --help included). */
function declared(command: Command, grouped: boolean): Map<string, string[]> {
  const byGroup = new Map<string, string[]>();
  for (const option of [...command.options, { flags: '-h, --help', hidden: false } as Option]) {
    const group = grouped ? expectedGroup(option) : 'Options';
    byGroup.set(group, [...(byGroup.get(group) ?? []), option.flags]);
  }
  return byGroup;
}

describe('docs/cli.md', () => {
  it('has a section for each command and for no other', async () => {
    const names = (await allCommands()).map((command) => `\`kubediff ${command.name()}\``);
    assert.deepEqual(
      [...commandSections.keys()].filter((title) => title.startsWith('`kubediff')).sort(),
      ['`kubediff`', ...names].sort(),
    );
  });

  it("describes every flag of every command under its help group's heading, and no flag that does not exist", async () => {
    const described = new Map<string, string[]>();
    for (const command of nonEmpty(await allCommands(), 'commands')) {
      const documented = groupFlags(command.name());
      const grouped = [...documented.keys()].some((title) => title !== 'Options');
      // A group shared with an earlier command (resources' Cluster selection) refers to that one's table.
      for (const [title, flags] of documented) {
        if (flags.length === 0 && described.has(title)) documented.set(title, described.get(title) ?? []);
        else if (!described.has(title)) described.set(title, flags);
      }
      assert.deepEqual(
        new Map([...documented].map(([title, flags]) => [title, [...flags].sort()])),
        new Map([...declared(command, grouped)].map(([title, flags]) => [title, [...flags].sort()])),
        `kubediff ${command.name()}: the flags docs/cli.md describes, by heading, against the command's own`,
      );
    }
  });

  it("describes the root's flags", async () => {
    const program = await buildProgram(['--help']);
    assert.deepEqual(
      tableFlags(commandSections.get('`kubediff`') ?? '').sort(),
      [...program.options.map((option) => option.flags), '-h, --help'].sort(),
    );
  });

  it('is the only docs page with a table of flags; the others link to it', () => {
    const pages = readdirSync(docsDir).filter((name) => name.endsWith('.md') && name !== 'cli.md');
    for (const file of nonEmpty(pages, 'docs pages besides cli.md')) {
      const text = readFileSync(new URL(file, docsDir), 'utf8');
      assert.deepEqual(tableFlags(text), [], `docs/${file} describes flags; link to docs/cli.md instead`);
    }
  });
});
