// The command line: the commands, their flags, and what each runs. Every failure ends as one sentence
// on stderr and the documented exit code (src/cli/exit-codes.ts). Importing this module runs nothing:
// src/cli/entry.ts runs main() for the launcher.
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { addAuditFlags } from '../config/audit-settings.ts';
import {
  addServiceFlags,
  type RawServiceFlags,
  serviceOptionsFromFlags,
} from '../config/service-settings.ts';
import type { RawWatchFlags } from '../config/watch-settings.ts';
import { parseListenAddress } from '../service/health-server.ts';
import { checkExposure } from '../ui/exposure.ts';
import { readTokenFile } from '../ui/token.ts';
import { UsageError } from '../util/errors.ts';
import { stderrLogger } from '../util/log.ts';
import { printable } from '../util/terminal-text.ts';
import { EXIT_FAILURE, EXIT_OK, reportError } from './exit-codes.ts';
import type { HistoryFlags } from './history.ts';
import type { UiFlags } from './ui.ts';

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const VERSION = packageJson.version;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The flags `watch` and `resources` share: which cluster, which resources. */
function addSelectionFlags(command: Command, options: { severalContexts?: boolean } = {}): Command {
  command.option(
    '--kubeconfig <file>',
    'kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)',
  );
  if (options.severalContexts) {
    // `watch` watches several clusters in one process (README, "Several clusters").
    command
      .option(
        '--context <name>',
        'kubeconfig context to watch (default: the current context); repeat it to watch several clusters',
        collect,
      )
      .option('--all-contexts', 'watch every context of the kubeconfig, each as its own cluster');
  } else {
    command.option('--context <name>', 'kubeconfig context to use (default: the current context)');
  }
  return command
    .option('-n, --namespace <ns>', 'only this namespace (repeatable, or comma-separated)', collect)
    .option('--exclude-namespace <ns>', 'skip this namespace (repeatable, or comma-separated)', collect)
    .option(
      '-r, --resource <name>',
      'only this resource type, as kubectl names it: pods, deploy, deployments.apps, widgets.example.com (repeatable)',
      collect,
    )
    .option('--exclude-resource <name>', 'skip this resource type (repeatable)', collect)
    .option('-l, --selector <selector>', 'only objects whose labels match, e.g. app=web,tier!=cache')
    .option('-c, --config <file>', 'read settings from this YAML file (see config.example.yaml); flags win')
    .option('--preset <name>', 'noise preset: default, quiet or everything (see docs/config.md)')
    .option('--debug', 'print debugging details and stack traces');
}

/**
 * Each command's module is imported when that command runs, after its flags are checked: the kube
 * client's dependencies (@kubernetes/client-node alone takes about 0.4 s to import) are then paid only
 * by a command that talks to a cluster, not by `--help`, `version` or a mistyped flag.
 */
