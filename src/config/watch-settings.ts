// The settings of `kubediff watch`, checked and normalized. Every problem is
// a UsageError (exit code 2) naming the flag, the bad value and the fix.
import { ignoredPathsFor } from '../diff/ignore.ts';
import { parsePointer } from '../diff/pointer.ts';
import type { EventType } from '../diff/types.ts';
import { errorMessage, UsageError } from '../errors.ts';
import { parseResourceName, type ResourceName } from '../kube/resource-names.ts';
import { type RawSinkFlags, type SinkSettings, sinkSettingsFromFlags } from '../sinks/flags.ts';
import { labelSelectorProblem } from './label-selector.ts';

/** `none`: no events on stdout (only the sinks: Slack, webhooks). */
export type OutputFormat = 'json' | 'pretty' | 'none';

export const EVENT_TYPES: readonly EventType[] = ['ADDED', 'UPDATED', 'DELETED'];

/** The flags as commander hands them over. */
export interface RawWatchFlags extends RawSinkFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string[];
  excludeNamespace?: string[];
  resource?: string[];
  excludeResource?: string[];
  selector?: string;
  events?: string;
  initial?: boolean;
  ignore?: string[];
  status?: boolean;
  output?: string;
  clusterName?: string;
  debug?: boolean;
}

export interface WatchSettings {
  kubeconfig: string | undefined;
  context: string | undefined;
  namespaces: string[];
  excludeNamespaces: string[];
  resources: ResourceName[];
  excludeResources: ResourceName[];
  labelSelector: string | undefined;
  events: ReadonlySet<EventType>;
  initial: boolean;
  /** The ignored paths in force: the defaults (minus /status with --status) plus --ignore. */
  ignoredPaths: string[];
  output: OutputFormat;
  clusterName: string | undefined;
  debug: boolean;
  /** Slack, webhooks, dead letters, shutdown timeout (src/sinks/flags.ts). */
  delivery: SinkSettings;
}

/** Flags may repeat and may hold comma-separated lists: `-n a -n b` or `-n a,b`. */
export function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

/**
 * `env` holds the sinks' secrets (KUBEDIFF_WEBHOOK_SECRET, KUBEDIFF_SLACK_TOKEN, …); without it (`kubediff
 * resources`), nothing is read from the environment.
 */
export function watchSettingsFromFlags(
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Readonly<Record<string, string | undefined>>,
): WatchSettings {
  const labelSelector = flags.selector?.trim();
  if (labelSelector !== undefined) {
    const problem = labelSelectorProblem(labelSelector);
    if (problem) throw new UsageError(`invalid --selector "${labelSelector}": ${problem}.`);
  }
  const extraIgnores = splitList(flags.ignore);
  for (const path of extraIgnores) {
    try {
      if (parsePointer(path).length === 0)
        throw new Error('"" is the whole object; name a field such as /spec/replicas');
    } catch (error) {
      throw new UsageError(`invalid --ignore path: ${errorMessage(error)}.`);
    }
  }
  const output = parseOutput(flags.output, stdoutIsTTY);
  const delivery = sinkSettingsFromFlags(flags, env ?? {});
  if (output === 'none' && delivery.sinks.length === 0) {
    throw new UsageError(
      '--output none leaves events nowhere to go: add --webhook, --slack-webhook or --slack-channel.',
    );
  }
  return {
    kubeconfig: flags.kubeconfig,
    context: flags.context,
    namespaces: namesOf('--namespace', splitList(flags.namespace)),
    excludeNamespaces: namesOf('--exclude-namespace', splitList(flags.excludeNamespace)),
    resources: splitList(flags.resource).map(parseResourceName),
    excludeResources: splitList(flags.excludeResource).map(parseResourceName),
    labelSelector: labelSelector || undefined,
    events: parseEventTypes(flags.events),
    initial: flags.initial ?? false,
    ignoredPaths: ignoredPathsFor({ status: flags.status ?? false, extra: extraIgnores }),
    output,
    clusterName: flags.clusterName,
    debug: flags.debug ?? false,
    delivery,
  };
}

export function parseEventTypes(text: string | undefined): ReadonlySet<EventType> {
  if (text === undefined) return new Set(EVENT_TYPES);
  const types = new Set<EventType>();
  for (const item of text
    .split(',')
    .map((value) => value.trim())
    .filter(Boolean)) {
    const type = item.toUpperCase() as EventType;
    if (!EVENT_TYPES.includes(type)) {
      throw new UsageError(
        `invalid --events value "${item}": use a comma-separated list of added, updated, deleted.`,
      );
    }
    types.add(type);
  }
  if (types.size === 0)
    throw new UsageError('--events is empty: use a comma-separated list of added, updated, deleted.');
  return types;
}

export function parseOutput(text: string | undefined, stdoutIsTTY: boolean): OutputFormat {
  if (text === undefined) return stdoutIsTTY ? 'pretty' : 'json';
  if (text === 'json' || text === 'pretty' || text === 'none') return text;
  throw new UsageError(`invalid --output "${text}": use json, pretty or none.`);
}

const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function namesOf(flag: string, names: string[]): string[] {
  for (const name of names) {
    if (!NAMESPACE_NAME.test(name)) {
      throw new UsageError(
        `invalid ${flag} "${name}": a namespace name is lowercase letters, digits and '-', at most 63 characters.`,
      );
    }
  }
  return names;
}
