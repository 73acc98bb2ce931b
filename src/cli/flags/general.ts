// The flags of no group that several commands take: the config file, the noise preset, --debug.
import type { FlagSpec } from '../../util/flag-spec.ts';

export const CONFIG_FLAG: FlagSpec = {
  flags: '-c, --config <file>',
  description: 'read settings from this YAML file; flags win',
};

export const PRESET_FLAG: FlagSpec = {
  flags: '--preset <name>',
  description: 'noise preset: default, quiet or everything',
};

export const DEBUG_FLAG: FlagSpec = {
  flags: '--debug',
  description: 'print debugging details and stack traces',
};
