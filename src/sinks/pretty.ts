// The terminal rendering: a colored header per event (with who made it,
// `by kubectl-set`), then one line per change, `spec.replicas: 2 → 5`,
// followed by its manager when the changes come from several. Paths read like kubectl's JSONPath,
// long values are elided in the middle so both ends stay visible. Names,
// paths and values come from the cluster: each passes through printable()
// before it is colored, so no control character, bidi override or
// invisible character reaches the terminal as itself.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Change } from '../diff/types.ts';
import { type ChangeEvent, offlineNote, qualifiedResource } from '../events/event.ts';
import type { JsonValue } from '../kube/types.ts';
import { objectKey } from '../kube/types.ts';
import { printable } from '../util/terminal-text.ts';
import { printedTime } from '../util/timestamp.ts';
import { byText, changesFromSeveralManagers } from './who.ts';

export interface PrettyOptions {
  color: boolean;
  /** Longest rendered value before eliding. */
  maxValueLength?: number;
}

export function prettyRenderer(options: PrettyOptions): (event: ChangeEvent) => string {
  const chalk = new Chalk({ level: options.color ? 1 : 0 });
  const maxValueLength = options.maxValueLength ?? 100;
  return (event) => renderPretty(event, chalk, maxValueLength);
}

function renderPretty(event: ChangeEvent, chalk: ChalkInstance, maxValueLength: number): string {
  const color = event.type === 'ADDED' ? chalk.green : event.type === 'DELETED' ? chalk.red : chalk.yellow;
  const { object } = event;
  const name = printable(objectKey(object));
  const notes = [offlineNote(event) ?? '', event.finalStateUnknown ? 'final state unknown' : ''].filter(
    Boolean,
  );
  const by = byText(event.by);
  const header = [
    chalk.dim(printedTime(event.time)),
    color.bold(event.type.padEnd(7)),
    printable(qualifiedResource(event)),
    chalk.bold(name),
    by ? `by ${chalk.magenta(printable(by))}` : '',
    event.cluster ? chalk.dim(`[${printable(event.cluster)}]`) : '',
    notes.length > 0 ? chalk.dim(`(${notes.join(', ')})`) : '',
  ]
    .filter(Boolean)
    .join(' ');
  const lines = [header];
  const changes = event.changes ?? [];
  const perChange = changesFromSeveralManagers(changes);
  for (const change of changes) {
    const owner = perChange && change.manager ? chalk.dim(` (${printable(change.manager)})`) : '';
    lines.push(`  ${renderChange(change, chalk, maxValueLength)}${owner}`);
  }
  return `${lines.join('\n')}\n`;
}

export function renderChange(change: Change, chalk: ChalkInstance, maxValueLength: number): string {
  const path = chalk.cyan(readablePath(change.path));
  const from = () => chalk.red(renderValue(change.from ?? null, maxValueLength));
  const to = () => chalk.green(renderValue(change.to ?? null, maxValueLength));
  if (change.op === 'add') return `${chalk.green('+')} ${path}: ${to()}`;
  if (change.op === 'remove') return `${chalk.red('-')} ${path}: ${from()}`;
  return `${chalk.yellow('~')} ${path}: ${from()} → ${to()}`;
}

/** '/spec/containers/0/image' → 'spec.containers[0].image'; odd keys are bracketed. */
export function readablePath(pointer: string): string {
  return printable(pathText(pointer));
}

function pathText(pointer: string): string {
  if (pointer === '') return '(whole object)';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

export function renderValue(value: JsonValue, maxLength: number): string {
  let text = printable(JSON.stringify(value));
  if (typeof value === 'string' && value.includes('\n')) {
    const lines = value.split('\n');
    text = `${printable(JSON.stringify(lines[0]))} (+${lines.length - 1} more lines)`;
  }
  if (text.length <= maxLength) return text;
  const keep = Math.max(4, Math.floor((maxLength - 1) / 2));
  return `${text.slice(0, keep)}…${text.slice(-keep)}`;
}
