// `kubediff watch -c file`: the config file under the flags. A flag given on the command line wins over
// the same key in the file (lists too: `-n a` replaces the file's namespaces); --ignore adds to the
// file's ignore list; --webhook and --slack-* add sinks to the file's. The file's `sinks:` list may hold
// a stdout sink (format, color, filter); without one, stdout is set up from `output:` / -o as usual.
import type { EventType } from '../events/event.ts';
import type { FilterSpec, PathRule } from '../events/filter.ts';
import type { SinkSpec } from '../sinks/setup.ts';
import { checkDuration } from '../util/duration.ts';
import { UsageError } from '../util/errors.ts';
import { deadLetterLimitsFromFlags, deadLetterLimitsGiven } from './dead-letter-settings.ts';
import { type LoadedConfig, loadConfigFile, type ParseOptions } from './file.ts';
import { ConfigError, formatKeyPath } from './problems.ts';
import type { RedactRule } from './redaction.ts';
import type { FilterInput, PathRuleInput, SinkInput } from './schema.ts';
import { SINK_ENV } from './sink-settings.ts';
import { type RawWatchFlags, type WatchSettings, watchSettingsFromFlags } from './watch-settings.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The settings of `watch` from the flags and, with -c, the config file. */
export function loadWatchSettings(
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
  options: ParseOptions = {},
): WatchSettings {
  if (flags.config === undefined) return watchSettingsFromFlags(flags, stdoutIsTTY, env);
  return settingsFromConfig(loadConfigFile(flags.config, env ?? {}, options), flags, stdoutIsTTY, env);
}

export function settingsFromConfig(
  loaded: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
): WatchSettings {
  const config = loaded.config;
  const fileIgnores = (config.ignore ?? []).filter((rule): rule is string => typeof rule === 'string');
  const fileSinks = config.sinks ?? [];
  const stdoutInput = fileSinks.find((sink) => sink.type === 'stdout');
  const httpInputs = fileSinks.filter((sink) => sink.type !== 'stdout');
  const output = flags.output ?? stdoutInput?.format ?? config.output;

  const merged: RawWatchFlags = {
    ...flags,
    kubeconfig: flags.kubeconfig ?? config.kubeconfig,
    context: flags.context ?? config.context,
    clusterName: flags.clusterName ?? config.clusterName,
    preset: flags.preset ?? config.preset,
    namespace: flags.namespace ?? config.namespaces,
    excludeNamespace: flags.excludeNamespace ?? config.excludeNamespaces,
    resource: flags.resource ?? config.resources,
    excludeResource: flags.excludeResource ?? config.excludeResources,
    selector: flags.selector ?? config.selector,
    events: flags.events ?? config.events?.join(','),
    initial: flags.initial ?? config.initial,
    status: flags.status ?? config.status,
    ignore: [...fileIgnores, ...(flags.ignore ?? [])],
    shutdownTimeout: flags.shutdownTimeout ?? config.shutdownTimeout,
    state: flags.state ?? config.state?.path,
    stateMaxAge: flags.stateMaxAge ?? config.state?.maxAge,
    stateMaxEvents: flags.stateMaxEvents ?? config.state?.maxEvents,
    stateMaxSize: flags.stateMaxSize ?? config.state?.maxSize,
    // Checked below against the file's sinks too.
    output: output === 'none' || stdoutInput ? 'json' : output,
  };
  delete merged.deadLetter;
  delete merged.deadLetterMaxSize;
  delete merged.deadLetterMaxFiles;
  const settings = watchSettingsFromFlags(merged, stdoutIsTTY, env);

  const deadLetterFile = flags.deadLetter?.trim() || config.deadLetter;
  const sinks: SinkSpec[] = [];
  if (stdoutInput && output !== 'none') {
    const format = output === 'json' || output === 'pretty' ? output : stdoutIsTTY ? 'pretty' : 'json';
    sinks.push({
      type: 'stdout',
      format,
      color: stdoutInput.color ?? (stdoutIsTTY && !env?.NO_COLOR),
      ...(stdoutInput.name ? { name: stdoutInput.name } : {}),
      ...filterOf(stdoutInput.filter),
    });
  }
  for (const input of httpInputs) sinks.push(sinkSpecOf(input, deadLetterFile, env ?? {}));
  // Flag sinks take the dead-letter file from delivery.deadLetterFile (createSinks' default).
  sinks.push(...settings.delivery.sinks);

  const finalOutput = stdoutInput || output === 'none' ? 'none' : settings.output;
  if (finalOutput === 'none' && sinks.length === 0) {
    throw new UsageError(
      `${loaded.file}: output none leaves events nowhere to go: list a sink under sinks:, or add --webhook or --slack-webhook.`,
    );
  }
  const hasHttpSink = sinks.some((sink) => sink.type !== 'stdout');
  if (deadLetterFile !== undefined && !hasHttpSink) {
    if (flags.deadLetter !== undefined)
      throw new UsageError(
        '--dead-letter applies to --webhook and Slack deliveries, and neither is given (stdout has no dead letters).',
      );
    const { line, column } = loaded.locate(['deadLetter']);
    throw new ConfigError(loaded.file, [
      {
        path: ['deadLetter'],
        line,
        column,
        message: 'applies to webhook and Slack sinks, and none is listed (stdout has no dead letters)',
      },
    ]);
  }

  // The cap of the dead-letter files: for the top-level file and each sink's own.
  const limitFlags = {
    deadLetterMaxSize: flags.deadLetterMaxSize ?? config.deadLetterMaxSize,
    deadLetterMaxFiles: flags.deadLetterMaxFiles ?? config.deadLetterMaxFiles,
  };
  const deadLetterLimits = deadLetterLimitsFromFlags(limitFlags);
  const anyDeadLetterFile = sinks.some((sink) => sink.type !== 'stdout' && sink.deadLetterFile !== undefined);
  if (deadLetterLimitsGiven(limitFlags) && deadLetterFile === undefined && !anyDeadLetterFile) {
    if (deadLetterLimitsGiven(flags))
      throw new UsageError(
        '--dead-letter-max-size and --dead-letter-max-files apply to dead-letter files, and none is set (--dead-letter, or deadLetter in the config file).',
      );
    const key = config.deadLetterMaxSize !== undefined ? 'deadLetterMaxSize' : 'deadLetterMaxFiles';
    const { line, column } = loaded.locate([key]);
    throw new ConfigError(loaded.file, [
      { path: [key], line, column, message: 'applies to dead-letter files, and none is set (deadLetter)' },
    ]);
  }

  // The watch's own client-side rules: namespace globs (from watch-settings), per-resource ignores, only.
  const perResourceIgnores = (config.ignore ?? []).filter((rule) => typeof rule !== 'string').map(pathRuleOf);
  const filter: FilterSpec = {
    ...settings.filter,
    ...(perResourceIgnores.length > 0 ? { ignore: perResourceIgnores } : {}),
    ...(config.only && config.only.length > 0 ? { only: config.only.map(pathRuleOf) } : {}),
  };
  const { filter: _unused, ...rest } = settings;
  return {
    ...rest,
    redaction: { ...settings.redaction, rules: redactRulesOf(loaded) },
    output: finalOutput,
    delivery: { ...settings.delivery, sinks, deadLetterFile, deadLetterLimits },
    ...(Object.keys(filter).length > 0 ? { filter } : {}),
  };
}

