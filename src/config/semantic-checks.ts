// What the schema cannot say: JSON Pointers, label selectors, URLs, durations, sizes, names, and the
// rules that tie keys together (a webhook's body, one stdout sink). The checks are tables: which
// key, by which check. Each check looks only at a value of the expected type: a value of the wrong type
// is the schema's problem, reported there (schema-errors.ts).

import { labelSelectorProblem } from '../kube/label-selector.ts';
import { managerNameProblem } from '../kube/managed-fields.ts';
import { resourceNameProblem } from '../kube/resource-names.ts';
import { isJsonObject } from '../kube/types.ts';
import { sinkComponent } from '../sinks/registry.ts';
import { AGE_RULES } from '../util/duration.ts';
import { hasGlob, namespaceProblem } from '../util/glob.ts';
import { parseListenAddress } from '../util/http-server.ts';
import {
  type At,
  type Check,
  type Checks,
  duration,
  durationOrZero,
  type KeyPath,
  runChecks,
  type Shown,
  size,
} from '../util/key-checks.ts';
import { parsePeerAddress } from '../who/peers/peer-address.ts';
import { checkIgnorePath } from './presets.ts';
import type { ConfigInput } from './schema.ts';

/**
 * Checks what the schema cannot. `config` has passed the schema only where no shape problem was
 * reported: any value may still be of another type than declared, so every check tests the type first.
 */
export function checkSemantics(config: ConfigInput, at: At, shown: Shown): void {
  runChecks(FILE_CHECKS, config, [], { at, shown });
}

// The checks of single values.

const labelSelector: Check = (value, path, { at }) => {
  if (typeof value !== 'string') return;
  const problem = labelSelectorProblem(value);
  if (problem) at(path, `not a label selector: ${problem}`);
};

/** Each string of a list checked by `problemOf`; what it finds is reported at that item as `say` puts it. */
function names(
  problemOf: (name: string) => string | undefined,
  say: (name: string, problem: string) => string = (name, problem) => `${JSON.stringify(name)} is ${problem}`,
): Check {
  return (values, path, { at }) => {
    if (!Array.isArray(values)) return;
    values.forEach((name: unknown, index) => {
      if (typeof name !== 'string') return;
      const problem = problemOf(name);
      if (problem) at([...path, index], say(name, problem));
    });
  };
}

const namespaces = names(namespaceProblem);
const resources = names(resourceNameProblem, (_name, problem) => problem);
const managers = names(managerNameProblem);
/** A cluster's namespaces are exact names: a glob is matched on every cluster's events. */
const exactNamespaces = names(
  (name) =>
    namespaceProblem(name) ??
    (hasGlob(name)
      ? 'a glob: a cluster takes exact names (a glob in the top-level namespaces: applies to every cluster)'
      : undefined),
);

const eventTypes: Check = (value, path, { at }) => {
  if (Array.isArray(value) && value.length === 0)
    at(path, 'expected at least one of added, updated, deleted');
};

/** `ignore:`, `only:`, `redact:`: JSON Pointers, or mappings of `path:`, `resources:`, `managers:`. */
const pathRules: Check = (rules, path, report) => {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule: unknown, index) => {
    const pointer = typeof rule === 'string' ? rule : isJsonObject(rule) ? rule.path : undefined;
    if (typeof pointer !== 'string') return;
    const here: KeyPath = typeof rule === 'string' ? [...path, index] : [...path, index, 'path'];
    try {
      checkIgnorePath(pointer);
    } catch (error) {
      report.at(here, (error as Error).message);
    }
    if (isJsonObject(rule)) {
      resources(rule.resources, [...path, index, 'resources'], report);
      managers(rule.managers, [...path, index, 'managers'], report);
    }
  });
};

const listenAddress: Check = (value, path, { at, shown }) => {
  if (typeof value !== 'string') return;
  try {
    parseListenAddress(value);
  } catch {
    at(path, `expected [host]:port such as :8443, got ${shown(path, value)}`);
  }
};

const peerAddress: Check = (value, path, { at, shown }) => {
  if (typeof value !== 'string') return;
  try {
    parsePeerAddress(value);
  } catch {
    at(path, `expected host:port such as kubediff-peers.kubediff.svc:9443, got ${shown(path, value)}`);
  }
};

// The tables.

