// What the help says and how it is laid out, run through main() as the launcher runs it, with stdout not a
// terminal (so 80 columns, as commander assumes then): `watch --help` grouped by topic and short enough for
// a screen, `--help-all` with every flag, the story switch and its old spellings, a bare `kubediff`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT_OK, EXIT_USAGE } from '../../../src/cli/exit-codes.ts';
import { allCommands, buildProgram, main } from '../../../src/cli/main.ts';
import { nonEmpty } from '../../helpers/non-empty.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs main() with `args`, capturing stdout and stderr; `tty` says whether stdout is a terminal. */
async function run(args: string[], tty = false): Promise<Run> {
  const written = { stdout: '', stderr: '' };
  const originals = { stdout: process.stdout.write, stderr: process.stderr.write };
  const wasTTY = process.stdout.isTTY;
  for (const stream of ['stdout', 'stderr'] as const) {
    process[stream].write = ((chunk: string | Uint8Array) => {
      written[stream] += String(chunk);
      return true;
    }) as typeof process.stdout.write;
  }
  process.stdout.isTTY = tty;
  try {
    const code = await main(['node', 'kubediff', ...args]);
    return { code, ...written };
  } finally {
    process.stdout.write = originals.stdout;
    process.stderr.write = originals.stderr;
    process.stdout.isTTY = wasTTY;
  }
}

/** The headings and the flags of a help text, in order: `Sinks:`, `--webhook <url>`, … */
function outline(help: string): string[] {
  return help
    .split('\n')
    .filter((line) => /^\S.*:$/.test(line) || line.startsWith('  -'))
    .filter((line) => !line.startsWith('Usage:'))
    .map((line) => (line.startsWith('  ') ? (line.trim().split(/\s{2,}/)[0] ?? '') : line));
}

/** The lines that are no flag's or command's own: a description wrapped onto a second line. */
function continuationLines(help: string): string[] {
  return help.split('\n').filter((line) => line.startsWith('   '));
}

describe('`kubediff watch --help`', () => {
  it('groups the main flags by topic, each group saying how many more --help-all lists', async () => {
    const help = await run(['watch', '--help']);
    assert.equal(help.code, EXIT_OK);
    assert.equal(help.stderr, '');
    assert.deepEqual(outline(help.stdout), [
      'Cluster selection:',
      '--kubeconfig <file>',
      '--context <name>',
      '--all-contexts',
      '-n, --namespace <ns>',
      '--exclude-namespace <ns>',
      '-r, --resource <name>',
      '--exclude-resource <name>',
      '-l, --selector <selector>',
      'What to report (1 more with --help-all):',
      '--events <types>',
      '--initial',
      '--ignore <path>',
      '--status',
      '--preset <name>',
      'Output (1 more with --help-all):',
      '-o, --output <format>',
      '--cluster-name <name>',
      'Sinks (18 more with --help-all):',
      '--webhook <url>',
      '--slack-webhook <url>',
      '--dead-letter <file>',
      'Stories (3 more with --help-all):',
      '--stories',
      '--no-stories <platforms>',
      'State and UI (5 more with --help-all):',
      '--state <file|url>',
      '--ui <addr>',
      'Running in a cluster (7 more with --help-all):',
      '--listen <addr>',
      '--leader-elect',
      '--log-format <format>',
      'Who changed it (13 more with --help-all):',
      '--ignore-manager <name>',
      '--ignore-user <glob>',
      '--audit-listen <addr>',
      '--admission-listen <addr>',
      'Options:',
      '-c, --config <file>',
      '--debug',
      '--help-all',
      '-h, --help',
    ]);
    const lines = help.stdout.trimEnd().split('\n');
    assert.equal(lines[0], 'Usage: kubediff watch [options]');
    assert.equal(lines.at(-1), 'The main flags: --help-all lists every one; docs/cli.md describes each.');
    // A screen: one line per flag, none wider than 80 columns.
    assert.deepEqual(continuationLines(help.stdout), []);
    assert.deepEqual(
      lines.filter((line) => line.length > 80),
      [],
    );
    assert.ok(lines.length <= 56, `${lines.length} lines:\n${help.stdout}`);
  });

  it('--help-all lists every flag the command takes, but not the old spellings', async () => {
    const all = await run(['watch', '--help-all']);
    assert.equal(all.code, EXIT_OK);
    const [watch] = (await buildProgram(['watch'])).commands;
    assert.ok(watch);
    const listed = outline(all.stdout).filter((entry) => !entry.endsWith(':'));
    const visible = watch.options.filter((option) => !option.hidden).map((option) => option.flags);
    assert.deepEqual(listed, [
      ...visible.filter((flags) => flags !== '--help-all'),
      '--help-all',
      '-h, --help',
    ]);
    // 84 flags, --help-all and --help.
    assert.equal(listed.length, 86);
    assert.ok(!outline(all.stdout).some((entry) => entry.includes('more with')));
    assert.doesNotMatch(all.stdout, /--no-(slack|teams|discord|mattermost|google-chat)-stories/);
    assert.match(all.stdout, /\ndocs\/cli\.md describes each flag in full\.\n$/);
  });
});