/** `redact:` entries, each with where it is written (an unknown resource name in one is reported there). */
function redactRulesOf(loaded: LoadedConfig): RedactRule[] {
  return (loaded.config.redact ?? []).map((input, index) => {
    const rule = typeof input === 'string' ? { path: input } : input;
    const { line, column } = loaded.locate(['redact', index]);
    return {
      path: rule.path,
      ...(rule.resources ? { resources: rule.resources } : {}),
      origin: `${loaded.file}:${line}:${column}: ${formatKeyPath(['redact', index])}`,
    };
  });
}

function pathRuleOf(rule: PathRuleInput): PathRule {
  return typeof rule === 'string'
    ? rule
    : { path: rule.path, ...(rule.resources ? { resources: rule.resources } : {}) };
}

/** The `filter:` of a sink, as a SinkSpec field. */
function filterOf(input: FilterInput | undefined): { filter?: FilterSpec } {
  if (!input) return {};
  const filter: FilterSpec = {
    ...(input.namespaces ? { namespaces: input.namespaces } : {}),
    ...(input.excludeNamespaces ? { excludeNamespaces: input.excludeNamespaces } : {}),
    ...(input.resources ? { resources: input.resources } : {}),
    ...(input.excludeResources ? { excludeResources: input.excludeResources } : {}),
    ...(input.events ? { types: input.events.map((type) => type.toUpperCase() as EventType) } : {}),
    ...(input.ignore ? { ignore: input.ignore.map(pathRuleOf) } : {}),
    ...(input.only ? { only: input.only.map(pathRuleOf) } : {}),
  };
  return Object.keys(filter).length > 0 ? { filter } : {};
}

/** A duration the file's checks have already accepted. */
function ms(text: string | undefined): number | undefined {
  return text === undefined ? undefined : checkDuration(text, { allowZero: true }).ms;
}

function sinkSpecOf(
  input: Exclude<SinkInput, { type: 'stdout' }>,
  deadLetter: string | undefined,
  env: Env,
): SinkSpec {
  const common = {
    ...(input.name ? { name: input.name } : {}),
    ...filterOf(input.filter),
    ...(input.timeout !== undefined ? { timeoutMs: ms(input.timeout) } : {}),
    ...((input.deadLetter ?? deadLetter) ? { deadLetterFile: input.deadLetter ?? deadLetter } : {}),
  };
  if (input.type === 'webhook') {
    const wait = ms(input.batchWait);
    return {
      type: 'webhook',
      url: input.url,
      ...common,
      ...(input.headers ? { headers: input.headers } : {}),
      ...(input.secret ? { secret: input.secret } : {}),
      ...(input.batch !== undefined
        ? { batch: { maxEvents: input.batch, ...(wait !== undefined ? { maxWaitMs: wait } : {}) } }
        : {}),
      ...(input.maxRequestsPerSecond !== undefined
        ? { maxRequestsPerSecond: input.maxRequestsPerSecond }
        : {}),
    } as SinkSpec;
  }
  const apiUrl = input.apiUrl ?? (env[SINK_ENV.slackApiUrl]?.trim() || undefined);
  return {
    type: 'slack',
    ...common,
    ...(input.webhookUrl !== undefined ? { webhookUrl: input.webhookUrl } : {}),
    ...(input.token !== undefined ? { token: input.token } : {}),
    ...(input.channel !== undefined ? { channel: input.channel } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(input.minInterval !== undefined ? { minIntervalMs: ms(input.minInterval) } : {}),
  } as SinkSpec;
}
