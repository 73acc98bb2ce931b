// Reads a config file: YAML (with line and column for every node), `${VAR}` and `${VAR:-default}`
// substituted from the environment in values, then checked: shapes and types by a JSON Schema (ajv),
// meanings (JSON Pointers, selectors, URLs, durations, names) here. Every problem names the file, the
// line and column, the key path and what was expected; all problems are reported together (exit 2).
// A value that came from the environment is never echoed: it may be a secret.
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { parseResourcePattern } from '../events/filter.ts';
import { labelSelectorProblem } from '../kube/label-selector.ts';
import { editDistance } from '../kube/resource-names.ts';
import { AGE_RULES, checkDuration, type DurationRules, EXPECTED_DURATION } from '../util/duration.ts';
import { errorMessage, UsageError } from '../util/errors.ts';
import { isNamespaceNameOrGlob } from '../util/glob.ts';
import { parseSize } from '../util/size.ts';
import { parseHttpUrl, urlStart } from '../util/url.ts';
import { checkIgnorePath } from './presets.ts';
import { type ConfigInput, configSchema, SINK_TYPES, sinkSchemas } from './schema.ts';

export type KeyPath = readonly (string | number)[];

export interface ConfigProblem {
  path: KeyPath;
  line: number;
  column: number;
  message: string;
}

/** A config file with problems: exit code 2, every problem on its own line. */
export class ConfigError extends UsageError {
  readonly file: string;
  readonly problems: readonly ConfigProblem[];
  constructor(file: string, problems: readonly ConfigProblem[]) {
    super(formatProblems(file, problems));
    this.name = 'ConfigError';
    this.file = file;
    this.problems = problems;
  }
}

export function formatProblem(file: string, problem: ConfigProblem): string {
  const where = problem.path.length > 0 ? `${formatKeyPath(problem.path)}: ` : '';
  return `${file}:${problem.line}:${problem.column}: ${where}${problem.message}`;
}

function formatProblems(file: string, problems: readonly ConfigProblem[]): string {
  if (problems.length === 1 && problems[0]) return `invalid config file ${formatProblem(file, problems[0])}.`;
  return [
    `invalid config file ${file}: ${problems.length} problems:`,
    ...problems.map((problem) => `  ${formatProblem(file, problem)}`),
  ].join('\n');
}

/** ['sinks', 0, 'filter', 'namespaces'] → 'sinks[0].filter.namespaces'. */
export function formatKeyPath(path: KeyPath): string {
  let text = '';
  for (const segment of path) {
    text += typeof segment === 'number' ? `[${segment}]` : text === '' ? segment : `.${segment}`;
  }
  return text;
}

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
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : (error as Error).message;
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

  const schemaErrors = validateShape(config as Record<string, unknown>);
  for (const error of schemaErrors) {
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
  // Meanings are checked where the shape is right: one problem per place.
  const shapeProblems = problems.length;
  try {
    checkMeanings(config as ConfigInput, at, shown);
  } catch {
    // A value of the wrong type that a check stumbled on: the schema has already said so.
  }
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

interface Substitution {
  text: string;
  names: string[];
  missing: string[];
  /** The value was one reference and nothing else. */
  whole: boolean;
}

const REFERENCE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** `${NAME}`, `${NAME:-default}` (used when NAME is unset or empty), `$$` for a literal `$`. */
export function substitute(text: string, env: Env): Substitution {
  const names: string[] = [];
  const missing: string[] = [];
  let whole = false;
  const result = text.replace(REFERENCE, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === '$$') return '$';
    if (name === undefined) return match;
    whole = match === text;
    const value = env[name];
    if (value !== undefined && value !== '') {
      names.push(name);
      return value;
    }
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  return { text: result, names, missing, whole };
}

function scalarValue(text: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true') return true;
  if (text === 'false') return false;
  return text;
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const short = value.length > 40 ? `${value.slice(0, 37)}...` : value;
    return JSON.stringify(short);
  }
  return `${typeof value === 'number' ? 'the number' : typeof value} ${String(value)}`;
}

function describeKind(value: unknown): string {
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return 'a number';
  return describeValue(value);
}

