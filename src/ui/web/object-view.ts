/// <reference lib="dom" />
// One object's history: every event with its changes as `path: from → to`, who made it and the story
// (root controller) it belongs to, and two versions the history can rebuild side by side.
import type { Change } from '../../diff/types.ts';
import type { ChangeEvent } from '../../events/event.ts';
import type { ObjectAnswer } from '../object-view-worker.ts';
import { getJson } from './api.ts';
import { visible } from './visible-text.ts';

/** An element holding `text`, every character of it visible (visible-text.ts). */
function html<K extends keyof HTMLElementTagNameMap>(name: K, text?: string, className?: string) {
  const node = document.createElement(name);
  if (text !== undefined) node.textContent = visible(text);
  if (className) node.className = className;
  return node;
}

export function valueText(value: unknown): string {
  if (value === undefined) return '∅';
  const text = JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

/** One change as the object's history lists it: `path: from → to`, and the field manager that made it. */
export function changeText(change: Change): string {
  return `${change.path}: ${valueText(change.from)} → ${valueText(change.to)}${change.manager ? `  (${change.manager})` : ''}`;
}

export function whoText(event: ChangeEvent): string | undefined {
  const user = event.by?.user?.username;
  const managers = [...new Set((event.by?.managers ?? []).map((entry) => entry.manager))].join(', ');
  if (user && managers) return `by ${user} (${managers})`;
  if (user || managers) return `by ${user || managers}`;
  return undefined;
}

export interface ObjectRef {
  cluster?: string;
  kind: string;
  namespace?: string;
  name: string;
  seq?: number;
}

export async function showObject(section: HTMLElement, ref: ObjectRef, base: URLSearchParams): Promise<void> {
  const params = new URLSearchParams(base);
  params.set('kind', ref.kind);
  params.set('name', ref.name);
  if (ref.namespace) params.set('namespace', ref.namespace);
  if (ref.cluster) params.set('cluster', ref.cluster);
  const answer = await getJson<ObjectAnswer>('/api/v1/object', params);
  const heading = section.querySelector<HTMLElement>('#object-heading')!;
  const kind = answer.events.at(-1)?.object.kind ?? ref.kind;
  heading.textContent = visible(`${kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`);
  const list = section.querySelector<HTMLOListElement>('#object-events')!;
  list.replaceChildren();
  const selected = ref.seq ?? answer.events.at(-1)?.seq;
  const rebuildable = new Set(answer.rebuildable);
  let pickA: number | undefined;
  let pickB: number | undefined;
  const index = answer.events.findIndex((event) => event.seq === selected);
  if (rebuildable.has(selected ?? 0)) {
    pickB = selected;
    const before = answer.events[index - 1];
    pickA = before && rebuildable.has(before.seq) ? before.seq : undefined;
  }
  if (answer.notice) list.append(html('li', answer.notice, 'meta'));
  else if (answer.truncated)
    list.append(html('li', 'Older events are not shown (the newest 500 are).', 'meta'));
  for (const event of answer.events) {
    const item = html('li');
    item.dataset.seq = String(event.seq);
    if (event.seq === selected) item.className = 'selected';
    const line = html('div');
    line.append(
      html('time', event.time.replace('T', ' ').replace('Z', ' UTC')),
      ' ',
      html('strong', event.type, `type-${event.type}`),
    );
    const who = whoText(event);
    if (who) line.append(' ', html('span', who, 'meta'));
    if (event.owner) line.append(' ', html('span', `story: ${event.owner.kind} ${event.owner.name}`, 'meta'));
    if (event.offline) line.append(' ', html('span', '(while not watching)', 'meta'));
    if (event.cluster) line.append(' ', html('span', `[${event.cluster}]`, 'meta'));
    if (rebuildable.has(event.seq)) {
      for (const side of ['A', 'B'] as const) {
        const label = html('label', undefined, 'pick');
        const radio = html('input');
        radio.type = 'radio';
        radio.name = `version-${side}`;
        radio.value = String(event.seq);
        radio.checked = (side === 'A' ? pickA : pickB) === event.seq;
        radio.addEventListener('change', () => {
          if (side === 'A') pickA = event.seq;
          else pickB = event.seq;
          void compare(section, params, pickA, pickB);
        });
        label.append(radio, ` version ${side}`);
        line.append(label);
      }
    }
    item.append(line);
    if (event.changes?.length) {
      const changes = html('ul', undefined, 'changes');
      for (const change of event.changes) changes.append(html('li', changeText(change)));
      item.append(changes);
    }
    list.append(item);
  }
  section.hidden = false;
  await compare(section, params, pickA, pickB);
  heading.focus();
  list.querySelector('li.selected')?.scrollIntoView({ block: 'nearest' });
}

async function compare(section: HTMLElement, params: URLSearchParams, a?: number, b?: number): Promise<void> {
  const target = section.querySelector<HTMLElement>('#compare')!;
  target.replaceChildren();
  if (a === undefined || b === undefined) {
    target.append(
      html('p', 'Pick versions A and B (the ones the history can rebuild) to compare them.', 'meta'),
    );
    return;
  }
  const query = new URLSearchParams(params);
  query.set('a', String(a));
  query.set('b', String(b));
  const answer = await getJson<ObjectAnswer>('/api/v1/object', query);
  const left = JSON.stringify(answer.versions[a], null, 2).split('\n');
  const right = JSON.stringify(answer.versions[b], null, 2).split('\n');
  const [keepLeft, keepRight] = commonLines(left, right);
  for (const [side, lines, keep] of [
    ['A', left, keepLeft],
    ['B', right, keepRight],
  ] as const) {
    const figure = html('figure');
    figure.append(html('figcaption', `version ${side} (#${side === 'A' ? a : b})`));
    const pre = html('pre');
    lines.forEach((text, line) => {
      const shown = `${visible(text)}\n`;
      if (keep.has(line)) pre.append(shown);
      else {
        const changed = html('span', undefined, 'changed');
        changed.textContent = shown;
        pre.append(changed);
      }
    });
    figure.append(pre);
    target.append(figure);
  }
}

/**
 * The lines both sides share (a longest common subsequence), by index on each side, so that the others
 * can be marked; none beyond 4,000,000 line pairs (every line is then marked).
 */
export function commonLines(left: readonly string[], right: readonly string[]): [Set<number>, Set<number>] {
  if (left.length * right.length > 4_000_000) return [new Set(), new Set()];
  const table = Array.from({ length: left.length + 1 }, () => new Uint32Array(right.length + 1));
  for (let i = left.length - 1; i >= 0; i--)
    for (let j = right.length - 1; j >= 0; j--)
      table[i]![j] =
        left[i] === right[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
  const keepLeft = new Set<number>();
  const keepRight = new Set<number>();
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    if (left[i] === right[j]) {
      keepLeft.add(i++);
      keepRight.add(j++);
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) i++;
    else j++;
  }
  return [keepLeft, keepRight];
}
