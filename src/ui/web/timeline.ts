/// <reference lib="dom" />
// The timeline: time across, one row per namespace or kind, one mark per event coloured (and shaped)
// by its type; when the window holds too many events, cells shaded by how many fell in each bucket.
import type { DensityCell, EventSummary, Timeline } from '../../state/timeline-reader.ts';
import { worstVerdict } from './event-row.ts';
import { groupStories, type Story, storyText } from './stories.ts';
import { visible } from './visible-text.ts';

const SVG = 'http://www.w3.org/2000/svg';
const LABEL_WIDTH = 230;
const ROW_HEIGHT = 22;
const AXIS_HEIGHT = 22;
const STEPS = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400].map(
  (seconds) => seconds * 1000,
);

function element<K extends keyof SVGElementTagNameMap>(name: K, attributes: Record<string, string | number>) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

export interface TimelineHandlers {
  open(event: EventSummary): void;
  zoomTo(from: number, to: number): void;
  /** A story's mark: open it into its events, or close it (undefined). */
  toggleStory(key: string | undefined): void;
}

export function rowKeyOf(event: EventSummary, rows: 'namespace' | 'kind'): string {
  return rows === 'namespace' ? (event.namespace ?? '-') : event.resource;
}

/** The status line under the timeline: how many events, and the bucket when they are shown as density. */
export function timelineSummary(data: Pick<Timeline, 'total' | 'density'>): string {
  return `${data.total} event${data.total === 1 ? '' : 's'} in view${data.density ? `, shown as density per ${Math.max(1, Math.round(data.density.bucketMs / 1000))} s` : ''}.`;
}

/** A tick's label: the time of day (seconds too in a window under two minutes), the date too beyond two days. */
export function formatTime(ms: number, span: number): string {
  const iso = new Date(ms).toISOString();
  return span > 2 * 86_400_000 ? iso.slice(5, 16).replace('T', ' ') : iso.slice(11, span < 120_000 ? 19 : 16);
}

export function drawTimeline(
  container: HTMLElement,
  data: Timeline,
  rowsBy: 'namespace' | 'kind',
  selected: number | undefined,
  openStory: string | undefined,
  handlers: TimelineHandlers,
): void {
  const rows = data.rows.length > 0 ? data.rows : [{ key: '', label: 'no events in this window', count: 0 }];
  const layout = layoutOf(Math.max(400, container.clientWidth), data, rows.length);
  const svg = element('svg', {
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    height: layout.height,
    role: 'group',
  });
  svg.setAttribute('aria-label', `Timeline, ${data.total} events, ${rows.length} rows`);
  const rowIndex = new Map(rows.map((row, index) => [row.key, index]));
  // Painted in this order: later layers lie on top (the marks over the shading over the grid).
  drawAxis(svg, layout);
  drawRows(svg, rows, layout);
  if (data.density) drawDensity(svg, data.density, rowIndex, layout, handlers);
  const rowOf = (event: EventSummary) => rowIndex.get(rowKeyOf(event, rowsBy));
  const { stories, single } = groupStories(data.marks ?? [], (event) => rowKeyOf(event, rowsBy));
  const shown = [...single];
  for (const story of stories) {
    drawStory(svg, story, story.key === openStory, rowIndex.get(story.row), layout, handlers);
    if (story.key === openStory) shown.push(...story.events);
  }
  drawMarks(svg, shown, rowOf, selected, layout, handlers);
  container.replaceChildren(svg);
}

/** Where things go: time across the plot (right of the row labels), rows down below the axis. */
export interface Layout {
  width: number;
  height: number;
  from: number;
  to: number;
  span: number;
  /** The plot's width: from the labels to the right edge. */
  plot: number;
  x(ms: number): number;
  /** The top of row `index`. */
  rowTop(index: number): number;
}

export function layoutOf(width: number, data: Pick<Timeline, 'from' | 'to'>, rowCount: number): Layout {
  const from = Date.parse(data.from);
  const to = Date.parse(data.to);
  const span = to - from;
  const plot = width - LABEL_WIDTH - 10;
  return {
    width,
    height: AXIS_HEIGHT + rowCount * ROW_HEIGHT + 4,
    from,
    to,
    span,
    plot,
    x: (ms) => LABEL_WIDTH + ((ms - from) / span) * plot,
    rowTop: (index) => AXIS_HEIGHT + index * ROW_HEIGHT,
  };
}