function buildProgram(): Command {
  const program = new Command('kubediff')
    .description('Watches a Kubernetes cluster and reports every change, field by field.')
    .version(`kubediff ${VERSION}`, '-v, --version', 'print the version')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ outputError: () => {} });

  program
    .command('version')
    .description('print the version of kubediff and of the Node.js running it')
    .action(() => {
      process.stdout.write(`kubediff ${VERSION} (node ${process.versions.node})\n`);
    });

  const watch = addSelectionFlags(
    program.command('watch').description('report every change in the cluster until stopped (Ctrl-C)'),
    { severalContexts: true },
  )
    .option('--events <types>', 'only these event types: added,updated,deleted (default: all three)')
    .option('--initial', 'report every existing object as ADDED at startup (default: a silent baseline)')
    .option(
      '--ignore <path>',
      'ignore changes at this JSON Pointer and below, e.g. /spec/replicas; * matches one segment (repeatable)',
      collect,
    )
    .option(
      '--ignore-manager <name>',
      'do not report changes made by this field manager; globs: kube-controller-manager, argocd-* (repeatable)',
      collect,
    )
    .option('--status', 'report changes under /status too (ignored by default)')
    .option('--explain', 'say on stderr, for every event and every sink, why it was delivered or dropped')
    .addOption(
      new Option(
        '-o, --output <format>',
        'json (one event per line), pretty (default on a terminal), or none (only Slack and webhooks)',
      ).choices(['json', 'pretty', 'none']),
    )
    .option(
      '--cluster-name <name>',
      'the "cluster" field of every event (default: the kubeconfig context name)',
    )
    .option(
      '--webhook <url>',
      'also POST every event as JSON to this URL (repeatable); signed when $KUBEDIFF_WEBHOOK_SECRET is set',
      collect,
    )
    .option(
      '--webhook-header <header>',
      'add this header to webhook requests, "Name: value" (repeatable; secret ones in $KUBEDIFF_WEBHOOK_HEADERS)',
      collect,
    )
    .option(
      '--webhook-batch <n>',
      'send webhooks JSON arrays of up to n events (default: one event per request)',
    )
    .option('--webhook-timeout <duration>', 'time limit of one webhook request (default: 10s)')
    .option(
      '--slack-webhook <url>',
      'also post changes to Slack through this incoming webhook (or set $KUBEDIFF_SLACK_WEBHOOK)',
    )
    .option(
      '--slack-channel <channel>',
      'also post changes to this Slack channel as a bot; the token comes from $KUBEDIFF_SLACK_TOKEN',
    )
    .option(
      '--teams-webhook <url>',
      'also post to Microsoft Teams through a Workflows webhook (or $KUBEDIFF_TEAMS_WEBHOOK)',
    )
    .option(
      '--discord-webhook <url>',
      'also post to Discord through a channel webhook (or $KUBEDIFF_DISCORD_WEBHOOK)',
    )
    .option(
      '--mattermost-webhook <url>',
      'also post to Mattermost through an incoming webhook (or $KUBEDIFF_MATTERMOST_WEBHOOK)',
    )
    .option(
      '--google-chat-webhook <url>',
      'also post to a Google Chat space through its webhook (or $KUBEDIFF_GOOGLE_CHAT_WEBHOOK)',
    )
    .option(
      '--kafka-brokers <host:port,...>',
      'also produce every event to Kafka through these brokers (SASL from $KUBEDIFF_KAFKA_USERNAME/PASSWORD)',
    )
    .option('--kafka-topic <topic>', 'the Kafka topic of --kafka-brokers')
    .option('--stories', 'pretty output: one story per root owner (a rollout) instead of one block per event')
    .option(
      '--story-window <duration>',
      'a story closes once its owner has been quiet this long (default: 5s)',
    )
    .option(
      '--story-max-length <duration>',
      'a story open this long is told, and goes on in the next (default: 1m)',
    )
    .option('--no-slack-stories', 'post to Slack one message per event (or digest) instead of one per story')
    .option('--no-teams-stories', 'post to Teams one message per event (or digest) instead of one per story')
    .option(
      '--no-discord-stories',
      'post to Discord one message per event (or digest) instead of one per story',
    )
    .option(
      '--no-mattermost-stories',
      'post to Mattermost one message per event (or digest) instead of one per story',
    )
    .option(
      '--no-google-chat-stories',
      'post to Google Chat one message per event (or digest) instead of one per story',
    )
    .option('--webhook-stories', 'POST one STORY payload per story (with its events) instead of each event')
    .option(
      '--dead-letter <file>',
      'append events that Slack, a webhook, Kafka or a chat platform did not take to this JSONL file',
    )
    .option(
      '--dead-letter-max-size <size>',
      'rotate the dead-letter file when it reaches this size (default: 10MB; docs/sinks.md)',
    )
    .option(
      '--dead-letter-max-files <n>',
      'keep at most this many dead-letter files, the rotated ones included; the oldest is deleted (default: 3)',
    )
    .option(
      '--shutdown-timeout <duration>',
      'on SIGINT/SIGTERM, time to deliver what is queued before exiting (default: 10s)',
    )
    .option(
      '--state <file|url>',
      'record state in this SQLite file or postgres://user@host/database; on restart, report what changed while not running (docs/state.md)',
    )
    .option('--state-max-age <duration>', 'keep history events this long (default: 7d)')
    .option('--state-max-events <n>', 'keep at most this many history events (default: 100000)')
    .option('--state-max-size <size>', 'keep the state file under about this size (default: 256MB)')
    .option('--ui <addr>', 'also serve the --state history as a live web page on this address (docs/ui.md)')
    .option('--ui-token-file <file>', "require this file's token on the --ui page's API")
    .option(
      '--ui-allow-no-token',
      'serve the --ui page to other machines without a token (refused otherwise: docs/ui.md)',
    )
    .exitOverride()
    .configureOutput({ outputError: () => {} });
  addServiceFlags(watch);
  addAuditFlags(watch);
  watch.action(async (flags: RawWatchFlags & RawServiceFlags & UiWatchFlags) => {
    const { loadWatchSettings } = await import('../config/settings.ts');
    const { durationFromEnvironment, httpFromEnvironment, sizeFromEnvironment, timingFromEnvironment } =
      await import('../config/tuning.ts');
    const { ui: uiAddress, uiTokenFile, uiAllowNoToken, ...watchFlags } = flags;
    const service = serviceOptionsFromFlags(watchFlags);
    const settings = await loadWatchSettings(watchFlags, process.stdout.isTTY === true, process.env);
    // --ui and --ui-token-file win over the file's `ui:` block.
    const address = uiAddress ?? settings.ui?.listen;
    const tokenFile = uiTokenFile ?? settings.ui?.tokenFile;
    const ui =
      address === undefined
        ? undefined
        : uiSettings(address, tokenFile, uiAllowNoToken === true, settings.state?.path, {
            listen: uiAddress !== undefined ? '--ui' : 'ui.listen',
            tokenFile: uiTokenFile !== undefined ? '--ui-token-file' : 'ui.tokenFile',
          });
    const log = stderrLogger({ debug: settings.debug, format: service.logFormat });
    const { runWatch } = await import('./watch.ts');
    await runWatch(settings, {
      service,
      version: VERSION,
      log,
      stopRequested: Promise.race([stopSignal(log), stderrClosed]),
      timing: timingFromEnvironment(),
      limits: {
        stateMaxBacklogBytes: sizeFromEnvironment('KUBEDIFF_STATE_MAX_BACKLOG'),
        standbyMaxBufferBytes: sizeFromEnvironment('KUBEDIFF_STANDBY_MAX_BUFFER'),
      },
      http: httpFromEnvironment(),
      rediscoveryIntervalMs: durationFromEnvironment('KUBEDIFF_REDISCOVERY_INTERVAL'),
      userAgent: `kubediff/${VERSION}`,
      ui,
    });
    // A stdout reader that stopped reading still holds output the shutdown report has counted as not
    // delivered; Node would wait for it forever. Nothing else is left to do: exit now.
    if (process.stdout.writableLength > 0) exitAtOnce = true;
  });

  addSelectionFlags(
    program
      .command('resources')
      .description('list what `watch` would watch with the same flags, and why the other types are skipped'),
    { severalContexts: true },
  )
    .addOption(
      new Option('-o, --output <format>', 'table or json').choices(['table', 'json']).default('table'),
    )
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .action(async (flags: RawWatchFlags & { output: 'table' | 'json' }) => {
      const { output, ...selectionFlags } = flags;
      const { loadWatchSettings } = await import('../config/settings.ts');
      const { httpFromEnvironment } = await import('../config/tuning.ts');
      // Only the selection matters here: the file's sinks and their secrets are not needed.
      const settings = await loadWatchSettings({ ...selectionFlags, output: 'json' }, false, process.env, {
        unsetVariables: 'warn',
      });
      const { runResources } = await import('./resources.ts');
      await runResources(settings, { output, http: httpFromEnvironment() }, process.stdout);
    });

  program
    .command('history')
    .description('print the changes recorded in a --state file or database, newest last')
    .argument('[resource]', 'only this type, or one object: deploy, deploy/web, widgets.example.com/w1')
    .option(
      '--state <file|url>',
      'the state file or postgres:// database that `kubediff watch --state` writes',
    )
    .option('-c, --config <file>', 'take the state from this config file (state.path)')
    .option('--cluster <name>', 'only this cluster (a glob such as prod-*); repeatable', collect, [])
    .option('-n, --namespace <ns>', 'only this namespace')
    .option(
      '--user <glob>',
      'only changes made by this user, as the audit webhook named them (docs/audit.md)',
    )
    .option('--since <duration>', 'only events newer than this: 30m, 2h, 7d')
    .option('--tail <n>', 'only the newest n events')
    .option('--manager <name>', 'only events made by this field manager; globs: kubectl-*')
    .addOption(
      new Option('-o, --output <format>', 'json or pretty (default: pretty on a terminal)').choices([
        'json',
        'pretty',
      ]),
    )
    .option('--debug', 'print debugging details and stack traces')
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .action(async (resource: string | undefined, flags: HistoryFlags) => {
      const { runHistory } = await import('./history.ts');
      await runHistory(resource, flags, { stdout: process.stdout, isTTY: process.stdout.isTTY === true });
    });

  program
    .command('migrate')
    .description(
      'bring a --state file or database to the schema of this kubediff (watch does it at start too)',
    )
    .option('--state <file|url>', 'the state file or postgres:// database')
    .option('-c, --config <file>', 'take the state from this config file (state.path)')
    .option('--debug', 'print debugging details and stack traces')
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .action(async (flags: { state?: string; config?: string }) => {
      const { runMigrate } = await import('./migrate.ts');
      await runMigrate(flags, process.stdout);
    });

  program
    .command('ui')
    .description(
      "serve the change history of a --state file or PostgreSQL database as a web page: a timeline and each object's diffs",
    )
    .option(
      '--state <file|url>',
      'the state file or postgres://user@host/database that `kubediff watch --state` writes',
    )
    .option('-c, --config <file>', 'take the state file from this config file (state.path)')
    .option(
      '--listen <addr>',
      'address to serve on; other machines only with a host such as 0.0.0.0 (default: ui.listen of -c, else 127.0.0.1:8080)',
    )
    .option('--token-file <file>', "require this file's token (Authorization: Bearer) on the API")
    .option(
      '--allow-no-token',
      'serve other machines without a token (refused otherwise: anyone who reaches the port reads the history)',
    )
    .addOption(
      new Option(
        '--log-format <format>',
        'text, json or auto (default: JSON lines when stderr is not a terminal)',
      ).choices(['text', 'json', 'auto']),
    )
    .option('--debug', 'print debugging details and stack traces')
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .action(async (flags: UiFlags & { debug?: boolean; logFormat?: 'text' | 'json' | 'auto' }) => {
      if (flags.listen !== undefined) parseListenAddress(flags.listen);
      const log = stderrLogger({ debug: flags.debug === true, format: flags.logFormat });
      const { runUi } = await import('./ui.ts');
      await runUi(flags, { log, stopRequested: Promise.race([stopSignal(log), stderrClosed]) });
    });

  program
    .command('validate')
    .description(
      'check a config file: every problem with its line and column; --cluster also checks resource names',
    )
    .requiredOption('-c, --config <file>', 'the YAML config file to check')
    .option('--cluster', 'also check against the cluster that the resource types it names exist')
    .option('--kubeconfig <file>', "kubeconfig file for --cluster (default: the file's, then as for watch)")
    .option(
      '--context <name>',
      "kubeconfig context for --cluster (default: the file's, then the current one)",
    )
    .option('--debug', 'print debugging details and stack traces')
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .action(async (flags: { config: string; cluster?: boolean; kubeconfig?: string; context?: string }) => {
      const { runValidate } = await import('./validate.ts');
      const { httpFromEnvironment } = await import('../config/tuning.ts');
      await runValidate(flags, {
        env: process.env,
        stdout: process.stdout,
        stderr: process.stderr,
        http: httpFromEnvironment(),
      });
    });

  return program;
}

