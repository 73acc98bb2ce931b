// Reads a config file: YAML (with line and column for every node), `${VAR}` and `${VAR:-default}`
// substituted from the environment in values (substitution.ts), then checked by the JSON Schema
// (schema-errors.ts: shapes and types, then the values' formats), then what spans keys
// (semantic-checks.ts). Every problem names the file, the line and column, the key path and what was
// expected; all problems are reported together (problems.ts, exit 2).
// A value that came from the environment is never echoed: it may be a secret.
import { readFileSync } from 'node:fs';
import {
  type Document,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  visit,
} from 'yaml';
import type { Env } from '../util/environment.ts';
import { errorMessage, fileReadProblem, UsageError } from '../util/errors.ts';
import { shownUrl } from '../util/url.ts';
import {
  ConfigError,
  type ConfigProblem,
  describeKind,
  describeValue,
  formatKeyPath,
  type KeyPath,
  valueAt,
} from './problems.ts';
import type { ConfigInput } from './schema.ts';
import { schemaErrors } from './schema-errors.ts';
import { checkSemantics } from './semantic-checks.ts';
import { scalarValue, substitute } from './substitution.ts';

export interface LoadedConfig {
  file: string;
  config: ConfigInput;
  /** Where each key path is, for messages of later checks (e.g. against the cluster). */
  locate(path: KeyPath): { line: number; column: number };
  /** The variable names values came from, by key path (for `validate` and for not echoing secrets). */
  fromEnvironment: ReadonlyMap<string, string[]>;
  /** With `unsetVariables: 'warn'`: the variables not set here (their values are left as written). */
  warnings: readonly ConfigProblem[];
}

export interface ParseOptions {
  /**
   * 'error' (watch): an unset variable without a default is a problem. 'warn' (validate, run where the
   * secrets are not): it is a warning, and the value it stands in is not checked.
   */
  unsetVariables?: 'error' | 'warn';
}

/** Reads and checks `file`; throws a UsageError (unreadable) or a ConfigError (every problem). */
export function loadConfigFile(
  file: string,
  env: Env = process.env,
  options: ParseOptions = {},
): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const why = fileReadProblem(error);
    throw new UsageError(`cannot read config file ${file}: ${why}; check the path given to -c/--config.`, {
      cause: error,
    });
  }
  return parseConfig(text, file, env, options);
}

/** Parses and checks config text (`file` names it in messages). */
export function parseConfig(
  text: string,
  file: string,
  env: Env = process.env,
  options: ParseOptions = {},
): LoadedConfig {
  const parsed = parseYaml(text, file);
  const problems: ConfigProblem[] = [];
  const add = (path: KeyPath, offset: number | undefined, message: string) =>
    problems.push({ path, ...parsed.position(offset), message });
  const at = (path: KeyPath, message: string) => add(path, parsed.nodeAt(path)?.range?.[0], message);

  const variables = substituteVariables(parsed, env, options, add);
  // Values whose variable is missing are reported once, not again as a bad URL or an empty string.
  const envProblems = problems.length;
  const shown = valueDescriber(parsed, variables.fromEnv);
  // Neither a mapping nor a document yaml can represent: nothing more can be checked.
  const config = configObject(parsed, add, at);
  if (config === undefined) throw new ConfigError(file, problems);

  const errors = schemaErrors(config);
  for (const error of errors.filter((each) => !each.ofValue)) {
    if (error.unknownKey !== undefined) {
      const keyPath = [...error.path, error.unknownKey];
      add(keyPath, parsed.keyNodeAt(keyPath)?.range?.[0], error.message);
    } else {
      at(error.path, error.message.replace('<value>', shown(error.path, valueAt(config, error.path))));
    }
  }
  // Values' rules and the semantic checks count where the shape is right: one problem per place.
  const shapeProblems = problems.length;
  for (const error of errors.filter((each) => each.ofValue))
    at(error.path, error.message.replace('<value>', shown(error.path, valueAt(config, error.path))));
  checkSemantics(config as ConfigInput, at, shown);
  dropBelowWrongShapes(problems, shapeProblems);
  const reported = problems.filter(
    (problem, index) => index < envProblems || !variables.unset.has(formatKeyPath(problem.path)),
  );
  reported.sort((a, b) => a.line - b.line || a.column - b.column);
  if (reported.length > 0) throw new ConfigError(file, reported);
  return {
    file,
    config: config as ConfigInput,
    locate: (path) => parsed.position(parsed.nodeAt(path)?.range?.[0] ?? parsed.keyNodeAt(path)?.range?.[0]),
    fromEnvironment: variablesByKeyPath(parsed.doc, variables.fromEnv),
    warnings: variables.warnings,
  };
}

