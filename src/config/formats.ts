// Every named format of the config file's values (util/value-format.ts), by the name its schema's
// `format:` gives: the ones keys of several areas share, and each sink type's own (its component's
// `formats`). The validator registers them all (schema-errors.ts); a flag that sets a key is checked by
// the format found at that key of the schema (flag-values.ts).
import { labelSelectorProblem } from '../kube/label-selector.ts';
import { managerNameProblem } from '../kube/managed-fields.ts';
import { resourceNameProblem } from '../kube/resource-names.ts';
import { HEADER_NAME_FORMAT, HTTP_URL_FORMAT } from '../sinks/core/entry-formats.ts';
import { registeredFormats } from '../sinks/registry.ts';
import { AGE_RULES } from '../util/duration.ts';
import { hasGlob, namespaceProblem } from '../util/glob.ts';
import {
  DURATION_FORMAT,
  DURATION_OR_ZERO_FORMAT,
  durationFormat,
  LISTEN_ADDRESS_FORMAT,
  SIZE_FORMAT,
  type ValueFormat,
} from '../util/value-format.ts';
import { PEER_ADDRESS_FORMAT } from '../who/peers/config.ts';
import { ignorePathProblem } from './presets.ts';

/** A name of a list, quoted before its problem: `"Shop" is not a namespace name: …`. */
function nameFormat(name: string, problem: (value: string) => string | undefined): ValueFormat {
  return { name, problem, inFile: (phrase, { value }) => `${JSON.stringify(value)} is ${phrase}` };
}

const SHARED_FORMATS: readonly ValueFormat[] = [
  DURATION_FORMAT,
  DURATION_OR_ZERO_FORMAT,
  durationFormat('age', AGE_RULES),
  SIZE_FORMAT,
  LISTEN_ADDRESS_FORMAT,
  PEER_ADDRESS_FORMAT,
  {
    name: 'label-selector',
    problem: labelSelectorProblem,
    inFile: (problem) => `not a label selector: ${problem}`,
  },
  nameFormat('namespace', namespaceProblem),
  // A cluster's namespaces are exact names: a glob is matched on every cluster's events.
  nameFormat(
    'cluster-namespace',
    (name) =>
      namespaceProblem(name) ??
      (hasGlob(name)
        ? 'a glob: a cluster takes exact names (a glob in the top-level namespaces: applies to every cluster)'
        : undefined),
  ),
  nameFormat('manager-name', managerNameProblem),
  // The problem quotes the name itself.
  { name: 'resource-name', problem: resourceNameProblem, inFile: (problem) => problem },
  nameFormat('ignore-path', ignorePathProblem),
  HTTP_URL_FORMAT,
  HEADER_NAME_FORMAT,
];

/** Every format, the shared ones first. */
export function allFormats(): readonly ValueFormat[] {
  return [...SHARED_FORMATS, ...registeredFormats()];
}

let byName: Map<string, ValueFormat> | undefined;

/** The format of that name; undefined for a name no schema gives. */
export function formatNamed(name: string): ValueFormat | undefined {
  byName ??= new Map(allFormats().map((format) => [format.name, format]));
  return byName.get(name);
}