/** The axis's ticks: about ten across the window, each at a multiple of one round step (STEPS). */
export function ticksOf({ from, to, span }: Pick<Layout, 'from' | 'to' | 'span'>): number[] {
  const step = STEPS.find((candidate) => span / candidate <= 10) ?? STEPS.at(-1)!;
  const ticks: number[] = [];
  for (let tick = Math.ceil(from / step) * step; tick < to; tick += step) ticks.push(tick);
  return ticks;
}

/** Each tick labelled, with a grid line down through the rows. */
function drawAxis(svg: SVGSVGElement, layout: Layout): void {
  const { span, height, x } = layout;
  for (const tick of ticksOf(layout)) {
    svg.append(element('line', { x1: x(tick), x2: x(tick), y1: AXIS_HEIGHT - 4, y2: height, class: 'grid' }));
    const label = element('text', { x: x(tick) + 2, y: 14, class: 'tick' });
    label.textContent = formatTime(tick, span);
    svg.append(label);
  }
}

/** Each row's label (cut to fit, whole in its tooltip) and the line under it. */
function drawRows(svg: SVGSVGElement, rows: Timeline['rows'], { width, rowTop }: Layout): void {
  rows.forEach((row, index) => {
    const y = rowTop(index);
    const label = element('text', { x: 4, y: y + 15, class: 'row-label' });
    const shown = visible(row.label);
    label.textContent = shown.length > 36 ? `${shown.slice(0, 35)}…` : shown;
    const title = element('title', {});
    title.textContent = `${shown}: ${row.count} events`;
    label.append(title);
    svg.append(
      label,
      element('line', { x1: LABEL_WIDTH, x2: width, y1: y + ROW_HEIGHT, y2: y + ROW_HEIGHT, class: 'grid' }),
    );
  });
}

/**
 * Too many events to mark one by one: a cell per row and bucket, coloured by its commonest type and
 * shaded by its count (on a log scale, so that a quiet cell stays visible beside the busiest one).
 * Clicking a cell zooms into its bucket.
 */
function drawDensity(
  svg: SVGSVGElement,
  { bucketMs, cells }: NonNullable<Timeline['density']>,
  rowIndex: ReadonlyMap<string, number>,
  { from, span, plot, x, rowTop }: Layout,
  handlers: TimelineHandlers,
): void {
  const busiest = Math.max(1, ...cells.map((cell) => cell.added + cell.updated + cell.deleted));
  for (const cell of cells) {
    const index = rowIndex.get(cell.row);
    if (index === undefined) continue;
    const count = cell.added + cell.updated + cell.deleted;
    const start = from + cell.bucket * bucketMs;
    const rect = element('rect', {
      x: x(start),
      y: rowTop(index) + 3,
      width: Math.max(2, (bucketMs / span) * plot),
      height: ROW_HEIGHT - 6,
      class: `mark ${commonestType(cell)}`,
      'fill-opacity': densityOpacity(count, busiest),
      tabindex: 0,
      role: 'button',
      'aria-label': `${cell.row}, ${formatTime(start, span)}: ${count} events (${cell.added} added, ${cell.updated} updated, ${cell.deleted} deleted); zoom in`,
    });
    const zoom = () => handlers.zoomTo(start, start + bucketMs);
    rect.addEventListener('click', zoom);
    rect.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') zoom();
    });
    const title = element('title', {});
    title.textContent = rect.getAttribute('aria-label') ?? '';
    rect.append(title);
    svg.append(rect);
  }
}

/** A cell's shade: from 0.25 (one event) to 1 (the busiest cell), on a log scale. */
export function densityOpacity(count: number, busiest: number): string {
  return (0.25 + (0.75 * Math.log1p(count)) / Math.log1p(busiest)).toFixed(2);
}

/** The type most of a cell's events have; ties go to the rarer kind of change (deleted, then updated). */
export function commonestType(cell: DensityCell): 'added' | 'updated' | 'deleted' {
  if (cell.deleted >= cell.updated && cell.deleted >= cell.added) return 'deleted';
  return cell.updated >= cell.added ? 'updated' : 'added';
}

