/// <reference lib="dom" />
// The page: filters, the timeline, the events in view, the object open; the address holds the view.
import type { EventPage, EventSummary, Facets, Timeline } from '../../state/timeline-reader.ts';
import { followStream, getJson, takeTokenFromFragment } from './api.ts';
import { showObject } from './object-view.ts';
import { drawTimeline, rowKeyOf } from './timeline.ts';
import { FILTER_NAMES, filterParams, HOUR, readView, TYPES, type View, writeView } from './view.ts';
import { visible } from './visible-text.ts';

const $ = <T extends HTMLElement>(selector: string) => document.querySelector<T>(selector)!;
const form = $<HTMLFormElement>('#filters');
const timelineBox = $('#timeline');
const status = $('#status');
const objectSection = $('#object');
const tableBody = $('#events tbody');
const olderButton = $<HTMLButtonElement>('#older');

let facets: Facets;
let view: View;
let timeline: Timeline | undefined;
let olderCursor: number | undefined;
let stream: AbortController | undefined;
let refetchTimer: number | undefined;
/** The newest event seq the page has (live events at or below it are already shown). */
let seen = 0;

function fillSelect(name: string, values: { value: string; label: string }[], chosen: string): void {
  const select = form.elements.namedItem(name) as HTMLSelectElement;
  select.replaceChildren(new Option('all', ''));
  for (const { value, label } of values)
    select.append(new Option(visible(label), value, false, value === chosen));
  if (chosen && !values.some((entry) => entry.value === chosen))
    select.append(new Option(visible(chosen), chosen, false, true));
}

function viewToForm(): void {
  fillSelect(
    'cluster',
    facets.clusters.map((value) => ({ value, label: value })),
    view.filters.cluster,
  );
  fillSelect(
    'namespace',
    facets.namespaces.map((value) => ({ value, label: value === '-' ? '(cluster-scoped)' : value })),
    view.filters.namespace,
  );
  fillSelect(
    'kind',
    facets.resources.map((entry) => ({ value: entry.resource, label: `${entry.kind} (${entry.resource})` })),
    view.filters.kind,
  );
  for (const name of ['name', 'manager', 'user', 'path'] as const)
    (form.elements.namedItem(name) as HTMLInputElement).value = view.filters[name];
  (form.elements.namedItem('rows') as HTMLSelectElement).value = view.rows;
  for (const box of form.querySelectorAll<HTMLInputElement>('input[name=type]'))
    box.checked = view.types.includes(box.value);
}

function formToView(): void {
  const data = new FormData(form);
  for (const name of FILTER_NAMES) view.filters[name] = String(data.get(name) ?? '').trim();
  view.types = data.getAll('type').map(String);
  if (view.types.length === 0) view.types = [...TYPES];
  view.rows = data.get('rows') === 'kind' ? 'kind' : 'namespace';
}

function describeObject(event: EventSummary): string {
  return `${event.kind} ${event.namespace ? `${event.namespace}/` : ''}${event.name}`;
}

function eventRow(event: EventSummary): HTMLTableRowElement {
  const row = document.createElement('tr');
  const cells = [
    event.time.replace('T', ' ').replace('Z', ''),
    event.type,
    '',
    event.type === 'UPDATED' ? String(event.changes) : '',
    [event.user, event.manager].filter(Boolean).join(' / '),
  ].map((text) => {
    const cell = document.createElement('td');
    cell.textContent = visible(text);
    return cell;
  });
  cells[1]!.className = `type-${event.type}`;
  const open = document.createElement('button');
  open.type = 'button';
  open.textContent = visible(describeObject(event));
  open.addEventListener('click', () => void openObject(event));
  cells[2]!.append(open);
  row.append(...cells);
  return row;
}

async function loadEvents(older = false): Promise<void> {
  const params = filterParams(view);
  params.set('from', new Date(view.from).toISOString());
  params.set('to', new Date(view.to).toISOString());
  params.set('limit', '100');
  if (older && olderCursor) params.set('before', String(olderCursor));
  const page = await getJson<EventPage>('/api/v1/events', params);
  if (!older) tableBody.replaceChildren();
  tableBody.append(...page.events.map(eventRow));
  olderCursor = page.next;
  olderButton.hidden = page.next === undefined;
}

function redraw(): void {
  if (!timeline) return;
  drawTimeline(timelineBox, timeline, view.rows, view.object?.seq, {
    open: (event) => void openObject(event),
    zoomTo: (from, to) => void setWindow(from, to, false),
  });
  $('#window').textContent =
    `${new Date(view.from).toISOString().replace('T', ' ').slice(0, 19)} → ${new Date(view.to).toISOString().replace('T', ' ').slice(0, 19)} UTC${view.live ? ' (live)' : ''}`;
  status.textContent = `${timeline.total} event${timeline.total === 1 ? '' : 's'} in view${timeline.density ? `, shown as density per ${Math.max(1, Math.round(timeline.density.bucketMs / 1000))} s` : ''}.`;
}

async function loadTimeline(): Promise<void> {
  const params = filterParams(view);
  params.set('from', new Date(view.from).toISOString());
  params.set('to', new Date(view.to).toISOString());
  params.set('rows', view.rows);
  params.set('buckets', String(Math.max(50, Math.min(1000, Math.floor(timelineBox.clientWidth / 4)))));
  timeline = await getJson<Timeline>('/api/v1/timeline', params);
  seen = Math.max(seen, timeline.latestSeq);
  redraw();
}

async function refresh(): Promise<void> {
  writeView(view);
  stream?.abort();
  await Promise.all([loadTimeline(), loadEvents()]);
  restartStream();
}

