// The config file checked by its JSON Schema (src/config/schema.ts) with ajv: shapes and types, and the
// values' formats (formats.ts), every error translated into one sentence: the key path, what was
// expected, what was found. What spans keys is checked after it (semantic-checks.ts).
import { Ajv, type ErrorObject } from 'ajv';
// Draft 2019-09's `dependentRequired` (the pairs of keys that go together) added alone to the draft-07
// validator: the whole 2019-09 one (Ajv2019) is slower to set up for the same schema.
import dependentRequired from 'ajv/dist/vocabularies/validation/dependentRequired.js';
import { editDistance } from '../kube/resource-names.ts';
import { groupedCount } from '../util/count-text.ts';
import { formatProblemInFile } from '../util/value-format.ts';
import { allFormats, formatNamed } from './formats.ts';
import { formatKeyPath, type KeyPath, valueAt } from './problems.ts';
import { configSchema, SINK_TYPES, sinkSchemas } from './schema.ts';

type Validator = ReturnType<Ajv['compile']>;
/** Compiled on first use: compiling takes longer than everything a command without -c does. */
let validators: { config: Validator; sinks: Record<(typeof SINK_TYPES)[number], Validator> } | undefined;

function compiledValidators(): NonNullable<typeof validators> {
  if (validators) return validators;
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addKeyword(dependentRequired.default);
  for (const format of allFormats())
    ajv.addFormat(format.name, { type: 'string', validate: (value) => format.problem(value) === undefined });
  validators = {
    config: ajv.compile(configSchema),
    sinks: Object.fromEntries(SINK_TYPES.map((type) => [type, ajv.compile(sinkSchemas[type])])) as Record<
      (typeof SINK_TYPES)[number],
      Validator
    >,
  };
  return validators;
}

/** One schema error, as a sentence. */
export interface SchemaError {
  path: KeyPath;
  /** For an unknown key: the key (the path is its mapping's). */
  unknownKey?: string;
  /** `<value>` stands for the value found (filled in by the caller, who knows what came from env). */
  message: string;
  /**
   * A value of the right type that breaks a rule of the schema (its format, a pair of keys): checked, as
   * what spans keys is, only where no shape problem was found at or above it.
   */
  ofValue?: true;
}

/** The config file's schema errors, one per place. */
export function schemaErrors(config: Record<string, unknown>): SchemaError[] {
  const errors: SchemaError[] = [];
  const { config: validateConfig, sinks: validateSink } = compiledValidators();
  if (!validateConfig(config))
    errors.push(...translate(validateConfig.errors ?? [], [], configSchema, config));
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
            sink,
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

/** The names of the pairs of keys that go together (`dependentRequired`), for their message. */
const PAIRS: Readonly<Record<string, string>> = { 'certFile keyFile': 'a client certificate' };

function translate(
  errors: readonly ErrorObject[],
  prefix: KeyPath,
  rootSchema: object,
  instance: unknown,
): SchemaError[] {
  const result: SchemaError[] = [];
  for (const error of errors) {
    const relative = error.instancePath
      .split('/')
      .slice(1)
      .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
      .map((token) => (/^\d+$/.test(token) ? Number(token) : token));
    const path = [...prefix, ...relative];
    switch (error.keyword) {
      case 'format': {
        // A key's format (`propertyNames`) is reported at that key's value.
        const key = error.propertyName;
        const format = formatNamed(String(error.params.format));
        const value = key ?? valueAt(instance, relative);
        const message =
          format && typeof value === 'string'
            ? formatProblemInFile(format, { value, shown: '<value>' })
            : undefined;
        result.push({
          path: key === undefined ? path : [...path, key],
          message: message ?? 'invalid, got <value>',
          ofValue: true,
        });
        break;
      }
      case 'propertyNames':
        // Its key's own error (above) says what is wrong.
        break;
      case 'dependentRequired': {
        const keys = [String(error.params.property), String(error.params.missingProperty)].sort();
        const pair = PAIRS[keys.join(' ')];
        result.push({
          path,
          message: pair
            ? `${pair} needs both ${keys.join(' and ')}`
            : `${String(error.params.property)} needs ${String(error.params.missingProperty)} too`,
          ofValue: true,
        });
        break;
      }
      case 'minItems': {
        const items = (schemaAt(rootSchema, error.schemaPath) as { items?: { enum?: unknown[] } }).items;
        if (items?.enum && error.params.limit === 1) {
          // A list of allowed values left empty (events: []): a rule of the value, as a format is.
          result.push({
            path,
            message: `expected at least one of ${lowerCased(items.enum).join(', ')}`,
            ofValue: true,
          });
          break;
        }
        result.push({ path, message: `${error.message ?? 'invalid'}, got <value>` });
        break;
      }
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
        const format = (schemaAt(rootSchema, error.schemaPath) as { format?: string }).format;
        const expectedOfFormat = format === undefined ? undefined : formatNamed(format)?.expected;
        if (expectedOfFormat) {
          result.push({ path, message: `${expectedOfFormat}, got <value>` });
          break;
        }
        const expected = ([] as string[]).concat(error.params.type as string | string[]);
        result.push({ path, message: `expected ${expected.map(typeWord).join(' or ')}, got <value>` });
        break;
      }
      case 'enum': {
        const allowed = lowerCased(error.params.allowedValues as unknown[]);
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
            ? `from ${schema.minimum} to ${groupedCount(schema.maximum)}`
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

/** Enum values as a message lists them: lower-cased, each once. */
function lowerCased(values: readonly unknown[]): string[] {
  return [...new Set(values.map((value) => String(value).toLowerCase()))];
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
