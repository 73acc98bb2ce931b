/// <reference lib="dom" />
// One object's history: every event with its changes as `path: from → to`, who made it and the story
// (root controller) it belongs to, and two versions the history can rebuild as a diff of their YAML.
import type { Change } from '../../diff/types.ts';
import type { ChangeEvent } from '../../events/event.ts';
import type { ObjectAnswer } from '../object-view-worker.ts';
import { getJson } from './api.ts';
import { lineText, renderDiff } from './diff-view.ts';
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

/** Where an object's history links to: another object (a workload of usedBy), by its resource. */
export interface ObjectLinks {
  open(ref: { resource: string; namespace?: string; name: string; cluster?: string }): void;
  /** The qualified resource of a kind the history holds (`Deployment` → `deployments.apps`), if any. */
  resourceOf(kind: string): string | undefined;
}

/** The workloads a ConfigMap or Secret change reaches, as an event carries them (issue 39: the usedBy of an event). */
interface UsedByWorkloads {
  usedBy?: { workloads?: { object: { kind: string; name: string; namespace?: string } }[] };
}

/** `used by: Deployment web, StatefulSet db`: each workload a link to its own history when the history has its kind. */
function usedByLine(
  event: ChangeEvent & UsedByWorkloads,
  links: ObjectLinks | undefined,
): HTMLElement | undefined {
  const workloads = event.usedBy?.workloads ?? [];
  if (workloads.length === 0) return undefined;
  const line = html('span', 'used by:', 'meta used-by');
  for (const { object } of workloads) {
    const namespace = object.namespace ?? event.object.namespace;
    const name = `${object.kind} ${namespace ? `${namespace}/` : ''}${object.name}`;
    const resource = links?.resourceOf(object.kind);
    line.append(' ');
    if (!links || !resource) {
      line.append(html('span', name));
      continue;
    }
    const link = html('button', name, 'link');
    link.type = 'button';
    link.addEventListener('click', () =>
      links.open({
        resource,
        name: object.name,
        ...(namespace ? { namespace } : {}),
        ...(event.cluster ? { cluster: event.cluster } : {}),
      }),
    );
    line.append(link);
  }
  return line;
}

export async function showObject(
  section: HTMLElement,
  ref: ObjectRef,
  base: URLSearchParams,
  links?: ObjectLinks,
): Promise<void> {
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
    const usedBy = usedByLine(event, links);
    if (usedBy) line.append(' ', usedBy);
    // The server's offlineNote() (src/events/event.ts): the words of the pretty and chat outputs.
    if (event.offlineNote) line.append(' ', html('span', `(${event.offlineNote})`, 'meta'));
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
  const diff = answer.diff ?? [];
  target.append(
    html('h3', `Version A (#${a}) → version B (#${b}), as YAML`),
    diff.length > 0 ? renderDiff(diff, visible) : html('p', 'Versions A and B are the same.', 'meta'),
  );
  for (const [side, seq] of [
    ['A', a],
    ['B', b],
  ] as const) {
    const text = answer.yaml?.[seq];
    if (text === undefined) continue;
    const whole = html('details', undefined, 'version');
    const pre = html('pre');
    for (const line of text.replace(/\n$/, '').split('\n')) pre.append(...lineText(line, visible), '\n');
    whole.append(html('summary', `Version ${side} (#${seq}) whole, as YAML`), pre);
    target.append(whole);
  }
}
