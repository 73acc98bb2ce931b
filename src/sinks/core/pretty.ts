// The terminal rendering: a colored header per event (with who made it,
// `by kubectl-set`), then one line per change, `spec.replicas: 2 → 5`,
// followed by its manager when the changes come from several, then what a ConfigMap or Secret change
// reaches (`↳ used by deployment/web (env APP_MODE: …)`); an OUTCOME's header says its verdict and
// how long after the change, then its summary, its pods that are not ready, and its Warning Events.
// Paths read like kubectl's JSONPath,
// long values are elided in the middle so both ends stay visible. Names,
// paths and values come from the cluster: each passes through printable()
// before it is colored, so no control character, bidi override or
// invisible character reaches the terminal as itself.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Change } from '../../diff/types.ts';
import {
  type ChangeEvent,
  type KubediffEvent,
  type OutcomeEvent,
  offlineNote,
  qualifiedResource,
  type Verdict,
} from '../../events/event.ts';
import type { JsonValue } from '../../kube/types.ts';
import { objectKey } from '../../kube/types.ts';
import { printable } from '../../util/terminal-text.ts';
import { printedTime } from '../../util/timestamp.ts';
import { byText, changesFromSeveralManagers } from '../who.ts';
import { rollsOutLines, usedByLines } from './used-by-text.ts';

export interface PrettyOptions {
  color: boolean;
  /** Longest rendered value before eliding. */
  maxValueLength?: number;
}

export function prettyRenderer(options: PrettyOptions): (event: KubediffEvent) => string {
  const chalk = new Chalk({ level: options.color ? 1 : 0 });
  const maxValueLength = options.maxValueLength ?? 100;
  return (event) =>
    event.type === 'OUTCOME'
      ? renderOutcome(event, chalk, maxValueLength)
      : renderPretty(event, chalk, maxValueLength);
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
  // What a ConfigMap or Secret change reaches, and what a rollout brings (docs/used-by.md).
  for (const line of [...usedByLines(event.usedBy), ...rollsOutLines(event.rollsOut)])
    lines.push(`  ${chalk.blue(`↳ ${printable(line)}`)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * `10:31:47Z OUTCOME deployments.apps shop/web degraded 40.2s after the change by kubectl-set`, then the
 * summary, one line per pod of the revision that is not ready, and one per Warning Event.
 */
function renderOutcome(event: OutcomeEvent, chalk: ChalkInstance, maxValueLength: number): string {
  const color = VERDICT_COLORS[event.verdict](chalk);
  const { evidence } = event;
  const by = byText(event.by);
  const header = [
    chalk.dim(printedTime(event.time)),
    chalk.bold('OUTCOME'),
    printable(qualifiedResource(event)),
    chalk.bold(printable(objectKey(event.object))),
    color.bold(event.verdict),
    chalk.dim(`${event.after.toFixed(1)}s after the change`),
    by ? `by ${chalk.magenta(printable(by))}` : '',
    event.cluster ? chalk.dim(`[${printable(event.cluster)}]`) : '',
    event.offline ? chalk.dim('(change found offline)') : '',
  ]
    .filter(Boolean)
    .join(' ');
  const clip = (text: string) => elide(printable(text), maxValueLength);
  const lines = [header, `  ${clip(evidence.summary)}`];
  for (const pod of evidence.pods) {
    if (pod.ready && pod.restarts === 0) continue;
    const termination = pod.lastTermination
      ? `, last ${pod.lastTermination.reason ?? 'terminated'}${pod.lastTermination.exitCode !== undefined ? ` (exit ${pod.lastTermination.exitCode})` : ''}`
      : '';
    const restarts = pod.restarts > 0 ? `, ${pod.restarts} restart${pod.restarts === 1 ? '' : 's'}` : '';
    lines.push(
      `  ${color('•')} pod ${printable(pod.name)}: ${clip(pod.reason ?? pod.phase)}${restarts}${clip(termination)}`,
    );
  }
  for (const warning of evidence.warnings) {
    lines.push(
      `  ${chalk.yellow('!')} ${printable(warning.object)} ${printable(warning.reason)} ×${warning.count}: ${clip(warning.message)}`,
    );
  }
  if (evidence.note) lines.push(`  ${chalk.dim(clip(evidence.note))}`);
  return `${lines.join('\n')}\n`;
}

const VERDICT_COLORS: Record<Verdict, (chalk: ChalkInstance) => ChalkInstance> = {
  healthy: (chalk) => chalk.green,
  degraded: (chalk) => chalk.red,
  failed: (chalk) => chalk.red,
  superseded: (chalk) => chalk.yellow,
  unknown: (chalk) => chalk.yellow,
};

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
  return elide(text, maxLength);
}

/** `text` elided in the middle beyond `maxLength`, so that both ends stay visible. */
function elide(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const keep = Math.max(4, Math.floor((maxLength - 1) / 2));
  return `${text.slice(0, keep)}…${text.slice(-keep)}`;
}
