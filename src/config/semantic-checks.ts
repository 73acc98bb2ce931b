// What the schema cannot say: the rules that tie keys together (clusters' names, the keys that choose
// the clusters beside `clusters:`, a type of sink listed at most once, each sink type's own rules). A
// single value's rule is its key's `format:` in the schema (formats.ts). Each check looks only at a value
// of the expected type: a value of the wrong type is the schema's problem, reported there
// (schema-errors.ts).

import { isJsonObject } from '../kube/types.ts';
import { sinkComponent } from '../sinks/registry.ts';
import { type At, type Check, type Checks, runChecks, type Shown } from '../util/key-checks.ts';
import type { ConfigInput } from './schema.ts';

/**
 * Checks what the schema cannot. `config` has passed the schema only where no shape problem was
 * reported: any value may still be of another type than declared, so every check tests the type first.
 */
export function checkSemantics(config: ConfigInput, at: At, shown: Shown): void {
  runChecks(FILE_CHECKS, config, [], { at, shown });
}

const sink: Check = (sink, path, report) => {
  if (!isJsonObject(sink)) return;
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

/** The keys that also choose the clusters to watch, which `clusters:` replaces. */
const CLUSTER_CHOICE_KEYS = ['context', 'contexts', 'allContexts', 'clusterName'] as const;

/** `clusters:`: each cluster's name given once. */
const clusters: Check = (list, path, report) => {
  if (!Array.isArray(list)) return;
  const named = new Map<string, number>();
  list.forEach((cluster: unknown, index) => {
    if (!isJsonObject(cluster) || typeof cluster.name !== 'string') return;
    const first = named.get(cluster.name);
    if (first === undefined) named.set(cluster.name, index);
    else
      report.at(
        [...path, index, 'name'],
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
  [[], clusterChoice],
  [['clusters'], clusters],
  [['sinks'], sinks],
];