/**
 * Resolves on the first SIGINT/SIGTERM; a second one, a moment later, ends
 * the process at once. The same signal arriving twice together is one
 * request: Ctrl-C reaches both the launcher (bin/kubediff.js) and this
 * process, and the launcher forwards it too.
 */
function stopSignal(log: ReturnType<typeof stderrLogger>): Promise<string> {
  return new Promise((resolve) => {
    let firstAt: number | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      if (firstAt !== undefined) {
        if (Date.now() - firstAt < REPEATED_SIGNAL_WINDOW_MS) return;
        log.warn(`${signal} again: exiting without finishing deliveries.`);
        process.exit(EXIT_FAILURE);
      }
      firstAt = Date.now();
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

const REPEATED_SIGNAL_WINDOW_MS = 1_000;

interface UiWatchFlags {
  ui?: string;
  uiTokenFile?: string;
  uiAllowNoToken?: boolean;
}

/** `watch --ui`: checked before anything connects; the page reads the history --state records. */
function uiSettings(
  address: string,
  tokenFile: string | undefined,
  allowNoToken: boolean,
  statePath: string | undefined,
  names: { listen: string; tokenFile: string },
) {
  parseListenAddress(address, names.listen);
  if (!statePath) {
    throw new UsageError(
      '--ui (or ui.listen) shows the history that --state records: pass --state <file|postgres://…> too (docs/ui.md).',
    );
  }
  const ui = {
    address,
    flag: names.listen,
    token: tokenFile ? readTokenFile(tokenFile, names.tokenFile) : undefined,
    allowNoToken,
    allowNoTokenFlag: '--ui-allow-no-token',
    tokenFlag: '--ui-token-file',
  };
  checkExposure(address, ui);
  return ui;
}

export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes('--debug');
  process.stdout.on('error', onStdoutError);
  process.stderr.on('error', onStderrError);
  try {
    await buildProgram().parseAsync(argv);
    return EXIT_OK;
  } catch (error) {
    return reportError(error, debug);
  }
}

/**
 * A reader that leaves early (`kubediff resources | head`) closes stdout (EPIPE): there is nobody left to
 * tell, so it is not an error, and never an unhandled 'error' event with a stack trace. `watch` also stops
 * on it (StreamOutput). Any other failure to write stdout is one line on stderr and exit code 1.
 */
function onStdoutError(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') return;
  process.stderr.write(`kubediff: cannot write to stdout: ${printable(error.message)}.\n`);
  process.exit(EXIT_FAILURE);
}

/**
 * stderr closed (`kubediff watch 2>&1 | head -3`, or a log reader that went away): like a closed stdout,
 * not a crash. Nothing can be said any more, so there is nothing to report; `watch` stops the way it does
 * on SIGTERM (sinks drained, state recorded, Lease released) rather than run on with no way to tell
 * anyone about trouble. Log lines are dropped from then on (src/util/log.ts).
 */
let onStderrClosed: (reason: string) => void = () => {};
const stderrClosed = new Promise<string>((resolve) => {
  onStderrClosed = resolve;
});

function onStderrError(error: NodeJS.ErrnoException): void {
  onStderrClosed(error.code === 'EPIPE' ? 'stderr closed' : `stderr failed: ${error.message}`);
}

let exitAtOnce = false;

/** After main(): true when output a stalled reader never took would keep Node waiting (see `watch`). */
export function mustExitAtOnce(): boolean {
  return exitAtOnce;
}
