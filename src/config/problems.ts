// The config file's problems as users read them: each with the file, line and column, the key path
// (`sinks[0].filter.namespaces`) and what was expected; all of them reported together (exit 2).
import { UsageError } from '../util/errors.ts';
import type { KeyPath } from '../util/key-checks.ts';

export type { KeyPath } from '../util/key-checks.ts';
export { valueAt } from '../util/key-checks.ts';

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

export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const short = value.length > 40 ? `${value.slice(0, 37)}...` : value;
    return JSON.stringify(short);
  }
  return `${typeof value === 'number' ? 'the number' : typeof value} ${String(value)}`;
}

export function describeKind(value: unknown): string {
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return 'a number';
  return describeValue(value);
}