type Report = (path: KeyPath, offset: number | undefined, message: string) => void;

/** A YAML document, and where its nodes are. */
interface ParsedYaml {
  doc: Document;
  position(offset: number | undefined): { line: number; column: number };
  /** The node of a value… */
  nodeAt(path: KeyPath): Node | undefined;
  /** …and of a key (for a key that should not be there, or a value that is absent). */
  keyNodeAt(path: KeyPath): Node | undefined;
}

/** Parses the YAML (keeping every node's place); a file that is not YAML is a ConfigError at once. */
function parseYaml(text: string, file: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const position = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return { line, column: col };
  };
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((error) => {
        const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        return {
          path: [],
          ...position(error.pos[0]),
          message: `not valid YAML: ${yamlMessage(error.code, message)}`,
        };
      }),
    );
  }
  const nodeAt = (path: KeyPath): Node | undefined => {
    const found = path.length === 0 ? doc.contents : doc.getIn(path, true);
    return found && typeof found === 'object' && 'range' in found ? (found as Node) : undefined;
  };
  const keyNodeAt = (path: KeyPath): Node | undefined => {
    const parent = nodeAt(path.slice(0, -1));
    const last = path[path.length - 1];
    if (isMap(parent)) {
      const pair = parent.items.find((item) => isScalar(item.key) && item.key.value === last);
      if (pair && isScalar(pair.key)) return pair.key;
    }
    return undefined;
  };
  return { doc, position, nodeAt, keyNodeAt };
}

interface Substitution {
  /** The variables each substituted value came from. */
  fromEnv: Map<Node, string[]>;
  /** The key paths of values whose variable is not set (left as written, not checked further). */
  unset: Set<string>;
  /** With `unsetVariables: 'warn'`: those variables, as warnings rather than problems. */
  warnings: ConfigProblem[];
}

/** ${VAR} substitution in values (never keys), remembering which values came from the environment. */
function substituteVariables(parsed: ParsedYaml, env: Env, options: ParseOptions, add: Report): Substitution {
  const result: Substitution = { fromEnv: new Map(), unset: new Set(), warnings: [] };
  visit(parsed.doc, {
    Scalar(key, node, path) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('$')) return;
      const keyPath = pathOf(path, key);
      const substituted = substitute(node.value, env);
      if (substituted.missing.length > 0) {
        for (const name of substituted.missing) {
          const message = `environment variable ${name} is not set (set it, or give a default: \${${name}:-value})`;
          if (options.unsetVariables === 'warn')
            result.warnings.push({ path: keyPath, ...parsed.position(node.range?.[0]), message });
          else add(keyPath, node.range?.[0], message);
        }
        result.unset.add(formatKeyPath(keyPath));
        return;
      }
      if (substituted.names.length > 0) result.fromEnv.set(node, substituted.names);
      // A plain `${REPLICAS}` becomes a number or boolean when the variable holds one.
      node.value =
        node.type === 'PLAIN' && substituted.whole ? scalarValue(substituted.text) : substituted.text;
    },
  });
  return result;
}