/** ` verdict-degraded` for a story whose rollout came to that (its label says it in words too). */
function verdictClass(story: Story): string {
  const verdict = worstVerdict(story.events);
  return verdict ? ` verdict-${verdict}` : '';
}

/**
 * A story: one mark across its time with its count, which opens into its events (drawn over it as
 * single marks) on click or Enter/Space, and closes again.
 */
function drawStory(
  svg: SVGSVGElement,
  story: Story,
  open: boolean,
  index: number | undefined,
  { x, rowTop, span }: Layout,
  handlers: TimelineHandlers,
): void {
  if (index === undefined) return;
  const first = x(Date.parse(story.events[0]!.time));
  const last = x(Date.parse(story.events.at(-1)!.time));
  const count = String(story.events.length);
  const width = Math.max(last - first + 16, 14 + count.length * 7);
  const start = first - 8;
  const y = rowTop(index) + 2;
  const from = formatTime(Date.parse(story.events[0]!.time), Math.min(span, 60_000));
  const label = visible(
    `Story of ${storyText(story)} from ${from}; ${open ? 'open: Enter closes it' : 'Enter shows its events'}`,
  );
  const group = element('g', {
    class: `story${open ? ' open' : ''}${verdictClass(story)}`,
    tabindex: 0,
    role: 'button',
    'aria-expanded': String(open),
    'aria-label': label,
    'data-story': story.key,
  });
  group.append(element('rect', { x: start, y, width, height: ROW_HEIGHT - 4, rx: 5 }));
  if (!open) {
    const text = element('text', { x: start + width / 2, y: y + 13, 'text-anchor': 'middle' });
    text.textContent = count;
    group.append(text);
  }
  const title = element('title', {});
  title.textContent = label;
  group.append(title);
  const toggle = () => handlers.toggleStory(open ? undefined : story.key);
  group.addEventListener('click', toggle);
  group.addEventListener('keydown', (key) => {
    if (key.key === 'Enter' || key.key === ' ') {
      key.preventDefault();
      toggle();
    }
  });
  svg.append(group);
}

/** One mark per event in its row, opening the event on click or Enter/Space. */
function drawMarks(
  svg: SVGSVGElement,
  events: readonly EventSummary[],
  rowOf: (event: EventSummary) => number | undefined,
  selected: number | undefined,
  { x, rowTop }: Layout,
  handlers: TimelineHandlers,
): void {
  for (const event of events) {
    const index = rowOf(event);
    if (index === undefined) continue;
    const label = visible(
      `${event.type} ${event.kind} ${event.namespace ? `${event.namespace}/` : ''}${event.name} at ${event.time}`,
    );
    const mark = element('polygon', {
      points: markPoints(event.type, x(Date.parse(event.time)), rowTop(index) + ROW_HEIGHT / 2),
      class: `mark ${event.type.toLowerCase()}${event.seq === selected ? ' selected' : ''}`,
      tabindex: 0,
      role: 'button',
      'aria-label': label,
      'data-seq': event.seq,
    });
    const title = element('title', {});
    title.textContent = label;
    mark.append(title);
    mark.addEventListener('click', () => handlers.open(event));
    mark.addEventListener('keydown', (key) => {
      if (key.key === 'Enter' || key.key === ' ') {
        key.preventDefault();
        handlers.open(event);
      }
    });
    svg.append(mark);
  }
}

/** Shape as well as colour, for readers who cannot tell the colours apart: added ▲, updated ■, deleted ▼. */
export function markPoints(type: EventSummary['type'], cx: number, cy: number): string {
  if (type === 'ADDED') return `${cx},${cy - 7} ${cx + 6},${cy + 5} ${cx - 6},${cy + 5}`;
  if (type === 'DELETED') return `${cx - 6},${cy - 5} ${cx + 6},${cy - 5} ${cx},${cy + 7}`;
  return `${cx - 5},${cy - 5} ${cx + 5},${cy - 5} ${cx + 5},${cy + 5} ${cx - 5},${cy + 5}`;
}
