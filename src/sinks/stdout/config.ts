// The standard output's sink (docs/sinks.md#stdout): its entry in the config file's `sinks:` (the schema
// fragment the file's schema is assembled from), and its spec from what chooses it: -o/--output, the
// file's `output:` and its entry, and the terminal (pretty output and color on one, unless NO_COLOR).
import type { FromSchema } from 'json-schema-to-ts';
import type { CommonEntrySpec, CommonSinkSpec, OutputChoice } from '../component.ts';
import { commonKeys } from '../core/entry-schema.ts';

/** One `sinks:` entry of type stdout. */
export const stdoutSchema = {
  type: 'object',
  properties: {
    type: { const: 'stdout' },
    ...commonKeys,
    format: { type: 'string', enum: ['json', 'pretty'] },
    color: { type: 'boolean' },
  },
  required: ['type'],
  additionalProperties: false,
} as const;

export type StdoutEntry = FromSchema<typeof stdoutSchema>;

/** What the factory creates the standard output's sink from. */
export interface StdoutSpec extends CommonSinkSpec {
  type: 'stdout';
  format: 'json' | 'pretty';
  /** Pretty output in color. */
  color?: boolean;
}

/**
 * Its spec: the format from -o, else the entry's own, else `output:`, else pretty on a terminal (none:
 * no sink); color from the entry, else on a terminal without NO_COLOR.
 */
export function stdoutSpecOf(
  output: OutputChoice,
  listed?: { entry: StdoutEntry; common: CommonEntrySpec },
): StdoutSpec | undefined {
  const asked = output.flag ?? listed?.entry.format ?? output.file;
  if (asked === 'none') return undefined;
  const common = listed?.common;
  return {
    type: 'stdout',
    format: asked === 'json' || asked === 'pretty' ? asked : output.isTTY ? 'pretty' : 'json',
    color: listed?.entry.color ?? (output.isTTY && !output.env.NO_COLOR),
    ...(common?.name ? { name: common.name } : {}),
    ...(common?.stories !== undefined ? { stories: common.stories } : {}),
    ...(common?.filter ? { filter: common.filter } : {}),
  };
}