function valueAt(root: unknown, path: KeyPath): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------
// Shapes: ajv with every error, translated into sentences.

type Validator = ReturnType<Ajv['compile']>;
/** Compiled on first use: compiling takes longer than everything a command without -c does. */
let validators: { config: Validator; sinks: Record<(typeof SINK_TYPES)[number], Validator> } | undefined;

function compiledValidators(): NonNullable<typeof validators> {
  if (validators) return validators;
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  validators = {
    config: ajv.compile(configSchema),
    sinks: Object.fromEntries(SINK_TYPES.map((type) => [type, ajv.compile(sinkSchemas[type])])) as Record<
      (typeof SINK_TYPES)[number],
      Validator
    >,
  };
  return validators;
}

interface ShapeError {
  path: KeyPath;
  /** For an unknown key: the key (the path is its mapping's). */
  unknownKey?: string;
  /** `<value>` stands for the value found (filled in by the caller, who knows what came from env). */
  message: string;
}

function validateShape(config: Record<string, unknown>): ShapeError[] {
  const errors: ShapeError[] = [];
  const { config: validateConfig, sinks: validateSink } = compiledValidators();
  if (!validateConfig(config)) errors.push(...translate(validateConfig.errors ?? [], [], configSchema));
  const sinks = config.sinks;
  if (Array.isArray(sinks)) {
    sinks.forEach((sink: unknown, index) => {
      if (sink === null || typeof sink !== 'object' || Array.isArray(sink)) return;
      const type = (sink as { type?: unknown }).type;
      if (typeof type !== 'string' || !(SINK_TYPES as string[]).includes(type)) return;
      const validate = validateSink[type as (typeof SINK_TYPES)[number]];
      if (!validate(sink)) {
        errors.push(
          ...translate(
            validate.errors ?? [],
            ['sinks', index],
            sinkSchemas[type as (typeof SINK_TYPES)[number]],
          ),
        );
      }
    });
  }
  // One message per place: a union type's several errors say the same thing.
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${formatKeyPath(error.path)}|${error.unknownKey ?? ''}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function translate(errors: readonly ErrorObject[], prefix: KeyPath, rootSchema: object): ShapeError[] {
  const result: ShapeError[] = [];
  for (const error of errors) {
    const path = [
      ...prefix,
      ...error.instancePath
        .split('/')
        .slice(1)
        .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
        .map((token) => (/^\d+$/.test(token) ? Number(token) : token)),
    ];
    switch (error.keyword) {
      case 'additionalProperties': {
        const key = String(error.params.additionalProperty);
        const known = Object.keys(
          (schemaAt(rootSchema, error.schemaPath) as { properties?: object }).properties ?? {},
        );
        const suggestion = closest(key, known);
        result.push({
          path,
          unknownKey: key,
          message: suggestion
            ? `unknown key (did you mean ${suggestion}?)`
            : `unknown key; expected one of ${known.join(', ')}`,
        });
        break;
      }
      case 'type': {
        if ((schemaAt(rootSchema, error.schemaPath) as { $comment?: string }).$comment === 'duration') {
          result.push({ path, message: `${EXPECTED_DURATION}, got <value>` });
          break;
        }
        const expected = ([] as string[]).concat(error.params.type as string | string[]);
        result.push({ path, message: `expected ${expected.map(typeWord).join(' or ')}, got <value>` });
        break;
      }
      case 'enum': {
        const allowed = [
          ...new Set((error.params.allowedValues as string[]).map((v) => String(v).toLowerCase())),
        ];
        result.push({ path, message: `expected one of ${allowed.join(', ')}, got <value>` });
        break;
      }
      case 'required':
        result.push({ path, message: `missing key ${String(error.params.missingProperty)}` });
        break;
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum': {
        const schema = schemaAt(rootSchema, error.schemaPath) as {
          minimum?: number;
          maximum?: number;
        };
        const range =
          schema.minimum !== undefined && schema.maximum !== undefined
            ? `from ${schema.minimum} to ${schema.maximum.toLocaleString('en-US')}`
            : 'greater than 0';
        result.push({ path, message: `expected a number ${range}, got <value>` });
        break;
      }
      default:
        result.push({ path, message: `${error.message ?? 'invalid'}, got <value>` });
    }
  }
  return result;
}