describe('the story switch', () => {
  it('takes chat platform names; anything else is one sentence and exit 2', async () => {
    const bad = await run(['watch', '--no-stories', 'slack,email']);
    assert.deepEqual(bad, {
      code: EXIT_USAGE,
      stdout: '',
      stderr:
        'kubediff: invalid --no-stories "email": name chat platforms, comma-separated: slack, teams, discord, mattermost, google-chat.\n',
    });
    const missing = await run(['watch', '--no-stories']);
    assert.equal(missing.code, EXIT_USAGE);
    assert.match(missing.stderr, /^kubediff: option '--no-stories <platforms>' argument missing/);
  });

  it('the old spellings are accepted (watch goes on to read the kubeconfig)', async () => {
    for (const flag of ['--no-slack-stories', '--no-teams-stories', '--no-google-chat-stories']) {
      const result = await run(['watch', flag, '--kubeconfig', '/nonexistent/kubeconfig']);
      assert.equal(result.code, EXIT_USAGE, flag);
      assert.match(
        result.stderr,
        /^kubediff: kubeconfig file \/nonexistent\/kubeconfig does not exist/,
        flag,
      );
    }
  });
});

describe('`kubediff --help` and a bare `kubediff`', () => {
  it('lists every command on a line of its own, then what to start with', async () => {
    const help = await run(['--help']);
    assert.equal(help.code, EXIT_OK);
    const section = help.stdout.slice(help.stdout.indexOf('Commands:\n'));
    const commands = section
      .slice(0, section.indexOf('\n\n'))
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(' ')[0]);
    assert.deepEqual(commands, [
      'version',
      'watch',
      'resources',
      'history',
      'show',
      'diff',
      'blame',
      'why',
      'migrate',
      'fleet',
      'ui',
      'validate',
      'help',
    ]);
    assert.deepEqual(continuationLines(help.stdout), []);
    assert.match(help.stdout, /\nStart with `kubediff resources`, then `kubediff watch`\.\n/);
  });

  it('on a terminal, says what to run first', async () => {
    const bare = await run([], true);
    assert.equal(bare.code, EXIT_OK);
    assert.equal(bare.stderr, '');
    assert.match(bare.stdout, /^kubediff watches a Kubernetes cluster/);
    assert.match(bare.stdout, /\n {2}kubediff resources +what it would watch/);
    assert.match(bare.stdout, /\n {2}kubediff watch +report every change until Ctrl-C\n/);
  });

  it('elsewhere, prints the help on stderr and exits 0, as it always has', async () => {
    const bare = await run([], false);
    assert.equal(bare.code, EXIT_OK);
    assert.equal(bare.stdout, '');
    assert.match(bare.stderr, /^Usage: kubediff \[options\] \[command\]\n/);
  });
});

describe('every command', () => {
  it('is built only when the arguments name it, or for the help', async () => {
    const names = async (...args: string[]) => (await buildProgram(args)).commands.map((c) => c.name());
    const every = [
      'version',
      'watch',
      'resources',
      'history',
      'show',
      'diff',
      'blame',
      'why',
      'migrate',
      'fleet',
      'ui',
      'validate',
    ];
    assert.deepEqual(await names('watch', '--debug'), ['watch']);
    assert.deepEqual(await names('--debug', 'history', 'deploy'), ['history']);
    assert.deepEqual(await names('help', 'ui'), ['ui']);
    assert.deepEqual(await names(), every);
    assert.deepEqual(await names('--help'), every);
    assert.deepEqual(await names('frobnicate'), every);
  });

  it('has a help of one line per flag, within 80 columns, ending with the pointer to docs/cli.md', async () => {
    for (const command of nonEmpty(await allCommands(), 'commands')) {
      const help = await run([command.name(), '--help']);
      assert.equal(help.code, EXIT_OK, command.name());
      assert.deepEqual(continuationLines(help.stdout), [], command.name());
      assert.deepEqual(
        help.stdout.split('\n').filter((line) => line.length > 80),
        [],
        command.name(),
      );
      assert.match(help.stdout, /docs\/cli\.md/, command.name());
    }
  });

  it('has every help page within 80 columns, --help-all and the top-level help included', async () => {
    const pages: string[][] = [['--help'], ['help']];
    for (const command of await allCommands()) {
      pages.push([command.name(), '--help']);
      if (command.options.some((option) => option.long === '--help-all'))
        pages.push([command.name(), '--help-all']);
    }
    assert.ok(pages.some((args) => args.join(' ') === 'watch --help-all'));
    for (const args of pages) {
      const help = await run(args);
      const text = help.stdout || help.stderr;
      assert.equal(help.code, EXIT_OK, args.join(' '));
      assert.deepEqual(
        text.split('\n').filter((line) => line.length > 80),
        [],
        `kubediff ${args.join(' ')}`,
      );
    }
  });
});

describe('`kubediff watch --help-all`', () => {
  it('puts a description that does not fit beside its flag on lines of its own below it', async () => {
    const lines = (await run(['watch', '--help-all'])).stdout.split('\n');
    const at = lines.indexOf('  --leader-election-renew-deadline <duration>');
    assert.ok(at > 0, 'the longest flag stands alone on its line');
    const below = lines.slice(at + 1).findIndex((line) => !line.startsWith('      '));
    assert.ok(below >= 1, `its description follows, indented:\n${lines.slice(at, at + 4).join('\n')}`);
    // The flags that fit keep their descriptions beside them, in one column.
    assert.match(lines.join('\n'), /\n {2}--kubeconfig <file> +kubeconfig \(default/);
    // Where the description starts on a line with a flag and its description: `  --flag <x>   text`.
    const beside = lines
      .map((line) => /^( {2}-\S*(?: \S+)*? {2,})\S/.exec(line)?.[1]?.length)
      .filter((column) => column !== undefined);
    assert.ok(beside.length > 20);
    assert.equal(new Set(beside).size, 1, `one description column: ${[...new Set(beside)].join(', ')}`);
  });
});
