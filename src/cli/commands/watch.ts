// `kubediff watch`: its flags, grouped by topic, and how they become the settings src/cli/watch.ts runs.
import type { Command } from 'commander';
import type { RawServiceFlags } from '../../config/service-settings.ts';
import type { RawWatchFlags } from '../../config/watch-settings.ts';
import { allSinkCredentials } from '../../sinks/core/sink-credentials.ts';
import { stateCredentials } from '../../state/location.ts';
import { checkExposure } from '../../ui/exposure.ts';
import { readTokenFile } from '../../ui/token.ts';
import { Credentials, scrubbingLogger } from '../../util/credentials.ts';
import { UsageError } from '../../util/errors.ts';
import { parseListenAddress } from '../../util/http-server.ts';
import { stderrLogger } from '../../util/log.ts';
import { newCommand } from '../command.ts';
import { CLUSTER_SELECTION } from '../flags/cluster-selection.ts';
import { addFlagGroup, addFlags } from '../flags/flag-spec.ts';
import { FLEET } from '../flags/fleet.ts';
import { CONFIG_FLAG, DEBUG_FLAG } from '../flags/general.ts';
import { IN_CLUSTER } from '../flags/in-cluster.ts';
import { OUTCOMES } from '../flags/outcomes.ts';
import { WATCH_OUTPUT } from '../flags/output.ts';
import { SINKS } from '../flags/sinks.ts';
import { STATE_AND_UI } from '../flags/state-and-ui.ts';
import { STORIES, storiesTurnedOff } from '../flags/stories.ts';
import { WHAT_TO_REPORT } from '../flags/what-to-report.ts';
import { WHO } from '../flags/who.ts';
import { groupedHelp } from '../help.ts';
import { exitAtOnceIfStdoutStalled } from '../standard-streams.ts';
import { stopRequested } from '../stop-request.ts';
import { VERSION } from '../version.ts';
import type { WatchRuntime } from '../watch.ts';

/** The groups of `watch --help`, in order. */
const GROUPS = [
  CLUSTER_SELECTION,
  WHAT_TO_REPORT,
  WATCH_OUTPUT,
  SINKS,
  STORIES,
  OUTCOMES,
  STATE_AND_UI,
  FLEET,
  IN_CLUSTER,
  WHO,
];

type WatchFlags = RawWatchFlags &
  RawServiceFlags & {
    ui?: string;
    uiTokenFile?: string;
    uiAllowNoToken?: boolean;
    /** --no-stories <type>,<type> (src/cli/flags/stories.ts). */
    noStories?: string[];
  };

export function watchCommand(): Command {
  const command = newCommand('watch', 'report every change until stopped (Ctrl-C)');
  for (const group of GROUPS) addFlagGroup(command, group);
  addFlags(command, [CONFIG_FLAG, DEBUG_FLAG]);
  return groupedHelp(command).action(runWatchCommand);
}

async function runWatchCommand(flags: WatchFlags): Promise<void> {
  const { loadWatchSettings } = await import('../../config/settings.ts');
  const { serviceOptionsFromFlags } = await import('../../config/service-settings.ts');
  const { durationFromEnvironment, httpFromEnvironment, sizeFromEnvironment, timingFromEnvironment } =
    await import('../../config/tuning.ts');
  const { ui: uiAddress, uiTokenFile, uiAllowNoToken, noStories, ...given } = flags;
  const watchFlags = { ...given, ...storiesTurnedOff(noStories) };
  const service = serviceOptionsFromFlags(watchFlags);
  const settings = await loadWatchSettings(watchFlags, process.stdout.isTTY === true, process.env);
  const { checkMemoryFits } = await import('../../config/memory-settings.ts');
  // The environment's bounds, else their share of the heap (docs/deploy.md, "Memory").
  const limits = {
    stateMaxBacklogBytes:
      sizeFromEnvironment('KUBEDIFF_STATE_MAX_BACKLOG') ?? settings.memory.stateBacklogBytes,
    standbyMaxBufferBytes:
      sizeFromEnvironment('KUBEDIFF_STANDBY_MAX_BUFFER') ?? settings.memory.standbyBufferBytes,
  };
  checkMemoryFits(settings, {
    stateBacklogBytes: limits.stateMaxBacklogBytes,
    standbyBufferBytes: limits.standbyMaxBufferBytes,
    leaderElect: service.leaderElection !== undefined,
  });
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
  // Every line, and the error that ends the watch, scrubbed of the credentials of its sinks and its
  // state store: a receiver or a server may echo them (util/credentials.ts).
  const credentials = allSinkCredentials(settings.delivery.sinks).union(
    settings.state ? stateCredentials(settings.state) : Credentials.none,
  );
  const log = scrubbingLogger(
    stderrLogger({ debug: settings.debug, format: service.logFormat }),
    credentials,
  );
  const { runWatch } = await import('../watch.ts');
  const runtime: WatchRuntime = {
    service,
    version: VERSION,
    log,
    stopRequested: stopRequested(log),
    timing: timingFromEnvironment(),
    limits,
    http: httpFromEnvironment(),
    rediscoveryIntervalMs: durationFromEnvironment('KUBEDIFF_REDISCOVERY_INTERVAL'),
    userAgent: `kubediff/${VERSION}`,
    ui,
  };
  try {
    await runWatch(settings, runtime);
  } catch (error) {
    if (error instanceof Error) error.message = credentials.scrub(error.message);
    throw error;
  }
  exitAtOnceIfStdoutStalled();
}

/** `watch --ui`: checked before anything connects; the page reads the history --state records. */
function uiSettings(
  address: string,
  tokenFile: string | undefined,
  allowNoToken: boolean,
  statePath: string | undefined,
  names: { listen: string; tokenFile: string },
): NonNullable<WatchRuntime['ui']> {
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
  // Other machines without a token: refused unless intended (docs/ui.md, "Safety").
  checkExposure(address, ui);
  return ui;
}
