/// <reference lib="dom" />
// The timeline: time across, one row per namespace or kind, one mark per event coloured (and shaped)
// by its type; when the window holds too many events, cells shaded by how many fell in each bucket.
import type { EventSummary, Timeline } from '../../state/timeline-reader.ts';
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
}

export function rowKeyOf(event: EventSummary, rows: 'namespace' | 'kind'): string {
  return rows === 'namespace' ? (event.namespace ?? '-') : event.resource;
}

export function formatTime(ms: number, span: number): string {
  const iso = new Date(ms).toISOString();
  return span > 2 * 86_400_000 ? iso.slice(5, 16).replace('T', ' ') : iso.slice(11, span < 120_000 ? 19 : 16);
}

export function drawTimeline(
  container: HTMLElement,
  data: Timeline,
  rowsBy: 'namespace' | 'kind',
  selected: number | undefined,
  handlers: TimelineHandlers,
): void {
  const width = Math.max(400, container.clientWidth);
  const from = Date.parse(data.from);
  const to = Date.parse(data.to);
  const span = to - from;
  const plot = width - LABEL_WIDTH - 10;
  const x = (ms: number) => LABEL_WIDTH + ((ms - from) / span) * plot;
  const rows = data.rows.length > 0 ? data.rows : [{ key: '', label: 'no events in this window', count: 0 }];
  const height = AXIS_HEIGHT + rows.length * ROW_HEIGHT + 4;
  const svg = element('svg', { viewBox: `0 0 ${width} ${height}`, height, role: 'group' });
  svg.setAttribute('aria-label', `Timeline, ${data.total} events, ${rows.length} rows`);

  const step = STEPS.find((candidate) => span / candidate <= 10) ?? STEPS.at(-1)!;
  for (let tick = Math.ceil(from / step) * step; tick < to; tick += step) {
    svg.append(element('line', { x1: x(tick), x2: x(tick), y1: AXIS_HEIGHT - 4, y2: height, class: 'grid' }));
    const label = element('text', { x: x(tick) + 2, y: 14, class: 'tick' });
    label.textContent = formatTime(tick, span);
    svg.append(label);
  }
  const rowIndex = new Map(rows.map((row, index) => [row.key, index]));
  rows.forEach((row, index) => {
    const y = AXIS_HEIGHT + index * ROW_HEIGHT;
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

  if (data.density) {
    const { bucketMs, cells } = data.density;
    const busiest = Math.max(1, ...cells.map((cell) => cell.added + cell.updated + cell.deleted));
    for (const cell of cells) {
      const index = rowIndex.get(cell.row);
      if (index === undefined) continue;
      const count = cell.added + cell.updated + cell.deleted;
      const type =
        cell.deleted >= cell.updated && cell.deleted >= cell.added
          ? 'deleted'
          : cell.updated >= cell.added
            ? 'updated'
            : 'added';
      const start = from + cell.bucket * bucketMs;
      const rect = element('rect', {
        x: x(start),
        y: AXIS_HEIGHT + index * ROW_HEIGHT + 3,
        width: Math.max(2, (bucketMs / span) * plot),
        height: ROW_HEIGHT - 6,
        class: `mark ${type}`,
        'fill-opacity': (0.25 + (0.75 * Math.log1p(count)) / Math.log1p(busiest)).toFixed(2),
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
  for (const event of data.marks ?? []) {
    const index = rowIndex.get(rowKeyOf(event, rowsBy));
    if (index === undefined) continue;
    const cx = x(Date.parse(event.time));
    const cy = AXIS_HEIGHT + index * ROW_HEIGHT + ROW_HEIGHT / 2;
    const type = event.type.toLowerCase();
    // Shape as well as colour: added ▲, updated ■, deleted ▼.
    const points =
      event.type === 'ADDED'
        ? `${cx},${cy - 7} ${cx + 6},${cy + 5} ${cx - 6},${cy + 5}`
        : event.type === 'DELETED'
          ? `${cx - 6},${cy - 5} ${cx + 6},${cy - 5} ${cx},${cy + 7}`
          : `${cx - 5},${cy - 5} ${cx + 5},${cy - 5} ${cx + 5},${cy + 5} ${cx - 5},${cy + 5}`;
    const label = visible(
      `${event.type} ${event.kind} ${event.namespace ? `${event.namespace}/` : ''}${event.name} at ${event.time}`,
    );
    const mark = element('polygon', {
      points,
      class: `mark ${type}${event.seq === selected ? ' selected' : ''}`,
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
  container.replaceChildren(svg);
}
