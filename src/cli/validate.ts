// `kubediff validate -c file [--cluster]`: checks a config file the way `watch` reads it, and prints one
// short "valid" line (exit 0) or every problem with its line and column (exit 2). With --cluster it also
// asks the cluster's discovery whether the resource types the file names exist: an unknown name is an
// error with a "did you mean"; a dotted name (a custom resource whose CRD may come later) is a warning.
import type { Writable } from 'node:stream';
import { loadConfigFile } from '../config/file.ts';
import { outputSinkSpecs } from '../config/output-sink.ts';
import { ConfigError, type ConfigProblem, formatProblem, type KeyPath } from '../config/problems.ts';
import { settingsFromConfig } from '../config/settings.ts';
import { describeSinkSpec } from '../config/sink-settings.ts';
import { compileFilter } from '../events/filter.ts';
import { type HttpSettings, KubeClient } from '../kube/client.ts';
import { explainConnectionFailure } from '../kube/connection-errors.ts';
import { Discovery } from '../kube/discovery.ts';
import { loadKubeconfig } from '../kube/kubeconfig.ts';
import type { ResourceType } from '../kube/types.ts';
import type { Env } from '../util/environment.ts';
import { printable } from '../util/terminal-text.ts';
import { unknownResourceName } from './resource-name-check.ts';

export interface ValidateFlags {
  config: string;
  cluster?: boolean;
  kubeconfig?: string;
  context?: string;
}

export interface ValidateRuntime {
  env: Env;
  stdout: Writable;
  stderr: Writable;
  /** How to talk to the API server for --cluster (docs/watching.md, "Tuning"). */
  http?: Partial<HttpSettings>;
}

export async function runValidate(flags: ValidateFlags, runtime: ValidateRuntime): Promise<void> {
  // Secrets are usually not set where a file is validated (CI, a laptop): an unset variable is a warning.
  const loaded = loadConfigFile(flags.config, runtime.env, { unsetVariables: 'warn' });
  for (const warning of loaded.warnings)
    runtime.stderr.write(`kubediff: warning: ${printable(formatProblem(loaded.file, warning))}.\n`);
  // What `watch -c file` would build, without a flag: cross-key problems (output none without a sink, …).
  const settings = settingsFromConfig(loaded, { config: flags.config }, false, runtime.env);
  for (const spec of settings.delivery.sinks) if (spec.filter) compileFilter(spec.filter);
  if (settings.filter) compileFilter(settings.filter);

  let checked = '';
  if (flags.cluster) {
    const kubeconfig = flags.kubeconfig ?? loaded.config.kubeconfig;
    const context = flags.context ?? loaded.config.context;
    const identity = loadKubeconfig({ kubeconfig, context });
    const client = await KubeClient.create(identity, { http: runtime.http });
    let types: ResourceType[];
    try {
      types = (await new Discovery(client).discover()).resources;
    } catch (error) {
      throw explainConnectionFailure(error, identity);
    } finally {
      await client.close();
    }
    const { problems, warnings } = checkResourcesAgainst(
      resourceNamesIn(loaded.config),
      types,
      loaded.locate,
    );
    for (const warning of warnings)
      runtime.stderr.write(`kubediff: warning: ${printable(formatProblem(loaded.file, warning))}.\n`);
    if (problems.length > 0) throw new ConfigError(loaded.file, problems);
    checked = `; resource names checked against ${identity.server}`;
  }
  const sinks = settings.delivery.sinks.map(
    (spec) => spec.name ?? (!loaded.warnings.length ? describeSinkSpec(spec) : spec.type),
  );
  // The standard output's sink as the watch adds it (none when the file lists one: it is among the sinks).
  sinks.unshift(...outputSinkSpecs(settings, { isTTY: false, env: runtime.env }).map(describeSinkSpec));
  runtime.stdout.write(
    `${printable(
      `${loaded.file}: valid (preset ${settings.preset ?? 'default'}; ${sinks.length} sink${sinks.length === 1 ? '' : 's'}: ${sinks.join(', ')})${checked}.`,
    )}\n`,
  );
}

interface NamedResource {
  path: KeyPath;
  text: string;
}

/** Every resource name the file writes, with where. */
function resourceNamesIn(config: ReturnType<typeof loadConfigFile>['config']): NamedResource[] {
  const names: NamedResource[] = [];
  const list = (values: readonly string[] | undefined, path: KeyPath) =>
    values?.forEach((text, index) => {
      names.push({ path: [...path, index], text });
    });
  const rules = (
    values: readonly (string | { path: string; resources?: string[] })[] | undefined,
    path: KeyPath,
  ) =>
    values?.forEach((rule, index) => {
      if (typeof rule !== 'string') list(rule.resources, [...path, index, 'resources']);
    });
  list(config.resources, ['resources']);
  list(config.excludeResources, ['excludeResources']);
  rules(config.ignore, ['ignore']);
  rules(config.only, ['only']);
  rules(config.redact, ['redact']);
  config.sinks?.forEach((sink, index) => {
    const filter = sink.filter;
    if (!filter) return;
    const at: KeyPath = ['sinks', index, 'filter'];
    list(filter.resources, [...at, 'resources']);
    list(filter.excludeResources, [...at, 'excludeResources']);
    rules(filter.ignore, [...at, 'ignore']);
    rules(filter.only, [...at, 'only']);
  });
  return names;
}

function checkResourcesAgainst(
  names: readonly NamedResource[],
  types: readonly ResourceType[],
  locate: (path: KeyPath) => { line: number; column: number },
): { problems: ConfigProblem[]; warnings: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  for (const { path, text } of names) {
    const unknown = unknownResourceName(text, types);
    if (!unknown) continue;
    const problem = { path, ...locate(path), message: unknown.message };
    (unknown.severity === 'warning' ? warnings : problems).push(problem);
  }
  return { problems, warnings };
}
