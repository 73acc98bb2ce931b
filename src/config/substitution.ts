// `${VAR}` and `${VAR:-default}` in the config file's values (never its keys), from the environment, so
// that secrets stay out of the file; `$$` is a literal `$`.
import type { Env } from '../util/environment.ts';

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

/** What a plain (unquoted) value that was one whole reference becomes: a number or a boolean when it reads as one. */
export function scalarValue(text: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true') return true;
  if (text === 'false') return false;
  return text;
}