/** What the file's top level and each sink's `filter:` select by. */
const SELECTION_CHECKS: Checks = [
  [['namespaces'], namespaces],
  [['excludeNamespaces'], namespaces],
  [['resources'], resources],
  [['excludeResources'], resources],
  [['ignore'], pathRules],
  [['only'], pathRules],
];

/** A sink's `filter:`. */
const FILTER_CHECKS: Checks = [
  ...SELECTION_CHECKS,
  [['managers'], managers],
  [['excludeManagers'], managers],
  [['events'], eventTypes],
];

const sink: Check = (sink, path, report) => {
  if (!isJsonObject(sink)) return;
  if (isJsonObject(sink.filter)) runChecks(FILTER_CHECKS, sink.filter, [...path, 'filter'], report);
  const checks = sinkComponent(sink.type)?.checks;
  if (checks) runChecks(checks, sink, path, report);
};

const sinks: Check = (list, path, report) => {
  if (!Array.isArray(list)) return;
  list.forEach((entry: unknown, index) => {
    sink(entry, [...path, index], report);
  });
  // A type of which one entry at most can be listed: the last is the problem.
  for (const type of new Set(list.map((entry: unknown) => (isJsonObject(entry) ? entry.type : undefined)))) {
    const single = sinkComponent(type)?.single;
    const ofType = (entry: unknown) => isJsonObject(entry) && entry.type === type;
    if (single !== undefined && list.filter(ofType).length > 1) {
      report.at(
        [...path, list.findLastIndex(ofType), 'type'],
        `only one ${String(type)} sink can be listed (${single})`,
      );
    }
  }
};

/** One entry of `clusters:`: its selection as the top-level keys', but namespaces by exact name. */
const CLUSTER_CHECKS: Checks = [
  [['selector'], labelSelector],
  [['namespaces'], exactNamespaces],
  [['excludeNamespaces'], exactNamespaces],
  [['resources'], resources],
  [['excludeResources'], resources],
];

/** The keys that also choose the clusters to watch, which `clusters:` replaces. */
const CLUSTER_CHOICE_KEYS = ['context', 'contexts', 'allContexts', 'clusterName'] as const;

/** `clusters:`: each entry checked, names given once, and no other way of choosing the clusters beside it. */
const clusters: Check = (list, path, report) => {
  if (!Array.isArray(list)) return;
  const named = new Map<string, number>();
  list.forEach((cluster: unknown, index) => {
    if (!isJsonObject(cluster)) return;
    const here: KeyPath = [...path, index];
    runChecks(CLUSTER_CHECKS, cluster, here, report);
    if (typeof cluster.name !== 'string') return;
    const first = named.get(cluster.name);
    if (first === undefined) named.set(cluster.name, index);
    else
      report.at(
        [...here, 'name'],
        `"${cluster.name}" is the name of clusters[${first}] too; give each cluster a name of its own`,
      );
  });
};

const clusterChoice: Check = (config, _path, { at }) => {
  if (!isJsonObject(config) || !Array.isArray(config.clusters)) return;
  for (const key of CLUSTER_CHOICE_KEYS) {
    if (config[key] === undefined) continue;
    at(
      [key],
      key === 'clusterName'
        ? 'clusters: names each cluster (its name:); drop clusterName:'
        : `clusters: chooses the clusters to watch; drop ${key}: (or clusters:)`,
    );
  }
};

/** The whole file, in the order its problems were always found in. */
const FILE_CHECKS: Checks = [
  [['selector'], labelSelector],
  ...SELECTION_CHECKS,
  [['redact'], pathRules],
  [['ignoreManagers'], managers],
  [[], clusterChoice],
  [['clusters'], clusters],
  [['events'], eventTypes],
  [['shutdownTimeout'], durationOrZero],
  [['state', 'maxAge'], duration(AGE_RULES)],
  [['state', 'maxSize'], size],
  [['deadLetterMaxSize'], size],
  [['audit', 'wait'], durationOrZero],
  [['audit', 'window'], duration()],
  [['audit', 'maxRequestSize'], size],
  [['audit', 'listen'], listenAddress],
  [['admission', 'wait'], durationOrZero],
  [['admission', 'maxRequestSize'], size],
  [['admission', 'listen'], listenAddress],
  [['peers'], peerAddress],
  [['outcomes', 'timeout'], duration()],
  [['stories', 'window'], duration()],
  [['stories', 'maxLength'], duration()],
  [['stories', 'maxOpenSize'], size],
  [['sinks'], sinks],
];
