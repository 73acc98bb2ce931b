/// <reference lib="dom" />
// The page: filters, the timeline, the events in view, the object open; the address holds the view.
import type { EventPage, EventSummary, Facets, Timeline } from '../../state/timeline-reader.ts';
import { followStream, getJson, takeTokenFromFragment } from './api.ts';
import { byText, changesText, outcomeText } from './event-row.ts';
import { mergeLiveEvents } from './live.ts';
import { showObject } from './object-view.ts';
import { groupStories, storyText } from './stories.ts';
import { drawTimeline, rowKeyOf, timelineSummary } from './timeline.ts';
import {
  eventsQuery,
  FILTER_NAMES,
  filterParams,
  HOUR,
  panned,
  readView,
  TYPES,
  timelineQuery,
  type View,
  windowLabel,
  writeView,
  zoomed,
} from './view.ts';
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
  for (const name of ['q', 'name', 'manager', 'user', 'path'] as const)
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
  const cells = [event.time.replace('T', ' ').replace('Z', ''), event.type, '', '', byText(event)].map(
    (text) => {
      const cell = document.createElement('td');
      cell.textContent = visible(text);
      return cell;
    },
  );
  cells[1]!.className = `type-${event.type}`;
  const open = document.createElement('button');
  open.type = 'button';
  open.textContent = visible(describeObject(event));
  open.addEventListener('click', () => void openObject(event));
  cells[2]!.append(open);
  const changes = changesText(event);
  if (changes) {
    // Cut to the cell's width by the stylesheet; hovering or focusing it shows it whole.
    const text = document.createElement('span');
    text.className = 'change-text';
    text.tabIndex = 0;
    text.textContent = visible(changes);
    text.title = text.textContent;
    cells[3]!.append(text);
  }
  const outcome = outcomeText(event);
  if (outcome && event.outcome) {
    // Worded, not colour alone: the verdict is the first word.
    const verdict = document.createElement('span');
    verdict.className = `outcome verdict-${event.outcome.verdict}`;
    verdict.tabIndex = 0;
    verdict.textContent = visible(`→ ${outcome}`);
    verdict.title = verdict.textContent;
    cells[3]!.append(verdict);
  }
  if (event.user && event.manager) cells[4]!.title = visible(`${event.user} (${event.manager})`);
  row.append(...cells);
  return row;
}

async function loadEvents(older = false): Promise<void> {
  const page = await getJson<EventPage>('/api/v1/events', eventsQuery(view, older ? olderCursor : undefined));
  if (!older) tableBody.replaceChildren();
  tableBody.append(...page.events.map(eventRow));
  olderCursor = page.next;
  olderButton.hidden = page.next === undefined;
}

function redraw(): void {
  if (!timeline) return;
  drawTimeline(timelineBox, timeline, view.rows, view.object?.seq, view.story, {
    open: (event) => void openObject(event),
    zoomTo: (from, to) => void setWindow(from, to, false),
    toggleStory: (key) => {
      if (key) view.story = key;
      else delete view.story;
      writeView(view);
      redraw();
      if (key) $('#story-heading').focus();
      else timelineBox.querySelector<SVGElement>('.story[aria-expanded]')?.focus();
    },
  });
  $('#window').textContent = windowLabel(view);
  status.textContent = timelineSummary(timeline);
  showStory();
}

/** The story open on the timeline, as a table of its events (each opens its object). */
function showStory(): void {
  const section = $('#story');
  const rowsBy = view.rows;
  const story = view.story
    ? groupStories(timeline?.marks ?? [], (event) => rowKeyOf(event, rowsBy)).stories.find(
        (candidate) => candidate.key === view.story,
      )
    : undefined;
  section.hidden = !story;
  if (!story) return;
  $('#story-heading').textContent = visible(`Story: ${storyText(story)}`);
  $('#story-events tbody').replaceChildren(...story.events.map(eventRow));
}

async function loadTimeline(): Promise<void> {
  timeline = await getJson<Timeline>('/api/v1/timeline', timelineQuery(view, timelineBox.clientWidth));
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
  await showObject(objectSection, view.object, new URLSearchParams(), objectLinks);
}

/** Links out of an object's history: a workload that uses a ConfigMap (usedBy) opens its own. */
const objectLinks = {
  open: (ref: { resource: string; namespace?: string; name: string; cluster?: string }) =>
    void openObject(ref),
  resourceOf: (kind: string) => facets.resources.find((entry) => entry.kind === kind)?.resource,
};

/** New events while the page is open: drawn at once, and the window follows them when live. */
function onLiveEvents(events: EventSummary[]): void {
  if (!timeline) return;
  const merged = mergeLiveEvents(timeline, view, seen, events);
  seen = merged.seen;
  for (const event of merged.shown) tableBody.prepend(eventRow(event));
  if (merged.refetch) {
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
  const { from, to } = zoomed(view, factor);
  void setWindow(from, to, false);
}

function pan(fraction: number): void {
  const { from, to } = panned(view, fraction);
  void setWindow(from, to, false);
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
  $('#close-story').addEventListener('click', () => {
    delete view.story;
    writeView(view);
    redraw();
  });
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
    const { from, to } = panned(start, -moved / Math.max(1, timelineBox.clientWidth - 240));
    void setWindow(from, to, false);
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
  if (view.object) await showObject(objectSection, view.object, new URLSearchParams(), objectLinks);
}

void start();