function schemaAt(root: object, schemaPath: string): object {
  let node: unknown = root;
  const tokens = schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean);
  // The schema path of a keyword ends with the keyword; its parent is the schema.
  for (const token of tokens.slice(0, -1)) node = (node as Record<string, unknown>)?.[token];
  return (node ?? {}) as object;
}

function typeWord(type: string): string {
  switch (type) {
    case 'array':
      return 'a list';
    case 'object':
      return 'a mapping';
    case 'integer':
      return 'a whole number';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'string':
      return 'a string';
    default:
      return type;
  }
}

/** The known key nearest `key`, if it is near enough to be a typo. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    const limit = Math.max(2, Math.floor(candidate.length / 3));
    if (distance <= limit && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

// ---------------------------------------------------------------------------------------------------
// Meanings: what the schema cannot say.

type At = (path: KeyPath, message: string) => void;
type Shown = (path: KeyPath, value: unknown) => string;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkMeanings(config: ConfigInput, at: At, shown: Shown): void {
  if (typeof config.selector === 'string') {
    const problem = labelSelectorProblem(config.selector);
    if (problem) at(['selector'], `not a label selector: ${problem}`);
  }
  checkNamespaces(config.namespaces, ['namespaces'], at);
  checkNamespaces(config.excludeNamespaces, ['excludeNamespaces'], at);
  checkResources(config.resources, ['resources'], at);
  checkResources(config.excludeResources, ['excludeResources'], at);
  checkPathRules(config.ignore, ['ignore'], at);
  checkPathRules(config.only, ['only'], at);
  checkPathRules(config.redact, ['redact'], at);
  if (config.events?.length === 0) at(['events'], 'expected at least one of added, updated, deleted');
  // A shutdown timeout of 0 is meaningful (exit at once); so are a batch wait and a Slack interval of 0.
  checkDurationKey(config.shutdownTimeout, ['shutdownTimeout'], at, shown, { allowZero: true });
  checkStateRetention(config.state, at, shown);
  checkSize(config.deadLetterMaxSize, ['deadLetterMaxSize'], at, shown);
  if (!Array.isArray(config.sinks)) return;
  config.sinks.forEach((sink, index) => {
    if (sink === null || typeof sink !== 'object') return;
    const here: KeyPath = ['sinks', index];
    const filter = sink.filter;
    if (filter) {
      const f: KeyPath = [...here, 'filter'];
      checkNamespaces(filter.namespaces, [...f, 'namespaces'], at);
      checkNamespaces(filter.excludeNamespaces, [...f, 'excludeNamespaces'], at);
      checkResources(filter.resources, [...f, 'resources'], at);
      checkResources(filter.excludeResources, [...f, 'excludeResources'], at);
      checkPathRules(filter.ignore, [...f, 'ignore'], at);
      checkPathRules(filter.only, [...f, 'only'], at);
      if (filter.events?.length === 0)
        at([...f, 'events'], 'expected at least one of added, updated, deleted');
    }
    if (sink.type === 'webhook') {
      checkUrl(sink.url, [...here, 'url'], at, shown);
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkDurationKey(sink.batchWait, [...here, 'batchWait'], at, shown, { allowZero: true });
      if (sink.batchWait !== undefined && sink.batch === undefined)
        at([...here, 'batchWait'], 'applies to batches: set batch: too (events per request)');
      for (const name of Object.keys(sink.headers ?? {})) {
        if (!HEADER_NAME.test(name))
          at([...here, 'headers', name], `${JSON.stringify(name)} is not an HTTP header name`);
      }
    } else if (sink.type === 'slack') {
      checkUrl(sink.webhookUrl, [...here, 'webhookUrl'], at, shown);
      checkUrl(sink.apiUrl, [...here, 'apiUrl'], at, shown);
      checkDurationKey(sink.timeout, [...here, 'timeout'], at, shown);
      checkDurationKey(sink.minInterval, [...here, 'minInterval'], at, shown, { allowZero: true });
      if (sink.webhookUrl !== undefined && (sink.token !== undefined || sink.channel !== undefined)) {
        at(here, 'a Slack sink posts either through webhookUrl or as a bot with token and channel, not both');
      } else if (sink.webhookUrl === undefined && (sink.token === undefined || sink.channel === undefined)) {
        at(
          here,
          sink.token === undefined && sink.channel === undefined
            ? 'a Slack sink needs webhookUrl (an incoming webhook), or token and channel (a bot)'
            : `a Slack bot sink needs both token and channel (${sink.token === undefined ? 'token' : 'channel'} is missing)`,
        );
      }
      if (sink.channel !== undefined && (sink.channel.trim() === '' || /\s/.test(sink.channel)))
        at([...here, 'channel'], 'expected a channel ID such as C0123456789, or #name');
    }
  });
  const stdoutSinks = config.sinks?.filter((sink) => sink.type === 'stdout').length ?? 0;
  if (stdoutSinks > 1) {
    const index = config.sinks?.findLastIndex((sink) => sink.type === 'stdout') ?? 0;
    at(['sinks', index, 'type'], 'only one stdout sink can be listed (stdout is one stream)');
  }
}

function checkNamespaces(values: readonly string[] | undefined, path: KeyPath, at: At): void {
  if (!Array.isArray(values)) return;
  values.forEach((name, index) => {
    if (typeof name !== 'string') return;
    if (!isNamespaceNameOrGlob(name))
      at(
        [...path, index],
        `${JSON.stringify(name)} is not a namespace name: use lowercase letters, digits and '-' (globs: * and ?)`,
      );
  });
}

function checkResources(values: readonly string[] | undefined, path: KeyPath, at: At): void {
  if (!Array.isArray(values)) return;
  values.forEach((name, index) => {
    if (typeof name !== 'string') return;
    try {
      parseResourcePattern(name);
    } catch (error) {
      at([...path, index], (error as Error).message);
    }
  });
}

function checkPathRules(
  rules: readonly (string | { path: string; resources?: string[] })[] | undefined,
  path: KeyPath,
  at: At,
): void {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule, index) => {
    const pointer = typeof rule === 'string' ? rule : rule?.path;
    if (typeof pointer !== 'string') return;
    const here: KeyPath = typeof rule === 'string' ? [...path, index] : [...path, index, 'path'];
    try {
      checkIgnorePath(pointer);
    } catch (error) {
      at(here, (error as Error).message);
    }
    if (typeof rule !== 'string') checkResources(rule.resources, [...path, index, 'resources'], at);
  });
}

function checkStateRetention(state: ConfigInput['state'], at: At, shown: Shown): void {
  if (state === null || typeof state !== 'object') return;
  checkDurationKey(state.maxAge, ['state', 'maxAge'], at, shown, AGE_RULES);
  checkSize(state.maxSize, ['state', 'maxSize'], at, shown);
}

function checkSize(value: string | undefined, path: KeyPath, at: At, shown: Shown): void {
  if (typeof value !== 'string') return;
  try {
    parseSize(path.join('.'), value);
  } catch {
    at(path, `expected a size such as 64MB or 1GB, got ${shown(path, value)}`);
  }
}

function checkDurationKey(
  value: string | undefined,
  path: KeyPath,
  at: At,
  shown: Shown,
  rules?: DurationRules,
): void {
  if (typeof value !== 'string') return;
  const { problem } = checkDuration(value, rules);
  if (problem !== undefined) at(path, `${problem}, got ${shown(path, value)}`);
}

function checkUrl(value: string | undefined, path: KeyPath, at: At, shown: Shown): void {
  if (typeof value !== 'string') return;
  const { problem } = parseHttpUrl(value);
  if (problem?.kind === 'not-a-url')
    at(path, `expected an http:// or https:// URL, got ${shown(path, value)}`);
  else if (problem?.kind === 'scheme')
    at(path, `expected an http:// or https:// URL, not ${problem.url.protocol}//`);
}