/** How a value is shown in a problem: never a value that came from the environment, nor a secret whole. */
function valueDescriber(parsed: ParsedYaml, fromEnv: ReadonlyMap<Node, string[]>) {
  return (path: KeyPath, value: unknown): string => {
    const node = parsed.nodeAt(path);
    const names = node ? fromEnv.get(node) : undefined;
    if (names) return `the value of \${${names.join('}, ${')}}`;
    // Secrets, header values and URLs (a webhook URL's path is its secret) are not echoed whole.
    if (path.some((key) => key === 'secret' || key === 'token' || key === 'headers'))
      return describeKind(value);
    const last = path[path.length - 1];
    if (typeof value === 'string' && typeof last === 'string' && /url$/i.test(last)) {
      return shownUrl(value);
    }
    return describeValue(value);
  };
}

/** The document as a plain object, or undefined with the problem reported when it is not a mapping. */
function configObject(
  parsed: ParsedYaml,
  add: Report,
  at: (path: KeyPath, message: string) => void,
): Record<string, unknown> | undefined {
  let config: unknown;
  try {
    config = parsed.doc.toJS() ?? {};
  } catch (error) {
    // yaml refuses aliases that expand beyond its limit (a "billion laughs" file) rather than run out
    // of memory; anything else it throws here is a file it cannot represent either.
    let firstAlias: number | undefined;
    visit(parsed.doc, {
      Alias(_key, node) {
        firstAlias = node.range?.[0];
        return visit.BREAK;
      },
    });
    const message = /alias/i.test(errorMessage(error))
      ? 'not valid YAML: its aliases expand to too many values (as in a resource-exhaustion attack); write the values out, or use fewer aliases'
      : `not valid YAML: ${errorMessage(error).replace(/\.$/, '')}`;
    add([], firstAlias, message);
    return undefined;
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    at([], `expected a mapping of keys such as namespaces: and sinks:, got ${describeValue(config)}`);
    return undefined;
  }
  return config as Record<string, unknown>;
}

/**
 * Drops the semantic problems (from `from` on) at or below a place whose shape is already wrong: a
 * value of the wrong type is one problem, not one more for each check that then fails on it.
 */
function dropBelowWrongShapes(problems: ConfigProblem[], from: number): void {
  const wrongShape = problems.slice(0, from).map((problem) => formatKeyPath(problem.path));
  for (let index = problems.length - 1; index >= from; index--) {
    const place = formatKeyPath(problems[index]?.path ?? []);
    if (
      wrongShape.some(
        (bad) => bad !== '' && (place === bad || place.startsWith(`${bad}.`) || place.startsWith(`${bad}[`)),
      )
    )
      problems.splice(index, 1);
  }
}

/** The variables values came from, by key path (LoadedConfig.fromEnvironment). */
function variablesByKeyPath(doc: Document, fromEnv: ReadonlyMap<Node, string[]>): Map<string, string[]> {
  const byPath = new Map<string, string[]>();
  visit(doc, {
    Scalar(key, node, path) {
      const names = fromEnv.get(node);
      if (names) byPath.set(formatKeyPath(pathOf(path, key)), names);
    },
  });
  return byPath;
}

function yamlMessage(code: string, message: string): string {
  if (code === 'DUPLICATE_KEY') return 'a key appears twice in the same mapping';
  if (code === 'TAB_AS_INDENT') return 'tabs are not allowed for indentation; use spaces';
  return message.replace(/\.$/, '');
}

/** The key path of a node visited by yaml's visit(). */
function pathOf(path: readonly unknown[], key: unknown): (string | number)[] {
  const keys: (string | number)[] = [];
  const chain = [...path];
  for (let index = 0; index < chain.length; index++) {
    const item = chain[index];
    const next = index + 1 < chain.length ? chain[index + 1] : undefined;
    if (isSeq(item) && next !== undefined) keys.push(item.items.indexOf(next as never));
    else if (isPair(item) && isScalar(item.key)) keys.push(String(item.key.value));
  }
  const last = chain[chain.length - 1];
  if (isSeq(last) && typeof key === 'number') keys.push(key);
  return keys;
}