async function setWindow(from: number, to: number, live: boolean): Promise<void> {
  view.from = Math.round(from);
  view.to = Math.round(Math.max(to, from + 1000));
  view.live = live;
  await refresh();
}

async function openObject(
  event: Pick<EventSummary, 'resource' | 'namespace' | 'name' | 'cluster'> & { seq?: number },
): Promise<void> {
  view.object = { kind: event.resource, name: event.name };
  if (event.namespace) view.object.namespace = event.namespace;
  // A shared history holds the same name in several clusters: the object of this event's.
  if (event.cluster) view.object.cluster = event.cluster;
  if (event.seq) view.object.seq = event.seq;
  writeView(view);
  redraw();
  await showObject(objectSection, view.object, new URLSearchParams());
}

/** New events while the page is open: drawn at once, and the window follows them when live. */
function onLiveEvents(events: EventSummary[]): void {
  if (!timeline) return;
  let outside = false;
  for (const event of events) {
    if (event.seq <= seen) continue;
    seen = event.seq;
    const at = Date.parse(event.time);
    if (view.live && at >= view.to) {
      view.to = at + 60_000;
      outside = true;
    }
    if (at < view.from || at >= view.to) continue;
    timeline.total += 1;
    tableBody.prepend(eventRow(event));
    const key = rowKeyOf(event, view.rows);
    const row = timeline.rows.find((candidate) => candidate.key === key);
    if (row) row.count += 1;
    else
      timeline.rows.push({
        key,
        label: view.rows === 'kind' ? `${event.kind} (${event.resource})` : key,
        count: 1,
      });
    if (timeline.marks && timeline.marks.length < 2_000) timeline.marks.push(event);
    else outside = true;
  }
  if (outside) {
    // The window moved or grew past single marks: ask the server again, at most every 2 s.
    if (refetchTimer === undefined)
      refetchTimer = window.setTimeout(() => {
        refetchTimer = undefined;
        void loadTimeline();
      }, 2_000);
  }
  redraw();
  $('#live').textContent =
    `live: ${events.length} new event${events.length === 1 ? '' : 's'} at ${new Date().toISOString().slice(11, 19)} UTC`;
}

function restartStream(): void {
  stream?.abort();
  stream = new AbortController();
  const live = $('#live');
  void followStream(
    filterParams(view),
    seen,
    onLiveEvents,
    (on) => {
      live.classList.toggle('on', on);
      if (!on) live.textContent = 'live updates paused: reconnecting…';
      else if (live.textContent?.startsWith('connecting') || live.textContent?.startsWith('live updates'))
        live.textContent = 'live';
    },
    stream.signal,
  );
}

function zoom(factor: number): void {
  const middle = (view.from + view.to) / 2;
  const half = ((view.to - view.from) * factor) / 2;
  void setWindow(middle - half, middle + half, false);
}

function pan(fraction: number): void {
  const shift = (view.to - view.from) * fraction;
  void setWindow(view.from + shift, view.to + shift, false);
}

function wireControls(): void {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    formToView();
    void refresh();
  });
  form.addEventListener('change', () => {
    formToView();
    void refresh();
  });
  $('#zoom-in').addEventListener('click', () => zoom(0.5));
  $('#zoom-out').addEventListener('click', () => zoom(2));
  $('#pan-back').addEventListener('click', () => pan(-0.5));
  $('#pan-forward').addEventListener('click', () => pan(0.5));
  $('#go-live').addEventListener('click', () => {
    const end = Math.max(Date.now(), Date.parse(facets.last ?? '') || 0) + 60_000;
    void setWindow(end - HOUR, end, true);
  });
  olderButton.addEventListener('click', () => void loadEvents(true));
  $('#close-object').addEventListener('click', () => {
    objectSection.hidden = true;
    delete view.object;
    writeView(view);
    redraw();
  });
  timelineBox.addEventListener('keydown', (event) => {
    const actions: Record<string, () => void> = {
      ArrowLeft: () => pan(-0.25),
      ArrowRight: () => pan(0.25),
      '+': () => zoom(0.5),
      '=': () => zoom(0.5),
      '-': () => zoom(2),
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  });
  let dragStart: { x: number; from: number; to: number } | undefined;
  timelineBox.addEventListener('pointerdown', (event) => {
    if ((event.target as Element).classList?.contains('mark')) return;
    dragStart = { x: event.clientX, from: view.from, to: view.to };
  });
  window.addEventListener('pointerup', (event) => {
    if (!dragStart) return;
    const moved = event.clientX - dragStart.x;
    const start = dragStart;
    dragStart = undefined;
    if (Math.abs(moved) < 5) return;
    const shift = (-moved / Math.max(1, timelineBox.clientWidth - 240)) * (start.to - start.from);
    void setWindow(start.from + shift, start.to + shift, false);
  });
  window.addEventListener('resize', redraw);
}

async function start(): Promise<void> {
  takeTokenFromFragment();
  try {
    facets = await getJson<Facets>('/api/v1/facets', new URLSearchParams());
    seen = facets.latestSeq;
  } catch (error) {
    status.textContent = `Cannot read the history: ${(error as Error).message}`;
    $('#live').textContent = '';
    return;
  }
  view = readView(location.search, Date.parse(facets.last ?? '') || 0);
  // An old history with nothing in the last hour: show its last hour instead.
  const last = Date.parse(facets.last ?? '');
  if (view.live && !location.search.includes('from=') && last < view.to - HOUR) {
    view = { ...view, from: last - HOUR + 60_000, to: last + 60_000, live: false };
  }
  viewToForm();
  wireControls();
  await refresh();
  if (view.object) await showObject(objectSection, view.object, new URLSearchParams());
}

void start();
