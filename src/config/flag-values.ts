// A flag that sets a config key is checked by that key's format in the file's schema (formats.ts), so a
// value means the same on the command line and in the file. The schema is walked as an object: checking
// a flag never loads the validator (ajv), which a watch without -c does not need. (A component below the
// config layer, such as a who source, checks its flags by the format object its own fragment names:
// util/value-format.ts's checkedValue.)
import { parseSize } from '../util/size.ts';
import { checkedDurationMs, checkedValue, type ValueFormat } from '../util/value-format.ts';
import { formatNamed } from './formats.ts';
import { configSchema } from './schema.ts';

/** A key of the config file's schema: `['state', 'maxAge']`; `'[]'` is a list's item (`['namespaces', '[]']`). */
export type SchemaKey = readonly string[];

/** The format at `key` of the file's schema; throws when there is none (a flag pointed at the wrong key). */
export function formatAt(key: SchemaKey): ValueFormat {
  let schema: unknown = configSchema;
  for (const segment of key) {
    const node = schema as { properties?: Record<string, unknown>; items?: unknown } | undefined;
    schema = segment === '[]' ? node?.items : node?.properties?.[segment];
  }
  const name = (schema as { format?: string } | undefined)?.format;
  const format = name === undefined ? undefined : formatNamed(name);
  if (!format) throw new Error(`the config file's schema has no format at ${key.join('.')}`);
  return format;
}

/** `value` of `flag`, which sets `key`: itself, or a UsageError `invalid --flag "value": <problem>.` */
export function checkedFlagValue(flag: string, key: SchemaKey, value: string): string {
  return checkedValue(flag, formatAt(key), value);
}

/** A duration flag that sets `key`, in milliseconds (its bounds and whether 0 is allowed: the key's format). */
export function flagDurationMs(flag: string, key: SchemaKey, text: string): number {
  return checkedDurationMs(flag, formatAt(key), text);
}

/** A size flag that sets `key`, in bytes. */
export function flagSizeBytes(flag: string, key: SchemaKey, text: string): number {
  return parseSize(flag, checkedFlagValue(flag, key, text));
}
