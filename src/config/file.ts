// Reads a config file: YAML (with line and column for every node), `${VAR}` and `${VAR:-default}`
// substituted from the environment in values (substitution.ts), then checked: shapes and types by the
// JSON Schema (schema-errors.ts), then what the schema cannot say (semantic-checks.ts). Every problem
// names the file, the line and column, the key path and what was expected; all problems are reported
// together (problems.ts, exit 2).
// A value that came from the environment is never echoed: it may be a secret.
import { readFileSync } from 'node:fs';
import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { errorMessage, fileReadProblem, UsageError } from '../util/errors.ts';
import { urlStart } from '../util/url.ts';
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

type Env = Readonly<Record<string, string | undefined>>;

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
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const position = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return { line, column: col };
  };
  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const add = (path: KeyPath, offset: number | undefined, message: string) =>
    problems.push({ path, ...position(offset), message });

  for (const error of doc.errors) {
    const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    add([], error.pos[0], `not valid YAML: ${yamlMessage(error.code, message)}`);
  }
  if (problems.length > 0) throw new ConfigError(file, problems);

  // ${VAR} substitution in values (never keys), remembering which values came from the environment.
  const fromEnv = new Map<Node, string[]>();
  const unset = new Set<string>();
  visit(doc, {
    Scalar(key, node, path) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('$')) return;
      const keyPath = pathOf(path, key);
      const result = substitute(node.value, env);
      if (result.missing.length > 0) {
        for (const name of result.missing) {
          const message = `environment variable ${name} is not set (set it, or give a default: \${${name}:-value})`;
          if (options.unsetVariables === 'warn')
            warnings.push({ path: keyPath, ...position(node.range?.[0]), message });
          else add(keyPath, node.range?.[0], message);
        }
        unset.add(formatKeyPath(keyPath));
        return;
      }
      if (result.names.length > 0) fromEnv.set(node, result.names);
      // A plain `${REPLICAS}` becomes a number or boolean when the variable holds one.
      node.value = node.type === 'PLAIN' && result.whole ? scalarValue(result.text) : result.text;
    },
  });
  // Values whose variable is missing are reported once, not again as a bad URL or an empty string.
  const envProblems = problems.length;

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
  const locate = (path: KeyPath) => position(nodeAt(path)?.range?.[0] ?? keyNodeAt(path)?.range?.[0]);
  const shown = (path: KeyPath, value: unknown): string => {
    const node = nodeAt(path);
    const names = node ? fromEnv.get(node) : undefined;
    if (names) return `the value of \${${names.join('}, ${')}}`;
    // Secrets, header values and URLs (a webhook URL's path is its secret) are not echoed whole.
    if (path.some((key) => key === 'secret' || key === 'token' || key === 'headers'))
      return describeKind(value);
    const last = path[path.length - 1];
    if (typeof value === 'string' && typeof last === 'string' && /url$/i.test(last)) {
      return JSON.stringify(`${urlStart(value)}${value.includes('/') ? '/…' : ''}`);
    }
    return describeValue(value);
  };

  let config: unknown;
  try {
    config = doc.toJS() ?? {};
  } catch (error) {
    // yaml refuses aliases that expand beyond its limit (a "billion laughs" file) rather than run out
    // of memory; anything else it throws here is a file it cannot represent either.
    let firstAlias: number | undefined;
    visit(doc, {
      Alias(_key, node) {
        firstAlias = node.range?.[0];
        return visit.BREAK;
      },
    });
    const message = /alias/i.test(errorMessage(error))
      ? 'not valid YAML: its aliases expand to too many values (as in a resource-exhaustion attack); write the values out, or use fewer aliases'
      : `not valid YAML: ${errorMessage(error).replace(/\.$/, '')}`;
    add([], firstAlias, message);
    throw new ConfigError(file, problems);
  }
  const at = (path: KeyPath, message: string) => add(path, nodeAt(path)?.range?.[0], message);

  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    at([], `expected a mapping of keys such as namespaces: and sinks:, got ${describeValue(config)}`);
    throw new ConfigError(file, problems);
  }

  for (const error of schemaErrors(config as Record<string, unknown>)) {
    const path = error.path;
    if (error.unknownKey !== undefined) {
      const keyPath = [...path, error.unknownKey];
      add(keyPath, keyNodeAt(keyPath)?.range?.[0], error.message);
    } else {
      add(
        path,
        nodeAt(path)?.range?.[0],
        error.message.replace('<value>', shown(path, valueAt(config, path))),
      );
    }
  }
  // The semantic checks count where the shape is right: one problem per place.
  const shapeProblems = problems.length;
  checkSemantics(config as ConfigInput, at, shown);
  const wrongShape = problems.slice(0, shapeProblems).map((problem) => formatKeyPath(problem.path));
  for (let index = problems.length - 1; index >= shapeProblems; index--) {
    const place = formatKeyPath(problems[index]?.path ?? []);
    if (
      wrongShape.some(
        (bad) => bad !== '' && (place === bad || place.startsWith(`${bad}.`) || place.startsWith(`${bad}[`)),
      )
    )
      problems.splice(index, 1);
  }
  const reported = problems.filter(
    (problem, index) => index < envProblems || !unset.has(formatKeyPath(problem.path)),
  );
  reported.sort((a, b) => a.line - b.line || a.column - b.column);
  if (reported.length > 0) throw new ConfigError(file, reported);

  const fromEnvironment = new Map<string, string[]>();
  visit(doc, {
    Scalar(key, node, path) {
      const names = fromEnv.get(node);
      if (names) fromEnvironment.set(formatKeyPath(pathOf(path, key)), names);
    },
  });
  return { file, config: config as ConfigInput, locate, fromEnvironment, warnings };
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
