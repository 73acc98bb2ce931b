/// <reference lib="dom" />
// The view, held in the address (so it can be pasted into an incident channel): the time window, the
// filters, the rows, and the object open with its selected event.
export interface View {
  /** ms since the epoch; `live` windows end at the newest event and follow new ones. */
  from: number;
  to: number;
  live: boolean;
  rows: 'namespace' | 'kind';
  filters: Record<FilterName, string>;
  types: string[];
  object?: { cluster?: string; kind: string; namespace?: string; name: string; seq?: number };
}

export const FILTER_NAMES = ['cluster', 'namespace', 'kind', 'name', 'manager', 'user', 'path'] as const;
export type FilterName = (typeof FILTER_NAMES)[number];
export const TYPES = ['ADDED', 'UPDATED', 'DELETED'];
export const HOUR = 3_600_000;

/** The view an address holds; a live window ends a minute past `now` or the newest event, whichever is later. */
export function readView(search: string, newest: number, now = Date.now()): View {
  const params = new URLSearchParams(search);
  const from = Date.parse(params.get('from') ?? '');
  const to = Date.parse(params.get('to') ?? '');
  const live = Number.isNaN(to);
  const end = live ? Math.max(now, newest) + 60_000 : to;
  const view: View = {
    from: Number.isNaN(from) ? end - HOUR : from,
    to: end,
    live,
    rows: params.get('rows') === 'kind' ? 'kind' : 'namespace',
    filters: Object.fromEntries(FILTER_NAMES.map((name) => [name, params.get(name) ?? ''])) as Record<
      FilterName,
      string
    >,
    types: params
      .get('type')
      ?.split(',')
      .filter((type) => TYPES.includes(type)) ?? [...TYPES],
  };
  const kind = params.get('object.kind');
  const name = params.get('object.name');
  if (kind && name) {
    view.object = { kind, name };
    const namespace = params.get('object.namespace');
    if (namespace) view.object.namespace = namespace;
    const cluster = params.get('object.cluster');
    if (cluster) view.object.cluster = cluster;
    const seq = Number(params.get('object.seq'));
    if (seq > 0) view.object.seq = seq;
  }
  return view;
}

/** The filters as the API takes them. */
export function filterParams(view: View): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) if (view.filters[name]) params.set(name, view.filters[name]);
  if (view.types.length < TYPES.length) params.set('type', view.types.join(','));
  return params;
}

/** The window and filters as the API takes them, for the events in view (older than `before`, if given). */
export function eventsQuery(view: View, before?: number): URLSearchParams {
  const params = windowParams(view);
  params.set('limit', '100');
  if (before) params.set('before', String(before));
  return params;
}

/** The window, filters and rows as the API takes them, for a timeline `width` pixels wide. */
export function timelineQuery(view: View, width: number): URLSearchParams {
  const params = windowParams(view);
  params.set('rows', view.rows);
  params.set('buckets', String(Math.max(50, Math.min(1000, Math.floor(width / 4)))));
  return params;
}

function windowParams(view: View): URLSearchParams {
  const params = filterParams(view);
  params.set('from', new Date(view.from).toISOString());
  params.set('to', new Date(view.to).toISOString());
  return params;
}

/** The window as the page names it: `2026-03-04 10:00:00 → 2026-03-04 11:00:00 UTC (live)`. */
export function windowLabel(view: Pick<View, 'from' | 'to' | 'live'>): string {
  const at = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
  return `${at(view.from)} → ${at(view.to)} UTC${view.live ? ' (live)' : ''}`;
}

/** The window `factor` times as long (0.5 zooms in), around the same middle; no longer live. */
export function zoomed(view: Pick<View, 'from' | 'to'>, factor: number): { from: number; to: number } {
  const middle = (view.from + view.to) / 2;
  const half = ((view.to - view.from) * factor) / 2;
  return { from: middle - half, to: middle + half };
}

/** The window moved by `fraction` of its length (negative: back in time); no longer live. */
export function panned(view: Pick<View, 'from' | 'to'>, fraction: number): { from: number; to: number } {
  const shift = (view.to - view.from) * fraction;
  return { from: view.from + shift, to: view.to + shift };
}

/** The address's query string for `view` ('' for the default: the last hour, live, every event). */
export function viewSearch(view: View): string {
  const params = filterParams(view);
  if (!view.live) {
    params.set('from', new Date(view.from).toISOString());
    params.set('to', new Date(view.to).toISOString());
  } else if (view.to - view.from !== HOUR) {
    params.set('from', new Date(view.from).toISOString());
  }
  if (view.rows !== 'namespace') params.set('rows', view.rows);
  if (view.object) {
    params.set('object.kind', view.object.kind);
    if (view.object.namespace) params.set('object.namespace', view.object.namespace);
    params.set('object.name', view.object.name);
    if (view.object.cluster) params.set('object.cluster', view.object.cluster);
    if (view.object.seq) params.set('object.seq', String(view.object.seq));
  }
  return params.toString();
}

export function writeView(view: View): void {
  const search = viewSearch(view);
  history.replaceState(null, '', search ? `?${search}` : location.pathname);
}
